package ocpi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/client"
	ocpigen "github.com/chargenet/chargenet/gen/ocpi"
	"github.com/chargenet/chargenet/ocpi"
	"github.com/chargenet/chargenet/ocpi/ocpitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envelope is an OCPI answer as the tests read it.
type envelope struct {
	Data          json.RawMessage `json:"data"`
	StatusCode    int             `json:"status_code"`
	StatusMessage string          `json:"status_message"`
}

func decode(t *testing.T, body []byte) envelope {
	t.Helper()
	var env envelope
	require.NoError(t, json.Unmarshal(body, &env), "%s", body)
	return env
}

// registered returns a simulator registered with chargenet by the partner's own POST
// (OCPI's registration direction), as partner "emsp".
func registered(t *testing.T, cn *chargenetUnderTest, receiver bool) *ocpitest.EMSP {
	t.Helper()
	tokenA, _, err := cn.svc.NewPartner(t.Context(), "emsp-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	require.NoError(t, err)
	sim := ocpitest.New(receiver)
	t.Cleanup(sim.Close)
	require.NoError(t, sim.Register(t.Context(), cn.svc.VersionsURL(), tokenA))
	return sim
}

// TestRegister is the handshake started by the partner: token A opens only the
// versions and the credentials, the partner's POST makes chargenet read its endpoints
// with its token B and answer with token C, after which A is dead; PUT rotates C,
// DELETE ends it all; 405 where OCPI says.
func TestRegister(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cn *chargenetUnderTest) {
		ctx := t.Context()
		tokenA, p, err := cn.svc.NewPartner(ctx, "emsp")
		require.NoError(t, err)
		sim := ocpitest.New(true)
		defer sim.Close()

		status, _, body, err := sim.Call(ctx, http.MethodGet, cn.url+"/ocpi/2.2.1/locations", tokenA, nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, status, "token A does not open the Locations: %s", body)
		for _, m := range []string{http.MethodPut, http.MethodDelete} {
			status, _, body, err = sim.Call(ctx, m, cn.url+"/ocpi/2.2.1/credentials", tokenA, sim.CredentialsFor("x"))
			require.NoError(t, err)
			assert.Equal(t, http.StatusMethodNotAllowed, status, "%s before registration: %s", m, body)
		}

		require.NoError(t, sim.Register(ctx, cn.svc.VersionsURL(), tokenA))
		tokenC := sim.Token()
		assert.NotEqual(t, tokenA, tokenC)

		status, _, _, err = sim.Call(ctx, http.MethodGet, cn.url+"/ocpi/versions", tokenA, nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, status, "token A is dead once registered")

		status, _, body, err = sim.Call(ctx, http.MethodGet, cn.url+"/ocpi/2.2.1/credentials", "", nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status, "%s", body)
		var mine ocpigen.Credentials
		require.NoError(t, json.Unmarshal(decode(t, body).Data, &mine))
		assert.Equal(t, tokenC, mine.Token, "GET answers the token the caller uses")
		assert.Equal(t, cn.svc.VersionsURL(), mine.Url)
		require.Len(t, mine.Roles, 1)
		assert.Equal(t, ocpigen.RoleCPO, mine.Roles[0].Role)
		assert.Equal(t, "NL", mine.Roles[0].CountryCode)
		assert.Equal(t, "CNE", mine.Roles[0].PartyId)

		status, _, body, err = sim.Call(ctx, http.MethodPost, cn.url+"/ocpi/2.2.1/credentials", "", sim.CredentialsFor("again"))
		require.NoError(t, err)
		assert.Equal(t, http.StatusMethodNotAllowed, status, "POST when registered: %s", body)

		stored, err := cn.store.Partner(ctx, p.ID)
		require.NoError(t, err)
		assert.True(t, stored.Registered)
		assert.Nil(t, stored.RegistrationHash)
		assert.Equal(t, sim.URL()+"/partner/locations", stored.ReceiverURL())
		assert.Equal(t, sim.VersionsURL(), stored.VersionsURL)
		assert.Equal(t, []chargenet.PartnerRole{{Role: "EMSP", CountryCode: "NL", PartyID: "EXA", Name: "Example eMSP"}}, stored.Roles)

		// The raw token, as OCPI 2.1.1 peers send it, works too.
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cn.url+"/ocpi/2.2.1/locations?limit=1", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Token "+tokenC)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		assert.Equal(t, http.StatusOK, res.StatusCode)

		require.NoError(t, sim.UpdateCredentials(ctx))
		assert.NotEqual(t, tokenC, sim.Token())
		status, _, _, err = sim.Call(ctx, http.MethodGet, cn.url+"/ocpi/versions", tokenC, nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, status, "PUT rotates the token")
		_, err = sim.Pull(ctx, url.Values{"limit": {"100"}})
		require.NoError(t, err, "the new token works")

		status, _, body, err = sim.Call(ctx, http.MethodDelete, cn.url+"/ocpi/2.2.1/credentials", "", nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status, "%s", body)
		assert.Equal(t, 1000, decode(t, body).StatusCode)
		status, _, _, err = sim.Call(ctx, http.MethodGet, cn.url+"/ocpi/versions", "", nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, status, "unregistered")
		_, err = cn.store.Partner(ctx, p.ID)
		assert.ErrorIs(t, err, chargenet.ErrNotFound)
		assert.Empty(t, sim.Violations())
	})
}

