package reliability

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ocpigen "github.com/chargenet/chargenet/gen/ocpi"
	"github.com/chargenet/chargenet/internal/apitest"
	"github.com/chargenet/chargenet/internal/proctest"
	"github.com/chargenet/chargenet/ocpi/ocpitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ocpiArgs are serve's flags for OCPI as NL CNE, pushing to loopback partners, with a
// quick retry schedule and a short lease.
var ocpiArgs = []string{"--ocpi-country-code", "NL", "--ocpi-party-id", "CNE", "--webhook-allow-insecure",
	"--webhook-retry-schedule", strings.TrimSuffix(strings.Repeat("300ms,", 40), ","), "--webhook-timeout", "1s",
	"--webhook-poll", "100ms"}

// serveOCPI starts chargenet with OCPI on database at addr.
func serveOCPI(t *testing.T, database, addr string) *proctest.Server {
	t.Helper()
	return proctest.Start(t, proctest.Options{Database: database, Keys: []string{key}, Addr: addr,
		Env:  []string{"CHARGENET_RATE_LIMIT=0", "CHARGENET_CURSOR_SECRET=reliability-secret-0123456789abcdef"},
		Args: append([]string{"--demo", "--public-url", "http://" + addr}, ocpiArgs...)})
}

// registerToken runs `chargenet ocpi register` and returns the token it prints.
func registerToken(t *testing.T, database, addr, name string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(proctest.Binary(t), append([]string{"ocpi", "register", "--database", database, "--name", name,
		"--public-url", "http://" + addr}, ocpiArgs...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s", stderr.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// TestOCPIPushesSurviveKill makes changes while a partner is down, kills chargenet with
// SIGKILL, restarts it and brings the partner back: the partner ends holding every
// change, the last value of each connector included.
func TestOCPIPushesSurviveKill(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			db, addr := b.database(t), proctest.FreeAddr(t)
			srv := serveOCPI(t, db, addr)
			token := registerToken(t, db, addr, "emsp")
			sim := ocpitest.New(true)
			defer sim.Close()
			require.NoError(t, sim.Register(t.Context(), srv.Base+"/ocpi/versions", token))

			sim.SetFailure(ocpitest.Down)
			a := newAPI(srv.Base, true)
			last := map[int64]float64{}
			for i := 0; i < 30; i++ {
				uid := int64(1001 + i%10)
				power := 50.0 + float64(i)
				res, err := a.do(http.MethodPatch, fmt.Sprintf("/v2/evses/%d/connectors/1", uid), fmt.Sprintf(`{"maxElectricPower": %v}`, power))
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, res.status, "%s", res.body)
				last[uid] = power
			}
			time.Sleep(500 * time.Millisecond) // some attempts fail, some are leased
			require.Empty(t, sim.Pushes(), "the partner took nothing while it was down")
			srv.Kill()
			<-srv.Done()

			sim.SetFailure(ocpitest.Healthy)
			srv = serveOCPI(t, db, addr)
			ok := sim.WaitFor(60*time.Second, func() bool {
				held := sim.Locations()
				for uid, power := range last {
					if connectorPower(held, uid, "1") != int(power*1000) {
						return false
					}
				}
				return true
			})
			require.True(t, ok, "every change reached the partner after the restart; the log:\n%s", srv.Log())
			// And what it holds is what chargenet serves.
			for _, id := range []string{"LOC-0001", "LOC-0002", "LOC-0003", "LOC-0004", "LOC-0005"} {
				status, _, body, err := sim.Call(t.Context(), http.MethodGet, srv.Base+"/ocpi/2.2.1/locations/"+id, "", nil)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, status)
				var env struct{ Data ocpigen.Location }
				require.NoError(t, json.Unmarshal(body, &env))
				assert.Eventually(t, func() bool { return assert.ObjectsAreEqual(env.Data, sim.Locations()[id]) }, 10*time.Second,
					50*time.Millisecond, "Location %s", id)
			}
			assert.Empty(t, sim.Violations())
		})
	}
}

// connectorPower returns the max_electric_power the partner holds for connector id of
// EVSE uid, -1 when it holds none.
func connectorPower(held map[string]ocpigen.Location, uid int64, id string) int {
	for _, l := range held {
		if l.Evses == nil {
			continue
		}
		for _, e := range *l.Evses {
			if e.Uid != fmt.Sprint(uid) {
				continue
			}
			for _, c := range e.Connectors {
				if c.Id == id && c.MaxElectricPower != nil {
					return *c.MaxElectricPower
				}
			}
		}
	}
	return -1
}

