// Package ocpitest is an eMSP simulator: an OCPI 2.2.1 partner with a Locations
// RECEIVER, for tests and benchmarks. It registers with chargenet in either direction,
// pulls chargenet's Locations page by page through Link, and keeps the Locations
// chargenet pushes to it as a receiver would, so that a test can compare what it holds
// with the inventory. Every request chargenet makes to it and every answer chargenet
// gives it are checked against the OCPI contract; the violations are kept (Violations).
//
// It publishes its endpoints at the contract's /partner paths (versions at
// /partner/versions, and so on), so that chargenet's requests validate unchanged.
package ocpitest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	ocpigen "github.com/chargenet/chargenet/gen/ocpi"
	"github.com/chargenet/chargenet/internal/apitest"
)

// Failure is how the simulator answers pushes (requests to its Locations receiver).
type Failure int

// Failures.
const (
	Healthy   Failure = iota // takes every valid push
	Refuse5xx                // answers 503 with status_code 3000
	Garbage                  // answers 200 with a body that is not JSON
	Slow                     // answers after SlowFor
	Down                     // closes the connection without an answer
)

// Push is a request chargenet made to the Locations receiver.
type Push struct {
	Method, Path string
	At           time.Time
	Body         []byte
}

// EMSP is the simulated partner. Create it with New; Close it at the end.
type EMSP struct {
	CountryCode, PartyID string
	// SlowFor is how long a Slow answer takes.
	SlowFor time.Duration

	srv    *httptest.Server
	client *http.Client

	mu          sync.Mutex
	accepted    map[string]bool // tokens chargenet may call it with
	tokenA      string          // its registration token, until chargenet registers
	cnToken     string          // the token it calls chargenet with
	cnVersions  string
	cnEndpoints map[string]string // module → URL of chargenet's 2.2.1 endpoints
	locations   map[string]*ocpigen.Location
	pushes      []Push
	violations  []string
	failure     Failure
	receiver    bool
}

// New starts the simulator with party NL EXA; with receiver, its details list a
// Locations RECEIVER.
func New(receiver bool) *EMSP {
	e := &EMSP{CountryCode: "NL", PartyID: "EXA", SlowFor: 3 * time.Second, accepted: map[string]bool{},
		locations: map[string]*ocpigen.Location{}, receiver: receiver, cnEndpoints: map[string]string{}}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	e.client = &http.Client{Timeout: 30 * time.Second, Transport: checking{e: e, base: http.DefaultTransport}}
	return e
}

// Close stops the simulator.
func (e *EMSP) Close() { e.srv.CloseClientConnections(); e.srv.Close() }

// URL returns the simulator's base URL.
func (e *EMSP) URL() string { return e.srv.URL }

// VersionsURL returns the URL of its versions list.
func (e *EMSP) VersionsURL() string { return e.srv.URL + "/partner/versions" }

// IssueToken returns a new registration token for chargenet (the partner's token A),
// for `chargenet ocpi connect`.
func (e *EMSP) IssueToken() string {
	t := newToken()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tokenA = t
	e.accepted[t] = true
	return t
}

// SetFailure sets how pushes are answered from now on.
func (e *EMSP) SetFailure(f Failure) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failure = f
}

// Violations returns the contract violations seen: requests chargenet sent and
// answers it gave that the OCPI contract does not describe.
func (e *EMSP) Violations() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.violations...)
}

func (e *EMSP) violation(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.violations = append(e.violations, fmt.Sprintf(format, args...))
}

// Pushes returns the pushes received (only those taken while Healthy or Slow).
func (e *EMSP) Pushes() []Push {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Push(nil), e.pushes...)
}

// Locations returns what the receiver holds, by Location id.
func (e *EMSP) Locations() map[string]ocpigen.Location {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]ocpigen.Location, len(e.locations))
	for _, l := range e.locations {
		out[l.Id] = clone(*l)
	}
	return out
}

// Registered reports whether chargenet and the simulator hold each other's tokens.
func (e *EMSP) Registered() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cnToken != "" && e.cnEndpoints["locations"] != ""
}