// TestConnect is the handshake started by chargenet (`chargenet ocpi connect`), as hubs
// usually do it, and the unregistration it starts.
func TestConnect(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cn *chargenetUnderTest) {
		ctx := t.Context()
		sim := ocpitest.New(true)
		defer sim.Close()
		tokenA := sim.IssueToken()
		p, err := cn.svc.Connect(ctx, "hub", sim.VersionsURL(), tokenA)
		require.NoError(t, err)
		assert.True(t, p.Registered)
		assert.Equal(t, "hub", p.Name)
		assert.Equal(t, sim.URL()+"/partner/locations", p.ReceiverURL())
		assert.True(t, sim.Registered(), "the partner read chargenet's versions with the token chargenet gave it")

		pages, err := sim.Pull(ctx, nil)
		require.NoError(t, err)
		assert.Equal(t, 120, count(pages))

		_, _, err = cn.rest.UpdateConnector(ctx, 1001, 1, client.ConnectorPatch{MaxElectricPower: ptr(42.0)})
		require.NoError(t, err)
		cn.waitPushed(t, 10*time.Second)
		assert.NotEmpty(t, sim.Pushes(), "pushes carry the token the partner answered with")

		_, err = cn.svc.Connect(ctx, "hub", sim.VersionsURL(), sim.IssueToken())
		assert.ErrorIs(t, err, chargenet.ErrConflict, "the name is taken")

		told, err := cn.svc.Disconnect(ctx, "hub")
		require.NoError(t, err)
		require.NoError(t, told, "the partner took the DELETE")
		assert.False(t, sim.Registered())
		status, _, _, err := sim.Call(ctx, http.MethodGet, cn.url+"/ocpi/versions", "", nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, status)
		assert.Empty(t, sim.Violations())
	})
}

// TestRegistrationFailures checks the answers a registration gets when chargenet cannot
// use the partner: 3001 when its versions cannot be read, 3003 when it has no 2.2.1;
// token A stays good for another attempt.
func TestRegistrationFailures(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cn *chargenetUnderTest) {
		ctx := t.Context()
		tokenA, _, err := cn.svc.NewPartner(ctx, "emsp")
		require.NoError(t, err)
		sim := ocpitest.New(true)
		defer sim.Close()

		old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data":[{"version":"2.1.1","url":"http://x.example/2.1.1"}],"status_code":1000,"timestamp":"2026-01-01T00:00:00Z"}`))
		}))
		defer old.Close()
		html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("<html>welcome</html>"))
		}))
		defer html.Close()
		gone := httptest.NewServer(http.NotFoundHandler())
		gone.Close()
		for _, c := range []struct {
			name, versionsURL string
			code              int
		}{
			{"versions cannot be read", gone.URL + "/versions", 3001},
			{"the answer is not OCPI", html.URL + "/versions", 3001},
			{"no common version", old.URL + "/versions", 3003},
		} {
			t.Run(c.name, func(t *testing.T) {
				creds := sim.CredentialsFor("token-b")
				creds.Url = c.versionsURL
				status, _, body, err := sim.Call(ctx, http.MethodPost, cn.url+"/ocpi/2.2.1/credentials", tokenA, creds)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, status, "%s", body)
				env := decode(t, body)
				assert.Equal(t, c.code, env.StatusCode, "%s", body)
				assert.Empty(t, env.Data)
			})
		}
		status, _, body, err := sim.Call(ctx, http.MethodPost, cn.url+"/ocpi/2.2.1/credentials", tokenA, map[string]any{"token": "x"})
		require.NoError(t, err)
		assert.Equal(t, http.StatusBadRequest, status, "%s", body)
		assert.Equal(t, 2001, decode(t, body).StatusCode)
		require.NoError(t, sim.Register(ctx, cn.svc.VersionsURL(), tokenA), "token A still registers")
		assert.Empty(t, sim.Violations())
	})
}