// TestHostileOCPI sends the OCPI hostile corpus to /ocpi, and then every request of the
// REST API's corpus as /ocpi receives it (apitest.OCPITwins): every answer is the OCPI
// envelope with a documented status (the OCPI corpus's exact one; never a 5xx, and a
// refused write for the REST corpus's), nothing leaks, and the database files are byte
// for byte what they were. A REST read may be answered 200 where OCPI reads leniently:
// it ignores the REST API's query parameters and allows spaces after "Token".
func TestHostileOCPI(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "chargenet.db")
	addr := proctest.FreeAddr(t)
	srv := serveOCPI(t, db, addr)
	sim := ocpitest.New(true)
	defer sim.Close()
	require.NoError(t, sim.Register(t.Context(), srv.Base+"/ocpi/versions", registerToken(t, db, addr, "emsp")))
	tokenC := sim.Token()
	tokenA := registerToken(t, db, addr, "waiting")
	_, answer, _, err := sim.Call(t.Context(), http.MethodGet, srv.Base+"/ocpi/2.2.1/locations?limit=1", tokenC, nil)
	require.NoError(t, err)
	next, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(answer.Get("Link"), "<"), `>; rel="next"`))
	require.NoError(t, err)
	position := next.Query().Get("position")
	require.NotEmpty(t, position, "the Link of the first page carries a position")
	evseCursor := secondEVSEPage(t, srv.Base)
	require.NoError(t, srv.Stop(10*time.Second))
	before := files(t, dir)

	srv = serveOCPI(t, db, addr)
	creds := func(u string) []byte {
		return []byte(`{"token": "token-b", "url": "` + u + `", "roles": [{"role": "EMSP", "party_id": "EXA", "country_code": "NL", ` +
			`"business_details": {"name": "Example"}}]}`)
	}
	closed := "http://" + proctest.FreeAddr(t) + "/versions"
	huge := append(append([]byte(`{"token": "t", "url": "https://x.example.com", "roles": [], "pad": "`), bytes.Repeat([]byte("x"), 10<<20)...), `"}`...)
	deep := []byte(strings.Repeat("[", 100000) + strings.Repeat("]", 100000))
	deepObj := []byte(strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000))
	enc := func(s string) string { return "Token " + base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, h := range []struct {
		name, method, path, auth string
		body                     []byte
		status, code             int
		header                   []string // more request headers, name and value
	}{
		{"no token", "GET", "/ocpi/versions", "", nil, 401, 2000, nil},
		{"Bearer", "GET", "/ocpi/versions", "Bearer " + tokenC, nil, 401, 2000, nil},
		{"unknown token", "GET", "/ocpi/versions", enc("guess"), nil, 401, 2000, nil},
		{"very long token", "GET", "/ocpi/versions", enc(strings.Repeat("t", 4000)), nil, 401, 2000, nil},
		{"Unicode token", "GET", "/ocpi/versions", "Token ключ-🔑", nil, 401, 2000, nil},
		{"registration token on the Locations", "GET", "/ocpi/2.2.1/locations", enc(tokenA), nil, 401, 2000, nil},
		{"POST with another partner's credentials token", "POST", "/ocpi/2.2.1/credentials", enc(tokenC), creds(closed), 405, 2000, nil},
		{"PUT with a registration token", "PUT", "/ocpi/2.2.1/credentials", enc(tokenA), creds(closed), 405, 2000, nil},
		{"DELETE with a registration token", "DELETE", "/ocpi/2.2.1/credentials", enc(tokenA), nil, 405, 2000, nil},
		{"POST, partner unreachable", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), creds(closed), 200, 3001, nil},
		{"POST to cloud metadata", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), creds("https://169.254.169.254/latest/"), 200, 3001, nil},
		{"POST not JSON", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), []byte("token=x"), 400, 2001, nil},
		{"POST truncated", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), creds(closed)[:20], 400, 2001, nil},
		{"POST deep nesting", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), deep, 400, 2001, nil},
		{"POST 10 MB", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), huge, 400, 2001, nil},
		{"POST invalid UTF-8", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), []byte("{\"token\": \"\xff\xfe\"}"), 400, 2001, nil},
		{"POST empty body", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), []byte{}, 400, 2001, nil},
		{"PUT locations", "PUT", "/ocpi/2.2.1/locations/LOC-0001", enc(tokenC), []byte(`{}`), 405, 2000, nil},
		{"unknown module", "GET", "/ocpi/2.2.1/tariffs", enc(tokenC), nil, 404, 2000, nil},
		{"path traversal", "GET", "/ocpi/2.2.1/locations/..%2F..%2Fetc%2Fpasswd", enc(tokenC), nil, 404, 2000, nil},
		{"location id injection", "GET", "/ocpi/2.2.1/locations/%27%20OR%201=1--", enc(tokenC), nil, 404, 2003, nil},
		{"location id NUL", "GET", "/ocpi/2.2.1/locations/%00", enc(tokenC), nil, 400, 2001, nil},
		{"EVSE uid beyond int64", "GET", "/ocpi/2.2.1/locations/LOC-0001/999999999999999999999", enc(tokenC), nil, 404, 2003, nil},
		{"date_from year 99999", "GET", "/ocpi/2.2.1/locations?date_from=99999-01-01T00:00:00Z", enc(tokenC), nil, 400, 2001, nil},
		{"limit -1", "GET", "/ocpi/2.2.1/locations?limit=-1", enc(tokenC), nil, 400, 2001, nil},
		{"offset beyond int64", "GET", "/ocpi/2.2.1/locations?offset=99999999999999999999", enc(tokenC), nil, 400, 2001, nil},
		{"position of another secret", "GET", "/ocpi/2.2.1/locations?position=eyJvIjo3LCJuIjoxLCJpIjoiTE9DLTAwMDcifQ.c2lnbmF0dXJl", enc(tokenC), nil, 400, 2001, nil},
		// what the REST API's hostile corpus sends, in OCPI's terms
		{"empty Authorization", "GET", "/ocpi/versions", " ", nil, 401, 2000, nil},
		{"Token without a token", "GET", "/ocpi/versions", "Token", nil, 401, 2000, nil},
		{"token and more", "GET", "/ocpi/versions", enc(tokenC) + " extra", nil, 401, 2000, nil},
		{"Basic scheme", "GET", "/ocpi/versions", "Basic dXNlcjpwYXNz", nil, 401, 2000, nil},
		{"token as query parameter", "GET", "/ocpi/versions?token=" + tokenC, "", nil, 401, 2000, nil},
		{"TRACE", "TRACE", "/ocpi/2.2.1/locations", enc(tokenC), nil, 405, 2000, nil},
		{"DELETE the locations", "DELETE", "/ocpi/2.2.1/locations", enc(tokenC), nil, 405, 2000, nil},
		{"EVSE uid -1", "GET", "/ocpi/2.2.1/locations/LOC-0001/-1", enc(tokenC), nil, 404, 2003, nil},
		{"EVSE uid 1.5", "GET", "/ocpi/2.2.1/locations/LOC-0001/1.5", enc(tokenC), nil, 404, 2003, nil},
		{"EVSE uid with NUL", "GET", "/ocpi/2.2.1/locations/LOC-0001/1001%00", enc(tokenC), nil, 400, 2001, nil},
		{"connector -1", "GET", "/ocpi/2.2.1/locations/LOC-0001/1001/-1", enc(tokenC), nil, 404, 2003, nil},
		{"connector beyond int64", "GET", "/ocpi/2.2.1/locations/LOC-0001/1001/999999999999999999999", enc(tokenC), nil, 404, 2003, nil},
		{"location id over 36", "GET", "/ocpi/2.2.1/locations/" + strings.Repeat("A", 300), enc(tokenC), nil, 400, 2001, nil},
		{"POST deep object nesting", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), deepObj, 400, 2001, nil},
		{"POST duplicate url key", "POST", "/ocpi/2.2.1/credentials", enc(tokenA),
			[]byte(`{"token": "t", "url": "https://x.example.com/versions", "url": "http://127.0.0.1/", "roles": []}`), 400, 2001, nil},
		{"POST NaN", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), []byte(`{"token": NaN}`), 400, 2001, nil},
		{"POST text/plain", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), creds(closed), 400, 2001, []string{"Content-Type", "text/plain"}},
		{"POST multipart", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), creds(closed), 400, 2001,
			[]string{"Content-Type", "multipart/form-data; boundary=x"}},
		{"POST file URL", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), creds("file:///etc/passwd"), 400, 2001, nil},
		{"POST gopher URL", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), creds("gopher://emsp.example.com:70/"), 400, 2001, nil},
		{"POST javascript URL", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), creds("javascript:alert(1)"), 400, 2001, nil},
		{"POST credentials in URL", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), creds("https://admin:admin@emsp.example.com/"), 400, 2001, nil},
		{"POST URL over 255", "POST", "/ocpi/2.2.1/credentials", enc(tokenA), creds("https://emsp.example.com/" + strings.Repeat("a", 3000)), 400, 2001, nil},
		{"limit=abc", "GET", "/ocpi/2.2.1/locations?limit=abc", enc(tokenC), nil, 400, 2001, nil},
		{"limit=1.5", "GET", "/ocpi/2.2.1/locations?limit=1.5", enc(tokenC), nil, 400, 2001, nil},
		{"limit twice", "GET", "/ocpi/2.2.1/locations?limit=1&limit=2", enc(tokenC), nil, 400, 2001, nil},
		{"offset=abc", "GET", "/ocpi/2.2.1/locations?offset=abc", enc(tokenC), nil, 400, 2001, nil},
		{"date_to garbage", "GET", "/ocpi/2.2.1/locations?date_to=%00%ff", enc(tokenC), nil, 400, 2001, nil},
		{"position empty", "GET", "/ocpi/2.2.1/locations?position=", enc(tokenC), nil, 400, 2001, nil},
		{"position tampered", "GET", "/ocpi/2.2.1/locations?position=" + tamper(position), enc(tokenC), nil, 400, 2001, nil},
	} {
		t.Run(h.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(context.Background(), h.method, srv.Base+h.path, bytes.NewReader(h.body))
			require.NoError(t, err)
			if h.auth != "" {
				req.Header.Set("Authorization", h.auth)
			}
			if h.body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			for i := 0; i+1 < len(h.header); i += 2 {
				req.Header.Set(h.header[i], h.header[i+1])
			}
			res, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(res.Body)
			_ = res.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, h.status, res.StatusCode, "%s", body)
			require.NoError(t, apitest.CheckOCPIExchange(req, res.StatusCode, res.Header, body))
			var env struct {
				StatusCode    int    `json:"status_code"`
				StatusMessage string `json:"status_message"`
			}
			require.NoError(t, json.Unmarshal(body, &env), "the OCPI envelope: %s", body)
			assert.Equal(t, h.code, env.StatusCode, "%s", body)
			assert.NotEmpty(t, env.StatusMessage)
			assert.NotRegexp(t, leaks, string(body), "no internals in the body")
			assert.NotContains(t, string(body), tokenC)
		})
	}
	replayed := &histogram{}
	for _, h := range hostileCorpus(t, evseCursor) {
		for i, req := range apitest.OCPITwins(h.request(t, srv.Base), h.body, key, tokenC, tokenA) {
			t.Run("REST corpus/"+h.name+[]string{"", " (credentials)"}[i], func(t *testing.T) {
				res, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
				require.NoError(t, err)
				body, err := io.ReadAll(res.Body)
				_ = res.Body.Close()
				require.NoError(t, err)
				replayed.add(res.StatusCode)
				assert.Less(t, res.StatusCode, 500, "%s", body)
				if req.Method != http.MethodGet {
					assert.GreaterOrEqual(t, res.StatusCode, 400, "a write the REST API refuses is refused here: %s", body)
				}
				require.NoError(t, apitest.CheckOCPIExchange(req, res.StatusCode, res.Header, body))
				var env struct {
					StatusCode    int    `json:"status_code"`
					StatusMessage string `json:"status_message"`
				}
				require.NoError(t, json.Unmarshal(body, &env), "the OCPI envelope: %s", body)
				assert.NotZero(t, env.StatusCode, "%s", body)
				assert.NotEmpty(t, env.StatusMessage)
				assert.NotRegexp(t, leaks, string(body), "no internals in the body")
				assert.NotContains(t, string(body), tokenC)
			})
		}
	}
	t.Logf("the REST hostile corpus at /ocpi: answers %s", replayed)

	require.NoError(t, srv.Stop(10*time.Second))
	assert.NotContains(t, srv.Log(), tokenC, "the log never holds a token")
	assert.Equal(t, before, files(t, dir), "the database files are byte for byte unchanged")
	assert.Empty(t, sim.Violations())
}
