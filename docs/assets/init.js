// Starts Swagger UI on the contract that the service itself serves at /openapi.yaml.
// Ours, not vendored. It lives in a file so that the page needs no inline script: /docs is
// served with a Content-Security-Policy of script-src 'self'.
(function () {
  "use strict";
  // Relative to /docs/, so the page also works behind a reverse proxy under a path prefix.
  var specUrl = new URL("../openapi.yaml", document.baseURI).href;
  window.ui = SwaggerUIBundle({
    url: specUrl,
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    docExpansion: "list",
    defaultModelsExpandDepth: 1,
    displayOperationId: true,
    displayRequestDuration: true,
    // No request to validator.swagger.io or any other host.
    validatorUrl: null,
    // "Try it out" goes to the service that serves this page, whatever the contract's
    // servers list says (it names the default local address, http://127.0.0.1:8080).
    requestInterceptor: function (req) {
      var u = new URL(req.url, document.baseURI);
      if (u.origin !== window.location.origin) {
        req.url = window.location.origin + u.pathname + u.search;
      }
      return req;
    },
  });
})();