func count(pages []ocpitest.Page) int {
	n := 0
	for _, p := range pages {
		n += len(p.Locations)
	}
	return n
}

func ptr[T any](v T) *T { return &v }

// TestPullEqualsInventory is the full pull: every page by Link, compared with what the
// REST API answers for the same inventory, mapped by the rules of docs/ocpi.md
// (written out again here, not taken from the package).
func TestPullEqualsInventory(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cn *chargenetUnderTest) {
		ctx := t.Context()
		// The connector first: its deletion moves its location's last_updated too.
		_, _, err := cn.rest.DeleteConnector(ctx, 1003, 1)
		require.NoError(t, err)
		_, err = cn.rest.DeleteLocation(ctx, "LOC-0100")
		require.NoError(t, err)
		sim := registered(t, cn, false)

		pages, err := sim.Pull(ctx, url.Values{"limit": {"7"}})
		require.NoError(t, err)
		require.Len(t, pages, 18, "120 Locations, 7 a page")
		got := map[string]ocpigen.Location{}
		var order []string
		for i, p := range pages {
			assert.Equal(t, 120, p.TotalCount, "X-Total-Count on page %d", i)
			assert.Equal(t, 100, p.Limit, "X-Limit")
			assert.Equal(t, i == len(pages)-1, p.Link == "", "Link on every page but the last (page %d)", i)
			for _, l := range p.Locations {
				require.NotContains(t, got, l.Id, "a Location appears once in a walk")
				got[l.Id] = l
				order = append(order, l.Id)
			}
		}
		assert.Equal(t, "LOC-0100", order[len(order)-1], "the deleted one changed last: it comes last")

		// What the REST API shows, deleted location included.
		want := map[string]client.Location{}
		for l, err := range cn.rest.Locations(ctx, client.ListOptions{}) {
			require.NoError(t, err)
			want[l.ID] = l
		}
		deleted, err := cn.rest.Location(ctx, "LOC-0100")
		require.NoError(t, err)
		want[deleted.ID] = *deleted
		evses := map[string][]client.EVSE{}
		for e, err := range cn.rest.EVSEs(ctx, client.ListOptions{}) {
			require.NoError(t, err)
			evses[e.LocationID] = append(evses[e.LocationID], e)
		}
		require.Len(t, got, len(want))
		for id, l := range want {
			assertMapped(t, cn.store, l, evses[id], got[id])
		}

		t.Run("a client's own offsets give the same pages", func(t *testing.T) {
			for i, p := range pages {
				q := url.Values{"offset": {strconv.Itoa(7 * i)}, "limit": {"7"}}
				own, err := sim.Pull(ctx, q)
				require.NoError(t, err)
				require.NotEmpty(t, own)
				assert.Equal(t, ids(p.Locations), ids(own[0].Locations), "offset %d", 7*i)
			}
		})

		t.Run("date_from and date_to", func(t *testing.T) {
			from := got["LOC-0100"].LastUpdated
			pages, err := sim.Pull(ctx, url.Values{"date_from": {from}})
			require.NoError(t, err)
			require.Len(t, pages, 1)
			assert.Equal(t, []string{"LOC-0100"}, ids(pages[0].Locations), "the deletion is seen from date_from")
			assert.Equal(t, 1, pages[0].TotalCount)
			pages, err = sim.Pull(ctx, url.Values{"date_to": {from}})
			require.NoError(t, err)
			assert.Equal(t, 119, count(pages), "date_to is exclusive")
			assert.Equal(t, 119, pages[0].TotalCount)
		})
		assert.Empty(t, sim.Violations())
	})
}

func ids(ls []ocpigen.Location) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Id
	}
	return out
}

// ms writes t as an OCPI DateTime to the millisecond, truncated.
func ms(t time.Time) string {
	return t.UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z")
}