// Token returns the token the simulator calls chargenet with.
func (e *EMSP) Token() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cnToken
}

// clone deep-copies a Location through JSON.
func clone(l ocpigen.Location) ocpigen.Location {
	b, _ := json.Marshal(l)
	var out ocpigen.Location
	_ = json.Unmarshal(b, &out)
	return out
}

func newToken() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "emsp-" + hex.EncodeToString(b[:])
}

func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checking is the simulator's transport to chargenet: every answer is checked against
// the OCPI contract.
type checking struct {
	e    *EMSP
	base http.RoundTripper
}

func (c checking) RoundTrip(req *http.Request) (*http.Response, error) {
	probe := req.Clone(req.Context())
	probe.Body = http.NoBody
	res, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	if cerr := apitest.CheckOCPIExchange(probe, res.StatusCode, res.Header, body); cerr != nil {
		c.e.violation("chargenet answered: %v", cerr)
	}
	return res, nil
}

// Call makes a request to chargenet with the simulator's token (token, when not
// empty) and returns the HTTP status, the headers and the body.
func (e *EMSP) Call(ctx context.Context, method, u, token string, body any) (int, http.Header, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if token == "" {
		token = e.Token()
	}
	req.Header.Set("Authorization", "Token "+base64.StdEncoding.EncodeToString([]byte(token)))
	req.Header.Set("X-Request-ID", requestID())
	req.Header.Set("X-Correlation-ID", requestID())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := e.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b, err
}

// envelope is an OCPI answer.
type envelope struct {
	Data          json.RawMessage `json:"data"`
	StatusCode    int             `json:"status_code"`
	StatusMessage string          `json:"status_message"`
}

