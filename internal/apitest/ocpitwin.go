package apitest

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"regexp"
	"strings"
)

// restToOCPI maps REST paths onto the OCPI paths of the same kind of object; any other
// path lands under /ocpi/2.2.1, where nothing is served.
var restToOCPI = []struct {
	from *regexp.Regexp
	to   string
}{
	{regexp.MustCompile(`^/v2/evses/([^/?]*)/connectors/([^/?]*)`), "/ocpi/2.2.1/locations/LOC-0001/$1/$2"},
	{regexp.MustCompile(`^/v2/evses/([^/?]*)(/connectors)?`), "/ocpi/2.2.1/locations/LOC-0001/$1"},
	{regexp.MustCompile(`^/(v2/evses|v1/locations)(\?|$)`), "/ocpi/2.2.1/locations$2"},
	{regexp.MustCompile(`^/v1/locations/`), "/ocpi/2.2.1/locations/"},
	{regexp.MustCompile(`^/`), "/ocpi/2.2.1/"},
}

// OCPITwins returns the requests the OCPI interface receives for req, a request to the
// REST API with body: the same method, query, headers and body, byte for byte, at the
// OCPI path of the same kind of object (an EVSE of LOC-0001 for an EVSE), with the REST
// key restKey replaced by the partner's credentials token tokenC in Base64 and a
// "Bearer" scheme by "Token". A request with a body has a second twin: the body,
// unchanged, POSTed to the credentials module with the registration token tokenA, since
// that module's is the only body OCPI reads. Both are for the same host as req.
func OCPITwins(req *http.Request, body []byte, restKey, tokenC, tokenA string) []*http.Request {
	target := req.URL.EscapedPath()
	if req.URL.RawQuery != "" || req.URL.ForceQuery {
		target += "?" + req.URL.RawQuery
	}
	for _, m := range restToOCPI {
		if m.from.MatchString(target) {
			target = m.from.ReplaceAllString(target, m.to)
			break
		}
	}
	twin := func(method, target, token string) *http.Request {
		enc := base64.StdEncoding.EncodeToString([]byte(token))
		if restKey != "" {
			target = strings.ReplaceAll(target, restKey, enc)
		}
		r, err := http.NewRequestWithContext(req.Context(), method, target, bytes.NewReader(body))
		if err != nil {
			return nil
		}
		r.URL.Scheme, r.URL.Host, r.Host = req.URL.Scheme, req.URL.Host, req.Host
		r.Header = req.Header.Clone()
		if r.Header == nil {
			r.Header = http.Header{}
		}
		for i, v := range r.Header.Values("Authorization") {
			if restKey != "" {
				v = strings.ReplaceAll(v, restKey, enc)
			}
			r.Header["Authorization"][i] = strings.ReplaceAll(v, "Bearer", "Token")
		}
		return r
	}
	out := []*http.Request{twin(req.Method, target, tokenC)}
	if len(body) > 0 || req.Header.Get("Content-Type") != "" {
		out = append(out, twin(http.MethodPost, "/ocpi/2.2.1/credentials", tokenA))
	}
	var valid []*http.Request
	for _, r := range out {
		if r != nil {
			valid = append(valid, r)
		}
	}
	return valid
}

// HeaderValue reports whether s can be sent as a header value: no control characters
// but tab. Fuzzers use it to skip the values no client could send.
func HeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
