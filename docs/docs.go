// Package docs holds the API reference page that the service serves at /docs/: index.html
// and assets/init.js, which point Swagger UI at the contract served at /openapi.yaml, and
// the Swagger UI files vendored from the npm package swagger-ui-dist (assets/README.md).
// Everything is embedded, so the page needs nothing from another host at run time.
package docs

import (
	"embed"
	"io/fs"
)

// SwaggerUIVersion is the version of swagger-ui-dist vendored in assets/.
const SwaggerUIVersion = "5.35.0"

//go:embed index.html assets/*.js assets/*.css assets/*.png assets/*.txt assets/LICENSE assets/NOTICE
var files embed.FS

// FS returns the page's files: index.html at the root, the rest under assets/.
func FS() fs.FS { return files }