// assertMapped checks one OCPI Location against the REST location and its EVSEs, and
// its connectors' last_updated against the store's (the REST API does not show them).
func assertMapped(t *testing.T, store chargenet.Store, l client.Location, evses []client.EVSE, got ocpigen.Location) {
	t.Helper()
	at := "Location " + l.ID
	assert.Equal(t, l.ID, got.Id, at)
	assert.Equal(t, "NL", got.CountryCode, at)
	assert.Equal(t, "CNE", got.PartyId, at)
	assert.True(t, got.Publish, at)
	require.NotNil(t, got.Name, at)
	assert.Equal(t, l.Name, *got.Name, at)
	assert.Equal(t, l.Address, got.Address, at)
	assert.Equal(t, l.City, got.City, at)
	if l.PostalCode == "" {
		assert.Nil(t, got.PostalCode, at)
	} else if assert.NotNil(t, got.PostalCode, at) {
		assert.Equal(t, l.PostalCode, *got.PostalCode, at)
	}
	assert.Equal(t, l.Country, got.Country, at)
	assert.Equal(t, l.TimeZone, got.TimeZone, at)
	for _, c := range []struct {
		text string
		want float64
	}{{got.Coordinates.Latitude, l.Latitude}, {got.Coordinates.Longitude, l.Longitude}} {
		f, err := strconv.ParseFloat(c.text, 64)
		require.NoError(t, err)
		assert.InDelta(t, c.want, f, 5e-7, at)
		assert.Regexp(t, `^-?[0-9]+\.[0-9]{6}$`, c.text, at)
	}
	var shown []client.EVSE
	for _, e := range evses {
		assert.False(t, e.LastUpdated.After(l.LastUpdated), "%s: EVSE %d changed after its location", at, e.UID)
		if slices.ContainsFunc(e.Connectors, func(c client.Connector) bool { return c.DeletedAt == nil }) {
			shown = append(shown, e)
		}
	}
	assert.Equal(t, ms(l.LastUpdated), got.LastUpdated, at)
	require.NotNil(t, got.Evses, at)
	require.Len(t, *got.Evses, len(shown), at)
	for i, e := range shown {
		g := (*got.Evses)[i]
		at := fmt.Sprintf("%s EVSE %d", at, e.UID)
		assert.Equal(t, strconv.FormatInt(e.UID, 10), g.Uid, at)
		require.NotNil(t, g.EvseId, at)
		assert.Equal(t, e.EVSEID, *g.EvseId, at)
		if l.DeletedAt != nil {
			assert.Equal(t, ocpigen.StatusREMOVED, g.Status, at)
		} else {
			assert.Equal(t, string(e.Status), string(g.Status), at)
		}
		assert.Equal(t, ms(e.LastUpdated), g.LastUpdated, at)
		stored, err := store.EVSE(t.Context(), e.UID)
		require.NoError(t, err, at)
		var conns []client.Connector
		for _, c := range e.Connectors {
			if c.DeletedAt == nil {
				conns = append(conns, c)
			}
		}
		require.Len(t, g.Connectors, len(conns), at)
		for j, c := range conns {
			gc := g.Connectors[j]
			at := fmt.Sprintf("%s connector %d", at, c.ID)
			assert.Equal(t, strconv.FormatInt(c.ID, 10), gc.Id, at)
			sc := stored.Connector(c.ID)
			require.NotNil(t, sc, at)
			assert.Equal(t, ms(sc.LastUpdated), gc.LastUpdated, at)
			assert.False(t, sc.LastUpdated.After(e.LastUpdated), "%s: changed after its EVSE", at)
			assert.Equal(t, string(c.Standard), string(gc.Standard), at)
			assert.Equal(t, string(c.Format), string(gc.Format), at)
			assert.Equal(t, string(c.PowerType), string(gc.PowerType), at)
			assert.Equal(t, int(math.Round(c.MaxVoltage)), gc.MaxVoltage, at)
			assert.Equal(t, int(math.Round(c.MaxAmperage)), gc.MaxAmperage, at)
			require.NotNil(t, gc.MaxElectricPower, at)
			assert.Equal(t, int(math.Round(c.MaxElectricPower*1000)), *gc.MaxElectricPower, at)
			if len(c.TariffIDs) == 0 {
				assert.Nil(t, gc.TariffIds, at)
			} else if assert.NotNil(t, gc.TariffIds, at) {
				assert.Equal(t, c.TariffIDs, *gc.TariffIds, at)
			}
		}
	}
}

