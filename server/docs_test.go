package server_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chargenet/chargenet/docs"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/internal/apitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// getDocs sends an unauthenticated request for a /docs path and checks the exchange with
// apitest.Check: paths under /docs/ are outside the contract, so a response must carry
// X-Request-Id and an error must be a 404/405 with an Error body.
func getDocs(t *testing.T, v *env, method, path string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	v.e.ServeHTTP(rec, req)
	apitest.Check(t, req, rec.Code, rec.Header(), rec.Body.Bytes())
	return rec
}

func embedded(t *testing.T, name string) []byte {
	t.Helper()
	b, err := fs.ReadFile(docs.FS(), name)
	require.NoError(t, err)
	return b
}

func TestDocsRedirect(t *testing.T) {
	v := newEnv(t, true)
	rec := v.do(http.MethodGet, "/docs", "", "Authorization", "")
	assert.Equal(t, http.StatusMovedPermanently, rec.Code)
	base, err := url.Parse("http://127.0.0.1:8080/docs")
	require.NoError(t, err)
	target, err := base.Parse(rec.Header().Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, "/docs/", target.Path, "Location %q", rec.Header().Get("Location"))
}

func TestDocsPage(t *testing.T) {
	v := newEnv(t, true)
	rec := getDocs(t, v, http.MethodGet, "/docs/")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "text/html; charset=utf-8", rec.Header().Get("Content-Type"))
	assert.Equal(t, "no-cache", rec.Header().Get("Cache-Control"))
	assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
	csp := rec.Header().Get("Content-Security-Policy")
	assert.Contains(t, csp, "script-src 'self'")
	assert.NotContains(t, csp, "unsafe-eval")
	assert.NotEmpty(t, rec.Header().Get("ETag"))
	page := rec.Body.String()
	assert.Equal(t, string(embedded(t, "index.html")), page)

	// No inline script: every <script> loads a file, so script-src 'self' suffices.
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(page, -1) {
		assert.Contains(t, tag, `src="`, "inline script in index.html: %s", tag)
	}
	// Every file the page references is served, from a relative path, with its type.
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1)
	want := map[string]string{
		"assets/swagger-ui-bundle.js": "text/javascript; charset=utf-8",
		"assets/init.js":              "text/javascript; charset=utf-8",
		"assets/swagger-ui.css":       "text/css; charset=utf-8",
		"assets/docs.css":             "text/css; charset=utf-8",
		"assets/favicon-32x32.png":    "image/png",
	}
	seen := map[string]bool{}
	for _, m := range refs {
		ref := m[1]
		if ref == "../openapi.yaml" {
			continue
		}
		seen[ref] = true
		assert.False(t, strings.Contains(ref, "//") || strings.HasPrefix(ref, "/"), "index.html loads %s from another place", ref)
		ct, ok := want[ref]
		if !assert.True(t, ok, "index.html references an unexpected file %s", ref) {
			continue
		}
		rec := getDocs(t, v, http.MethodGet, "/docs/"+ref)
		if assert.Equal(t, http.StatusOK, rec.Code, ref) {
			assert.Equal(t, ct, rec.Header().Get("Content-Type"), ref)
			assert.Equal(t, "public, max-age=3600", rec.Header().Get("Cache-Control"), ref)
			assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"), ref)
			assert.True(t, bytes.Equal(embedded(t, ref), rec.Body.Bytes()), "%s: body differs from the embedded file", ref)
		}
	}
	for ref := range want {
		assert.True(t, seen[ref], "index.html does not reference %s", ref)
	}

	// The page points Swagger UI at the contract the service serves.
	assert.Contains(t, string(embedded(t, "assets/init.js")), `"../openapi.yaml"`)
	spec := v.do(http.MethodGet, "/openapi.yaml", "", "Authorization", "")
	assert.Equal(t, http.StatusOK, spec.Code)
}

// TestDocsTryItOutTargetsThePageOrigin checks how "Try it out" finds the service: the
// contract's servers list names one fixed address, so the page must not use it. The page
// and its script are the same bytes whatever address they are served from (nothing of
// the request's Host is baked in), the script names no address of its own and replaces
// the contract's servers with the base of the address the page was loaded from (one
// level above /docs/), and the CSP lets the page connect to that origin only.
// scripts/docs-check.sh proves it in Chromium: it presses "Try it out" on a page served
// from a random port, directly and behind a proxy under a path prefix.
func TestDocsTryItOutTargetsThePageOrigin(t *testing.T) {
	doc, err := gen.GetSpec()
	require.NoError(t, err)
	require.NotEmpty(t, doc.Servers)
	fixed := doc.Servers[0].URL
	require.Equal(t, "http://127.0.0.1:8080", fixed, "the contract's servers entry this test is about")

	v := newEnv(t, true)
	for _, name := range []string{"/docs/", "/docs/assets/init.js"} {
		var bodies []string
		for _, host := range []string{"127.0.0.1:8080", "127.0.0.1:41234", "api.example.com", "[::1]:9000"} {
			req := httptest.NewRequest(http.MethodGet, name, nil)
			req.Host = host
			rec := httptest.NewRecorder()
			v.e.ServeHTTP(rec, req)
			apitest.Check(t, req, rec.Code, rec.Header(), rec.Body.Bytes())
			require.Equal(t, http.StatusOK, rec.Code, "%s from %s", name, host)
			assert.Contains(t, rec.Header().Get("Content-Security-Policy"), "connect-src 'self';", "%s from %s", name, host)
			bodies = append(bodies, rec.Body.String())
		}
		for i := range bodies {
			assert.Equal(t, bodies[0], bodies[i], "%s depends on the Host it is served to", name)
		}
	}

	script := string(embedded(t, "assets/init.js"))
	code := regexp.MustCompile(`(?m)^\s*//.*$`).ReplaceAllString(script, "") // comments may name the address
	assert.NotContains(t, code, fixed, "init.js sends requests to the contract's fixed address")
	assert.NotRegexp(t, `https?://`, code, "init.js names an absolute address")
	// The API base is computed from the page's own address: one level above /docs/.
	assert.Contains(t, code, `new URL("..", document.baseURI)`)
	// It replaces the contract's servers list as the contract is loaded, by a plugin
	// that Swagger UI is started with.
	assert.Regexp(t, `updateJsonSpec: function \(updateJsonSpec\) \{[\s\S]*servers: \[\{ url: apiBase\b`, code)
	assert.Regexp(t, `plugins: \[thisService\]`, code)
	assert.NotContains(t, code, "requestInterceptor", "requests are not rewritten behind the page's back: the Servers menu and curl show the real target")
}

