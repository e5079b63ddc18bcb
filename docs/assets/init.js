// Starts Swagger UI on the contract that the service itself serves at /openapi.yaml.
// Ours, not vendored. It lives in a file so that the page needs no inline script: /docs is
// served with a Content-Security-Policy of script-src 'self'.
(function () {
  "use strict";
  // Relative to /docs/, so the page also works behind a reverse proxy under a path prefix.
  var specUrl = new URL("../openapi.yaml", document.baseURI).href;
  // The API is served where this page is, one level up from /docs/: the origin that served
  // the page and any path prefix a reverse proxy adds, without the trailing slash.
  var apiBase = new URL("..", document.baseURI).href.replace(/\/$/, "");

  // thisService replaces the contract's servers list (it names the default local address,
  // http://127.0.0.1:8080) with apiBase as the contract is loaded, so that the Servers
  // menu, "Try it out" and the curl command it shows all address the service that served
  // this page. The Content-Security-Policy (connect-src 'self') refuses any other target.
  function thisService() {
    return {
      statePlugins: {
        spec: {
          wrapActions: {
            updateJsonSpec: function (updateJsonSpec) {
              return function (spec) {
                if (spec && typeof spec === "object" && !Array.isArray(spec)) {
                  spec = Object.assign({}, spec, {
                    servers: [{ url: apiBase, description: "This service (the address this page was loaded from)" }],
                  });
                }
                return updateJsonSpec(spec);
              };
            },
          },
        },
      },
    };
  }

  window.ui = SwaggerUIBundle({
    url: specUrl,
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    plugins: [thisService],
    layout: "BaseLayout",
    deepLinking: true,
    docExpansion: "list",
    defaultModelsExpandDepth: 1,
    displayOperationId: true,
    displayRequestDuration: true,
    // No request to validator.swagger.io or any other host.
    validatorUrl: null,
  });
})();
