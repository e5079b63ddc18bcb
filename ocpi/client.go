package ocpi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	ocpigen "github.com/chargenet/chargenet/gen/ocpi"
	"github.com/chargenet/chargenet/internal/outbound"
)

// The prefixes of the partner operations' paths in the contract, each standing for a
// URL the partner published.
const (
	partnerVersions       = "/partner/versions"
	partnerVersionDetails = "/partner/version-details"
	partnerCredentials    = "/partner/credentials"
	partnerLocations      = "/partner/locations"
)

// partnerServer is the server URL the generated client is built with: its requests go
// to partnerDoer, which replaces it.
const partnerServer = "http://partner.invalid"

// maxAnswer bounds what chargenet reads of a partner's answer.
const maxAnswer = 1 << 20

// defaultClient is the handshake's client when Config has none.
func defaultClient(allowInsecure bool) *http.Client {
	return outbound.Client(10*time.Second, 4, allowInsecure)
}

// partnerDoer sends the requests of the generated client to the URLs the partner
// published: a request to a /partner/... path goes to the URL its prefix stands for,
// followed by the rest of the path and the query. It reads at most maxAnswer bytes of
// an answer.
type partnerDoer struct {
	client *http.Client
	urls   map[string]string // path prefix → the partner's URL
}

// Do implements ocpigen.HttpRequestDoer.
func (d partnerDoer) Do(req *http.Request) (*http.Response, error) {
	path := req.URL.EscapedPath()
	for prefix, base := range d.urls {
		rest, ok := strings.CutPrefix(path, prefix)
		if !ok || rest != "" && !strings.HasPrefix(rest, "/") {
			continue
		}
		u, err := url.Parse(strings.TrimSuffix(base, "/") + rest)
		if err != nil {
			return nil, fmt.Errorf("partner URL %q: %w", base, err)
		}
		if req.URL.RawQuery != "" {
			if u.RawQuery != "" {
				u.RawQuery += "&"
			}
			u.RawQuery += req.URL.RawQuery
		}
		req.URL, req.Host = u, u.Host
		resp, err := d.client.Do(req)
		if err != nil {
			return nil, outbound.Describe(err)
		}
		resp.Body = &limitedBody{r: io.LimitReader(resp.Body, maxAnswer+1), c: resp.Body}
		return resp, nil
	}
	return nil, fmt.Errorf("no partner URL for %s", path)
}

// limitedBody fails a read past maxAnswer bytes.
type limitedBody struct {
	r io.Reader
	c io.Closer
	n int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.n += int64(n); b.n > maxAnswer {
		return n, errors.New("answer larger than 1 MiB")
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.c.Close() }

// partnerClient returns the generated client sending to urls with token.
func partnerClient(client *http.Client, token string, urls map[string]string) *ocpigen.Client {
	c, _ := ocpigen.NewClient(partnerServer, ocpigen.WithHTTPClient(partnerDoer{client: client, urls: urls}),
		ocpigen.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", AuthorizationHeader(token))
			req.Header.Set("User-Agent", "chargenet-ocpi/1")
			return nil
		})) // NewClient fails only on a bad server URL, and partnerServer is good
	return c
}

// AuthorizationHeader returns the Authorization header value that carries token:
// "Token " and the token in Base64, as OCPI 2.2.1 requires.
func AuthorizationHeader(token string) string {
	return "Token " + base64.StdEncoding.EncodeToString([]byte(token))
}

// answer returns the reader of a partner's answer to a call of the generated client:
// its HTTP status and the OCPI envelope, with the envelope's data decoded into data
// when data is not nil. The reader returns an error for a transport failure, an answer
// that is not the envelope, and an OCPI status outside 1000-1999 or an HTTP status
// outside 200-299 (saying which).
func answer(data any) func(*http.Response, error) (int, error) {
	return func(resp *http.Response, err error) (int, error) { return readAnswer(resp, err, data) }
}

func readAnswer(resp *http.Response, err error, data any) (int, error) {
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("reading the answer: %w", err)
	}
	var env struct {
		Data          json.RawMessage `json:"data"`
		StatusCode    *int            `json:"status_code"`
		StatusMessage string          `json:"status_message"`
	}
	if json.Unmarshal(body, &env) != nil || env.StatusCode == nil {
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return resp.StatusCode, &partnerError{HTTP: resp.StatusCode}
		}
		return resp.StatusCode, fmt.Errorf("HTTP %d, but the answer is not an OCPI response", resp.StatusCode)
	}
	code := *env.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 || code < 1000 || code > 1999 {
		return resp.StatusCode, &partnerError{HTTP: resp.StatusCode, Code: code, Message: clip(env.StatusMessage, 200)}
	}
	if data != nil {
		if len(env.Data) == 0 || string(env.Data) == "null" {
			return resp.StatusCode, errors.New("the answer holds no data")
		}
		if err := json.Unmarshal(env.Data, data); err != nil {
			return resp.StatusCode, fmt.Errorf("the answer's data is not what OCPI says: %w", err)
		}
	}
	return resp.StatusCode, nil
}

// partnerError is a partner's refusal: its HTTP status, OCPI status code and message.
type partnerError struct {
	HTTP, Code int
	Message    string
}

func (e *partnerError) Error() string {
	if e.Code == 0 {
		return fmt.Sprintf("HTTP %d without an OCPI answer", e.HTTP)
	}
	msg := fmt.Sprintf("HTTP %d, OCPI status %d", e.HTTP, e.Code)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// unknownObject reports whether err is a partner saying that the object is unknown
// (HTTP 404 or OCPI 2003).
func unknownObject(err error) bool {
	var pe *partnerError
	return errors.As(err, &pe) && (pe.HTTP == http.StatusNotFound || pe.Code == StatusUnknownObject)
}

// clip cuts s to n bytes at most, for messages that quote a partner.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