// get reads the data of a successful GET into out.
func (e *EMSP) get(ctx context.Context, u, token string, out any) (http.Header, error) {
	status, h, body, err := e.Call(ctx, http.MethodGet, u, token, nil)
	if err != nil {
		return nil, err
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || status != http.StatusOK || env.StatusCode != 1000 {
		return h, fmt.Errorf("GET %s: HTTP %d: %s", u, status, body)
	}
	return h, json.Unmarshal(env.Data, out)
}

// Register is the handshake in the direction OCPI calls registration: with the
// registration token chargenet issued (`chargenet ocpi register`), the simulator reads
// chargenet's versions and details, POSTs its credentials holding a new token for
// chargenet, and keeps the token chargenet answers with.
func (e *EMSP) Register(ctx context.Context, versionsURL, tokenA string) error {
	if err := e.discover(ctx, versionsURL, tokenA); err != nil {
		return err
	}
	token := newToken()
	e.mu.Lock()
	e.accepted[token] = true
	creds := e.credentials(token)
	credsURL := e.cnEndpoints["credentials"]
	e.mu.Unlock()
	status, _, body, err := e.Call(ctx, http.MethodPost, credsURL, tokenA, creds)
	if err != nil {
		return err
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || status != http.StatusOK || env.StatusCode != 1000 {
		return fmt.Errorf("POST %s: HTTP %d: %s", credsURL, status, body)
	}
	var theirs ocpigen.Credentials
	if err := json.Unmarshal(env.Data, &theirs); err != nil {
		return err
	}
	e.mu.Lock()
	e.cnToken = theirs.Token
	e.mu.Unlock()
	return nil
}

// UpdateCredentials PUTs new credentials (a new token for chargenet) and keeps the
// token chargenet answers with.
func (e *EMSP) UpdateCredentials(ctx context.Context) error {
	token := newToken()
	e.mu.Lock()
	old := e.accepted
	e.accepted = map[string]bool{token: true}
	creds := e.credentials(token)
	credsURL := e.cnEndpoints["credentials"]
	e.mu.Unlock()
	status, _, body, err := e.Call(ctx, http.MethodPut, credsURL, "", creds)
	var env envelope
	if err == nil && (json.Unmarshal(body, &env) != nil || status != http.StatusOK || env.StatusCode != 1000) {
		err = fmt.Errorf("PUT %s: HTTP %d: %s", credsURL, status, body)
	}
	if err != nil {
		e.mu.Lock()
		e.accepted = old
		e.mu.Unlock()
		return err
	}
	var theirs ocpigen.Credentials
	if err := json.Unmarshal(env.Data, &theirs); err != nil {
		return err
	}
	e.mu.Lock()
	e.cnToken = theirs.Token
	e.mu.Unlock()
	return nil
}

// discover reads chargenet's versions and 2.2.1 endpoints with token.
func (e *EMSP) discover(ctx context.Context, versionsURL, token string) error {
	var versions []ocpigen.Version
	if _, err := e.get(ctx, versionsURL, token, &versions); err != nil {
		return err
	}
	var details ocpigen.VersionDetails
	for _, v := range versions {
		if v.Version == ocpigen.VersionNumberN221 {
			if _, err := e.get(ctx, v.Url, token, &details); err != nil {
				return err
			}
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cnVersions = versionsURL
	for _, ep := range details.Endpoints {
		e.cnEndpoints[string(ep.Identifier)] = ep.Url
	}
	if e.cnEndpoints["credentials"] == "" || e.cnEndpoints["locations"] == "" {
		return fmt.Errorf("chargenet's details lack credentials or locations: %+v", details)
	}
	return nil
}

// CredentialsFor returns the simulator's credentials holding token, for requests a
// test builds itself.
func (e *EMSP) CredentialsFor(token string) ocpigen.Credentials {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.credentials(token)
}

// credentials returns the simulator's credentials holding token; e.mu is held.
func (e *EMSP) credentials(token string) ocpigen.Credentials {
	return ocpigen.Credentials{Token: token, Url: e.VersionsURL(), Roles: []ocpigen.CredentialsRole{{
		Role: ocpigen.RoleEMSP, CountryCode: e.CountryCode, PartyId: e.PartyID,
		BusinessDetails: ocpigen.BusinessDetails{Name: "Example eMSP"}}}}
}

// Page is one page of a pull.
type Page struct {
	URL        string
	Locations  []ocpigen.Location
	TotalCount int
	Limit      int
	Link       string
}

// linkRe reads a Link header's next URL.
var linkRe = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

// Pull reads chargenet's Locations list with query (date_from, date_to, limit, offset),
// following Link until it is absent, and returns every page.
func (e *EMSP) Pull(ctx context.Context, query url.Values) ([]Page, error) {
	e.mu.Lock()
	u := e.cnEndpoints["locations"]
	e.mu.Unlock()
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var pages []Page
	for u != "" {
		var locs []ocpigen.Location
		h, err := e.get(ctx, u, "", &locs)
		if err != nil {
			return pages, err
		}
		p := Page{URL: u, Locations: locs}
		p.TotalCount, _ = strconv.Atoi(h.Get("X-Total-Count"))
		p.Limit, _ = strconv.Atoi(h.Get("X-Limit"))
		u = ""
		if l := h.Get("Link"); l != "" {
			m := linkRe.FindStringSubmatch(l)
			if m == nil {
				return pages, fmt.Errorf("malformed Link %q", l)
			}
			p.Link, u = m[1], m[1]
		}
		pages = append(pages, p)
		if len(pages) > 100000 {
			return pages, errors.New("more than 100,000 pages: Link does not end")
		}
	}
	return pages, nil
}

// LocationsURL returns chargenet's Locations endpoint, as its details list it.
func (e *EMSP) LocationsURL() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cnEndpoints["locations"]
}

// WaitFor polls cond every 10 ms until it is true or timeout passes, and reports
// whether it became true.
func (e *EMSP) WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// serve answers chargenet's requests.
func (e *EMSP) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		e.reply(w, http.StatusBadRequest, 2001, "unreadable body", nil)
		return
	}
	if err := apitest.CheckOCPIRequest(r, body); err != nil {
		e.violation("chargenet sent: %v", err)
	}
	token := ""
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Token ") {
		if b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Token ")); err == nil {
			token = string(b)
		}
	}
	e.mu.Lock()
	known := e.accepted[token]
	failure := e.failure
	e.mu.Unlock()
	if !known {
		e.reply(w, http.StatusUnauthorized, 2000, "unknown token", nil)
		return
	}
	switch p := r.URL.Path; {
	case p == "/partner/versions" && r.Method == http.MethodGet:
		e.reply(w, http.StatusOK, 1000, "", []ocpigen.Version{{Version: ocpigen.VersionNumberN221, Url: e.srv.URL + "/partner/version-details"}})
	case p == "/partner/version-details" && r.Method == http.MethodGet:
		eps := []ocpigen.Endpoint{{Identifier: ocpigen.ModuleIDCredentials, Role: ocpigen.InterfaceRoleSENDER, Url: e.srv.URL + "/partner/credentials"}}
		if e.receiver {
			eps = append(eps, ocpigen.Endpoint{Identifier: ocpigen.ModuleIDLocations, Role: ocpigen.InterfaceRoleRECEIVER, Url: e.srv.URL + "/partner/locations"})
		}
		e.reply(w, http.StatusOK, 1000, "", ocpigen.VersionDetails{Version: ocpigen.VersionNumberN221, Endpoints: eps})
	case p == "/partner/credentials":
		e.serveCredentials(w, r, token, body)
	case strings.HasPrefix(p, "/partner/locations/"):
		e.serveLocations(w, r, failure, body)
	default:
		e.reply(w, http.StatusNotFound, 2000, "no such endpoint", nil)
	}
}

