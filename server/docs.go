package server

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/docs"
	"github.com/labstack/echo/v4"
)

// docsCSP is the Content-Security-Policy of the API reference: scripts and styles only
// from the service itself (Swagger UI sets style attributes, hence 'unsafe-inline' for
// styles only), the contract and "Try it out" requests only to the service itself.
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// docsTypes are the content types of the files under /docs/, by extension; a file
// without an extension (LICENSE, NOTICE) is plain text.
var docsTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".png":  "image/png",
	".txt":  "text/plain; charset=utf-8",
	"":      "text/plain; charset=utf-8",
}

// docsFile is one file of the API reference, with its strong ETag and, made on first
// request, its gzip encoding.
type docsFile struct {
	name, contentType, etag string
	body                    []byte

	gzipOnce sync.Once
	gzipped  []byte // nil when gzip does not make it smaller
}

func (f *docsFile) gzip() []byte {
	f.gzipOnce.Do(func() {
		if !strings.HasPrefix(f.contentType, "text/") {
			return
		}
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		_, _ = w.Write(f.body)
		_ = w.Close()
		if b.Len() < len(f.body) {
			f.gzipped = b.Bytes()
		}
	})
	return f.gzipped
}

// registerDocs serves the API reference: GET /docs redirects to /docs/, which serves
// index.html, and /docs/assets/... the Swagger UI files, all embedded in the binary and
// unauthenticated. index.html is revalidated on every load; the assets are cached for an
// hour and revalidated with their ETag. The files are the same whatever address they are
// served from: assets/init.js points "Try it out" at the address the browser loaded the
// page from (with any path prefix of a reverse proxy), not at the contract's servers
// entry.
func registerDocs(e *echo.Echo) {
	files := map[string]*docsFile{}
	err := fs.WalkDir(docs.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(docs.FS(), name)
		if err != nil {
			return err
		}
		ct, ok := docsTypes[path.Ext(name)]
		if !ok {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(body)
		files[name] = &docsFile{name: name, contentType: ct, body: body, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil { // the files are embedded: this cannot fail at run time
		panic("server: reading the embedded docs: " + err.Error())
	}

	redirect := func(c echo.Context) error {
		// Relative, so that it also works behind a proxy that adds a path prefix.
		return c.Redirect(http.StatusMovedPermanently, "docs/")
	}
	serve := func(c echo.Context) error {
		name := c.Param("*")
		if name == "" {
			name = "index.html"
		}
		f := files[name]
		if f == nil { // only the embedded files, by exact name
			return newError(http.StatusNotFound, chargenet.CodeNotFound, "", "no documentation file at %s", c.Request().URL.Path)
		}
		h := c.Response().Header()
		h.Set("Content-Type", f.contentType)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", docsCSP)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Vary", "Accept-Encoding")
		if name == "index.html" {
			h.Set("Cache-Control", "no-cache")
		} else {
			h.Set("Cache-Control", "public, max-age=3600")
		}
		body, etag := f.body, f.etag
		if gz := f.gzip(); gz != nil && acceptsGzip(c.Request().Header.Get("Accept-Encoding")) {
			body, etag = gz, strings.TrimSuffix(f.etag, `"`)+`-gzip"`
			h.Set("Content-Encoding", "gzip")
		}
		h.Set("ETag", etag)
		// ServeContent answers HEAD, If-None-Match (304) and Range from the headers above.
		http.ServeContent(c.Response(), c.Request(), "", time.Time{}, bytes.NewReader(body))
		return nil
	}
	e.GET("/docs", redirect)
	e.HEAD("/docs", redirect)
	e.GET("/docs/*", serve)
	e.HEAD("/docs/*", serve)
}

// acceptsGzip reports whether an Accept-Encoding header value allows gzip.
func acceptsGzip(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		for _, param := range strings.Split(params, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(param), "=")
			if strings.EqualFold(strings.TrimSpace(name), "q") {
				q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
				return err == nil && q > 0
			}
		}
		return true
	}
	return false
}