// TestPushes is a series of changes through the REST API and the charge-box ingestion,
// pushed to a partner's receiver, which ends holding what chargenet serves.
func TestPushes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cn *chargenetUnderTest) {
		ctx := t.Context()
		sim := registered(t, cn, true)

		newLoc := client.Location{ID: "LOC-NEW", Name: "New Hub", Address: "Damrak 1", City: "Amsterdam", PostalCode: "1012",
			Country: "NLD", Latitude: 52.3731, Longitude: 4.8926, TimeZone: "Europe/Amsterdam"}
		_, created, err := cn.rest.PutLocation(ctx, newLoc)
		require.NoError(t, err)
		require.True(t, created)
		e, _, err := cn.rest.CreateEVSE(ctx, client.NewEVSE{EVSEID: "NL*CNE*E9001", ChargeboxID: 900, LocationID: "LOC-NEW",
			Connectors: []client.NewConnector{
				{Standard: client.Standard("IEC_62196_T2"), Format: client.Format("SOCKET"), PowerType: client.PowerType("AC_3_PHASE"),
					MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400},
				{Standard: client.Standard("IEC_62196_T2_COMBO"), Format: client.Format("CABLE"), PowerType: client.PowerType("DC"),
					MaxElectricPower: 150, MaxAmperage: 375, MaxVoltage: 920, TariffIDs: []string{"DC-FAST"}},
			}})
		require.NoError(t, err)
		_, _, err = cn.rest.UpdateConnector(ctx, 1001, 1, client.ConnectorPatch{MaxElectricPower: ptr(33.3)})
		require.NoError(t, err)
		notify(t, cn, 501, 1, "Charging")
		_, _, err = cn.rest.UpdateEVSE(ctx, e.UID, client.EVSEPatch{Status: ptr(client.EVSEStatus("AVAILABLE"))})
		require.NoError(t, err)
		_, _, err = cn.rest.UpdateConnector(ctx, e.UID, 2, client.ConnectorPatch{MaxElectricPower: ptr(120.0)})
		require.NoError(t, err)
		_, _, err = cn.rest.DeleteConnector(ctx, e.UID, 1)
		require.NoError(t, err)
		// A push carries the object as it is when it is sent: let the EVSE's pushes go
		// while its location exists, or a slow dispatcher (a busy machine) finds it
		// deleted and PUTs the whole Location instead.
		cn.waitPushed(t, time.Minute)
		renamed := newLoc
		renamed.ID, renamed.Name = "LOC-0002", "Renamed Hub"
		_, _, err = cn.rest.PutLocation(ctx, renamed)
		require.NoError(t, err)
		_, _, err = cn.rest.RemoveEVSE(ctx, e.UID)
		require.NoError(t, err)
		_, err = cn.rest.DeleteLocation(ctx, "LOC-NEW")
		require.NoError(t, err)

		cn.waitPushed(t, time.Minute)
		held := sim.Locations()
		for _, id := range []string{"LOC-NEW", "LOC-0001", "LOC-0002"} {
			require.Contains(t, held, id)
			status, _, body, err := sim.Call(ctx, http.MethodGet, sim.LocationsURL()+"/"+id, "", nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, status)
			var want ocpigen.Location
			require.NoError(t, json.Unmarshal(decode(t, body).Data, &want))
			assert.Equal(t, want, held[id], "the receiver holds Location %s as chargenet serves it", id)
		}
		assert.Equal(t, ocpigen.StatusREMOVED, (*held["LOC-NEW"].Evses)[0].Status, "the deleted location's EVSE is REMOVED")
		kinds := map[string]bool{}
		for _, p := range sim.Pushes() {
			kinds[fmt.Sprintf("%s %d", p.Method, len(splitPath(p.Path)))] = true
		}
		assert.True(t, kinds["PUT 3"], "a Location was PUT: %v", kinds)
		assert.True(t, kinds["PUT 4"], "an EVSE was PUT: %v", kinds)
		assert.True(t, kinds["PATCH 4"], "an EVSE was PATCHed: %v", kinds)
		assert.True(t, kinds["PUT 5"], "a Connector was PUT: %v", kinds)
		assert.Empty(t, sim.Violations())
	})
}