// serveCredentials is the simulator's credentials module (chargenet calls it when it
// connects, and when it unregisters).
func (e *EMSP) serveCredentials(w http.ResponseWriter, r *http.Request, token string, body []byte) {
	switch r.Method {
	case http.MethodPost:
		var theirs ocpigen.Credentials
		if err := json.Unmarshal(body, &theirs); err != nil {
			e.reply(w, http.StatusBadRequest, 2001, err.Error(), nil)
			return
		}
		e.mu.Lock()
		if token != e.tokenA {
			e.mu.Unlock()
			e.reply(w, http.StatusMethodNotAllowed, 2000, "already registered", nil)
			return
		}
		e.cnToken = theirs.Token
		e.mu.Unlock()
		// As OCPI's Receiver: read the sender's versions with the token it gave.
		if err := e.discover(r.Context(), theirs.Url, theirs.Token); err != nil {
			e.reply(w, http.StatusOK, 3001, err.Error(), nil)
			return
		}
		c := newToken()
		e.mu.Lock()
		delete(e.accepted, e.tokenA)
		e.tokenA = ""
		e.accepted[c] = true
		mine := e.credentials(c)
		e.mu.Unlock()
		e.reply(w, http.StatusOK, 1000, "", mine)
	case http.MethodDelete:
		e.mu.Lock()
		e.accepted, e.cnToken = map[string]bool{}, ""
		e.mu.Unlock()
		e.reply(w, http.StatusOK, 1000, "", nil)
	case http.MethodGet:
		e.mu.Lock()
		mine := e.credentials(token)
		e.mu.Unlock()
		e.reply(w, http.StatusOK, 1000, "", mine)
	default:
		e.reply(w, http.StatusMethodNotAllowed, 2000, "method not allowed", nil)
	}
}