func TestDocsVendoredSwaggerUI(t *testing.T) {
	bundle := embedded(t, "assets/swagger-ui-bundle.js")
	assert.Contains(t, string(bundle), `PACKAGE_VERSION:"`+docs.SwaggerUIVersion+`"`, "the vendored bundle is not swagger-ui-dist %s", docs.SwaggerUIVersion)
	assert.Contains(t, string(embedded(t, "assets/LICENSE")), "Apache License")
	assert.NotEmpty(t, embedded(t, "assets/NOTICE"))

	v := newEnv(t, true)
	for name, ct := range map[string]string{
		"assets/LICENSE": "text/plain; charset=utf-8",
		"assets/swagger-ui-bundle.js.LICENSE.txt": "text/plain; charset=utf-8",
	} {
		rec := getDocs(t, v, http.MethodGet, "/docs/"+name)
		assert.Equal(t, http.StatusOK, rec.Code, name)
		assert.Equal(t, ct, rec.Header().Get("Content-Type"), name)
	}
}

func TestDocsCaching(t *testing.T) {
	v := newEnv(t, true)
	for _, p := range []string{"/docs/", "/docs/assets/swagger-ui-bundle.js"} {
		first := getDocs(t, v, http.MethodGet, p)
		require.Equal(t, http.StatusOK, first.Code, p)
		etag := first.Header().Get("ETag")
		require.Regexp(t, `^"[0-9a-f]+"$`, etag, p)
		again := getDocs(t, v, http.MethodGet, p, "If-None-Match", etag)
		assert.Equal(t, http.StatusNotModified, again.Code, p)
		assert.Empty(t, again.Body.Bytes(), p)
		other := getDocs(t, v, http.MethodGet, p, "If-None-Match", `"other"`)
		assert.Equal(t, http.StatusOK, other.Code, p)
	}
	head := getDocs(t, v, http.MethodHead, "/docs/assets/swagger-ui.css")
	assert.Equal(t, http.StatusOK, head.Code)
	assert.Equal(t, "text/css; charset=utf-8", head.Header().Get("Content-Type"))
	assert.Empty(t, head.Body.Bytes())
}

func TestDocsGzip(t *testing.T) {
	v := newEnv(t, true)
	plain := getDocs(t, v, http.MethodGet, "/docs/assets/swagger-ui-bundle.js")
	require.Equal(t, http.StatusOK, plain.Code)
	assert.Empty(t, plain.Header().Get("Content-Encoding"))
	assert.Equal(t, "Accept-Encoding", plain.Header().Get("Vary"))

	rec := getDocs(t, v, http.MethodGet, "/docs/assets/swagger-ui-bundle.js", "Accept-Encoding", "br, gzip;q=0.8")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "gzip", rec.Header().Get("Content-Encoding"))
	assert.Equal(t, "text/javascript; charset=utf-8", rec.Header().Get("Content-Type"))
	assert.NotEqual(t, plain.Header().Get("ETag"), rec.Header().Get("ETag"), "each encoding has its own ETag")
	assert.Less(t, rec.Body.Len(), plain.Body.Len()/2)
	zr, err := gzip.NewReader(rec.Body)
	require.NoError(t, err)
	body, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(plain.Body.Bytes(), body), "gzip body decodes to the file")

	for accept, gz := range map[string]bool{
		"gzip":             true,
		"deflate, GZIP":    true,
		"gzip; q=0.5":      true,
		"gzip;q=0":         false,
		"gzip; q=0.000":    false,
		"br, deflate":      false,
		"x-gzip-like, br":  false,
		"gzip;q=nonsense":  false,
		"identity, gzip;q": false,
	} {
		rec := getDocs(t, v, http.MethodGet, "/docs/assets/init.js", "Accept-Encoding", accept)
		got := rec.Header().Get("Content-Encoding") == "gzip"
		assert.Equal(t, gz, got, "Accept-Encoding: %s", accept)
	}
	png := getDocs(t, v, http.MethodGet, "/docs/assets/favicon-32x32.png", "Accept-Encoding", "gzip")
	assert.Empty(t, png.Header().Get("Content-Encoding"), "images are not recompressed")
}

func TestDocsUnknownFiles(t *testing.T) {
	v := newEnv(t, true)
	for _, p := range []string{
		"/docs/nope.js",
		"/docs/assets/",
		"/docs/assets/README.md", // in the repository, not embedded
		"/docs/operating.md",     // a guide beside the page, not embedded
		"/docs/docs.go",
		"/docs/assets/../docs.go",
		"/docs/assets/%2e%2e/docs.go",
	} {
		rec := getDocs(t, v, http.MethodGet, p)
		assertError(t, rec, http.StatusNotFound, "not_found", "")
		assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"), p)
	}
	rec := getDocs(t, v, http.MethodPost, "/docs/")
	assert.Contains(t, []int{http.StatusMethodNotAllowed, http.StatusNotFound}, rec.Code)
}