// splitPath returns the segments of a push's path after /partner/locations/.
func splitPath(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "/partner/locations/"), "/")
}

// notify posts a charge box's OCPP status notification.
func notify(t *testing.T, cn *chargenetUnderTest, chargebox, connector int, status string) {
	t.Helper()
	body := fmt.Sprintf(`{"connectorId":%d,"status":%q,"errorCode":"NoError","timestamp":%q}`, connector, status,
		time.Now().UTC().Format(time.RFC3339Nano))
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost,
		fmt.Sprintf("%s/internal/v1/chargeboxes/%d/status-notifications", cn.url, chargebox), strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+cn.ingest)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
}

// TestPushesOutage checks that a partner that answers with 5xx, garbage, slowly or not
// at all does not hold back the pushes to another, and gets what it missed once it is
// back.
func TestPushesOutage(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cn *chargenetUnderTest) {
		ctx := t.Context()
		good := registered(t, cn, true)
		bad := registered(t, cn, true)
		bad.SlowFor = 3 * time.Second // beyond the dispatcher's 2 s timeout
		power := 40.0
		for _, f := range []ocpitest.Failure{ocpitest.Refuse5xx, ocpitest.Garbage, ocpitest.Slow, ocpitest.Down} {
			bad.SetFailure(f)
			before := len(good.Pushes())
			for _, uid := range []int64{1001, 1003, 1005} {
				power++
				_, _, err := cn.rest.UpdateConnector(ctx, uid, 1, client.ConnectorPatch{MaxElectricPower: ptr(power)})
				require.NoError(t, err)
			}
			assert.True(t, good.WaitFor(2*time.Second, func() bool { return len(good.Pushes()) >= before+3 }),
				"failure %d: the good partner got its pushes while the other failed", f)
		}
		stats, err := cn.store.OutboxStats(ctx)
		require.NoError(t, err)
		assert.Positive(t, stats.PendingPushes, "the failing partner's pushes wait")

		bad.SetFailure(ocpitest.Healthy)
		cn.waitPushed(t, time.Minute)
		for _, id := range []string{"LOC-0001", "LOC-0002", "LOC-0003"} {
			want, ok := good.Locations()[id]
			require.True(t, ok, id)
			assert.Equal(t, want, bad.Locations()[id], "the partner that was down caught up on %s", id)
		}
		assert.Empty(t, good.Violations())
	})
}

// TestDeadTokenOnAnotherReplica checks that a token that died on one replica (token A,
// by the registration) is refused by another replica within its TokenCacheTTL, and
// trusted from its cache until then.
func TestDeadTokenOnAnotherReplica(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cn *chargenetUnderTest) {
		ctx := t.Context()
		const ttl = 30 * time.Second
		now := time.Now()
		clock := func() time.Time { return now }
		other, err := ocpi.New(ocpi.Config{Store: cn.store, Party: ocpi.Party{CountryCode: "NL", PartyID: "CNE", Name: "replica"},
			PublicURL: cn.url, TokenCacheTTL: ttl, Now: clock})
		require.NoError(t, err)
		tokenA, _, err := cn.svc.NewPartner(ctx, "emsp")
		require.NoError(t, err)
		header := []string{"Token " + base64.StdEncoding.EncodeToString([]byte(tokenA))}
		c, err := other.Authenticate(ctx, header)
		require.NoError(t, err)
		assert.True(t, c.Registration, "the other replica takes token A and keeps it")

		sim := ocpitest.New(false)
		defer sim.Close()
		require.NoError(t, sim.Register(ctx, cn.svc.VersionsURL(), tokenA), "registered on the first replica")

		now = now.Add(ttl / 2)
		_, err = other.Authenticate(ctx, header)
		assert.NoError(t, err, "within the TTL the other replica still trusts what it checked")
		now = now.Add(ttl/2 + time.Millisecond)
		_, err = other.Authenticate(ctx, header)
		var oe *ocpi.Error
		require.ErrorAs(t, err, &oe, "past the TTL token A is refused")
		assert.Equal(t, http.StatusUnauthorized, oe.HTTPStatus)
		c, err = other.Authenticate(ctx, []string{"Token " + base64.StdEncoding.EncodeToString([]byte(sim.Token()))})
		require.NoError(t, err)
		assert.True(t, c.Registered(), "the new token works there")
	})
}