// serveLocations is the Locations RECEIVER: it applies PUT and PATCH as OCPI says.
func (e *EMSP) serveLocations(w http.ResponseWriter, r *http.Request, failure Failure, body []byte) {
	switch failure {
	case Refuse5xx:
		e.reply(w, http.StatusServiceUnavailable, 3000, "down for maintenance", nil)
		return
	case Garbage:
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>502 bad gateway</html>"))
		return
	case Down:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		e.reply(w, http.StatusServiceUnavailable, 3000, "down", nil)
		return
	case Slow:
		select {
		case <-time.After(e.SlowFor):
		case <-r.Context().Done():
			return
		}
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/partner/locations/"), "/")
	if len(parts) < 3 || len(parts) > 5 {
		e.reply(w, http.StatusBadRequest, 2001, "bad path", nil)
		return
	}
	if parts[0] != "NL" && len(parts[0]) != 2 {
		e.reply(w, http.StatusBadRequest, 2001, "bad country code", nil)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pushes = append(e.pushes, Push{Method: r.Method, Path: r.URL.Path, At: time.Now(), Body: body})
	key := parts[0] + "/" + parts[1] + "/" + parts[2]
	loc := e.locations[key]
	status, code, msg := http.StatusOK, 1000, ""
	switch {
	case r.Method == http.MethodGet:
		if loc == nil {
			e.replyLocked(w, http.StatusNotFound, 2003, "unknown location", nil)
			return
		}
		e.replyLocked(w, http.StatusOK, 1000, "", loc)
		return
	case len(parts) == 3 && r.Method == http.MethodPut:
		var l ocpigen.Location
		if err := json.Unmarshal(body, &l); err != nil || l.Id != parts[2] {
			status, code, msg = http.StatusBadRequest, 2001, "bad location"
			break
		}
		e.locations[key] = &l
	case len(parts) == 4:
		if loc == nil {
			status, code, msg = http.StatusNotFound, 2003, "unknown location"
			break
		}
		evses := []ocpigen.EVSE{}
		if loc.Evses != nil {
			evses = *loc.Evses
		}
		i := indexEVSE(evses, parts[3])
		if r.Method == http.MethodPut {
			var ev ocpigen.EVSE
			if err := json.Unmarshal(body, &ev); err != nil || ev.Uid != parts[3] {
				status, code, msg = http.StatusBadRequest, 2001, "bad EVSE"
				break
			}
			if i < 0 {
				evses = append(evses, ev)
			} else {
				evses[i] = ev
			}
			loc.LastUpdated = ev.LastUpdated
		} else {
			if i < 0 {
				status, code, msg = http.StatusNotFound, 2003, "unknown EVSE"
				break
			}
			var patch ocpigen.EVSEPatch
			if err := json.Unmarshal(body, &patch); err != nil {
				status, code, msg = http.StatusBadRequest, 2001, "bad patch"
				break
			}
			if patch.Status != nil {
				evses[i].Status = *patch.Status
			}
			evses[i].LastUpdated = patch.LastUpdated
			loc.LastUpdated = patch.LastUpdated
		}
		loc.Evses = &evses
	case len(parts) == 5:
		if loc == nil || loc.Evses == nil || indexEVSE(*loc.Evses, parts[3]) < 0 {
			status, code, msg = http.StatusNotFound, 2003, "unknown EVSE"
			break
		}
		ev := &(*loc.Evses)[indexEVSE(*loc.Evses, parts[3])]
		var c ocpigen.Connector
		if err := json.Unmarshal(body, &c); err != nil || r.Method != http.MethodPut || c.Id != parts[4] {
			status, code, msg = http.StatusBadRequest, 2001, "bad connector"
			break
		}
		j := -1
		for k := range ev.Connectors {
			if ev.Connectors[k].Id == c.Id {
				j = k
			}
		}
		if j < 0 {
			ev.Connectors = append(ev.Connectors, c)
		} else {
			ev.Connectors[j] = c
		}
		ev.LastUpdated, loc.LastUpdated = c.LastUpdated, c.LastUpdated
	default:
		status, code, msg = http.StatusMethodNotAllowed, 2000, "not supported by the simulator"
	}
	e.replyLocked(w, status, code, msg, nil)
}

func indexEVSE(evses []ocpigen.EVSE, uid string) int {
	for i := range evses {
		if evses[i].Uid == uid {
			return i
		}
	}
	return -1
}

func (e *EMSP) reply(w http.ResponseWriter, status, code int, msg string, data any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	out := map[string]any{"status_code": code, "timestamp": time.Now().UTC().Format("2006-01-02T15:04:05Z")}
	if msg != "" {
		out["status_message"] = msg
	}
	if data != nil {
		out["data"] = data
	}
	_ = json.NewEncoder(w).Encode(out)
}

// replyLocked is reply while e.mu is held (it does not take it).
func (e *EMSP) replyLocked(w http.ResponseWriter, status, code int, msg string, data any) {
	e.reply(w, status, code, msg, data)
}
