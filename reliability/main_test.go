package reliability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet/internal/apitest"
	"github.com/chargenet/chargenet/internal/proctest"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { proctest.Main(m) }

const key = "reliability-key-0123456789"

// long reports whether the long mode was asked for (CHARGENET_LONG=1).
func long() bool { return os.Getenv("CHARGENET_LONG") == "1" }

// backend is a database a test can run the server on.
type backend struct {
	name string
	// database returns a fresh --database value.
	database func(t *testing.T) string
}

func sqliteBackend() backend {
	return backend{"sqlite", func(t *testing.T) string {
		return "sqlite:" + filepath.Join(t.TempDir(), "chargenet.db")
	}}
}

func postgresBackend() backend {
	return backend{"postgres", func(t *testing.T) string { return proctest.PostgresDatabase(t) }}
}

func backends() []backend { return []backend{sqliteBackend(), postgresBackend()} }

// serve starts `chargenet serve --demo` on database with the test key and no rate limit.
func serve(t *testing.T, database string, args ...string) *proctest.Server {
	t.Helper()
	return proctest.Start(t, proctest.Options{
		Database: database,
		Keys:     []string{key},
		Env:      []string{"CHARGENET_RATE_LIMIT=0", "CHARGENET_CURSOR_SECRET=reliability-secret-0123456789abcdef"},
		Args:     append([]string{"--demo"}, args...),
	})
}

// api sends requests with the test key. With check set, every exchange is checked
// against the contract (apitest.CheckExchange); a violation is returned as an error.
type api struct {
	base  string
	hc    *http.Client
	check bool
}

func newAPI(base string, keepAlive bool) *api {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = !keepAlive
	tr.MaxIdleConnsPerHost = 128
	return &api{base: base, hc: &http.Client{Transport: tr, Timeout: 15 * time.Second}, check: true}
}

// response is what came back for one request.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (a *api) do(method, path, body string, header ...string) (*response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := a.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if a.check {
		if err := apitest.CheckExchange(req, res.StatusCode, res.Header, b); err != nil {
			return nil, err
		}
	}
	return &response{status: res.StatusCode, header: res.Header, body: b}, nil
}

// evse is the part of an EVSE the tests read.
type evse struct {
	UID        int64 `json:"uid"`
	Connectors []struct {
		ID               int64   `json:"id"`
		MaxElectricPower float64 `json:"maxElectricPower"`
		MaxAmperage      float64 `json:"maxAmperage"`
		MaxVoltage       float64 `json:"maxVoltage"`
	} `json:"connectors"`
}

// field returns the value of a numeric connector field of connector id.
func (e *evse) field(id int64, name string) float64 {
	for _, c := range e.Connectors {
		if c.ID == id {
			return map[string]float64{"maxElectricPower": c.MaxElectricPower, "maxAmperage": c.MaxAmperage, "maxVoltage": c.MaxVoltage}[name]
		}
	}
	return -1
}

// getEVSE reads an EVSE and its version (from the ETag).
func (a *api) getEVSE(t *testing.T, uid int64) (*evse, int64) {
	t.Helper()
	res, err := a.do(http.MethodGet, fmt.Sprintf("/v2/evses/%d", uid), "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	var e evse
	require.NoError(t, json.Unmarshal(res.body, &e))
	return &e, version(t, res.header.Get("ETag"))
}

func version(t *testing.T, etag string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(strings.Trim(etag, `"`), 10, 64)
	require.NoError(t, err, "ETag %q", etag)
	return v
}

// patchBody is a PATCH body setting one numeric field.
func patchBody(field string, value float64) string {
	return fmt.Sprintf(`{%q: %s}`, field, strconv.FormatFloat(value, 'f', -1, 64))
}

// histogram counts status codes (and errors, under 0) safely from many goroutines.
type histogram struct {
	mu sync.Mutex
	n  map[int]int
}

func (h *histogram) add(status int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[int]int{}
	}
	h.n[status]++
}

func (h *histogram) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var codes []int
	for c := range h.n {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var b bytes.Buffer
	for i, c := range codes {
		if i > 0 {
			b.WriteString(", ")
		}
		name := strconv.Itoa(c)
		if c == 0 {
			name = "transport error"
		}
		fmt.Fprintf(&b, "%s: %d", name, h.n[c])
	}
	return b.String()
}
