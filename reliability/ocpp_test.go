package reliability

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet/internal/proctest"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chargeboxView is the part of GET /v2/chargeboxes/{id} the tests read.
type chargeboxView struct {
	Connected bool   `json:"connected"`
	Protocol  string `json:"protocol"`
	Boot      *struct {
		Vendor, Model, SerialNumber, FirmwareVersion string
	} `json:"boot"`
	EvseUids     []int64 `json:"evseUids"`
	Availability []struct {
		EvseUid int64  `json:"evseUid"`
		State   string `json:"state"`
		Answer  string `json:"answer"`
	} `json:"availability"`
}

func (a *api) chargebox(t *testing.T, id int64) chargeboxView {
	t.Helper()
	res, err := a.do(http.MethodGet, fmt.Sprintf("/v2/chargeboxes/%d", id), "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var c chargeboxView
	require.NoError(t, json.Unmarshal(res.body, &c))
	return c
}

func (a *api) evseStatus(t *testing.T, uid int64) string {
	t.Helper()
	res, err := a.do(http.MethodGet, fmt.Sprintf("/v2/evses/%d", uid), "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var e struct{ Status string }
	require.NoError(t, json.Unmarshal(res.body, &e))
	return e.Status
}

// TestOCPPChargeBox drives the real binary with a charge box simulated on ocpp-go's
// charge-point side, over OCPP 1.6 and 2.0.1, on SQLite and PostgreSQL: registration
// through the command line, boot, a status notification seen through the REST API, the
// event log and a webhook, ChangeAvailability answered, and the EVSEs turning UNKNOWN
// when the box disconnects.
func TestOCPPChargeBox(t *testing.T) {
	for _, b := range backends() {
		for _, proto := range []string{"ocpp1.6", "ocpp2.0.1"} {
			t.Run(b.name+"/"+proto, func(t *testing.T) {
				t.Parallel()
				db := b.database(t)
				srv, base := ocppServe(t, db, "--ocpp-heartbeat", "2m")
				a := newAPI(srv.Base, true)
				hooks := newHookEvents(t)
				res, err := a.do(http.MethodPost, "/emsp/v1/webhooks", `{"url": "`+hooks.URL+`/hooks", "event_types": [`+
					`{"type": "evse.status.changed"}, {"type": "chargebox.connected"}, {"type": "chargebox.disconnected"}]}`)
				require.NoError(t, err)
				require.Equal(t, http.StatusCreated, res.status, string(res.body))
				password := registerBox(t, db, 501, "CB-501") // replaces the demo's development password

				box, err := dialSim(base, "CB-501", password, proto, nil)
				require.NoError(t, err)
				box.boot(t, 120)
				c := a.chargebox(t, 501)
				assert.True(t, c.Connected)
				assert.Equal(t, proto, c.Protocol)
				require.NotNil(t, c.Boot)
				assert.Equal(t, "ACME", c.Boot.Vendor)
				assert.Equal(t, []int64{1001, 1002}, c.EvseUids)

				// Connector 1 of the box is EVSE 1001's only connector: 1.6 number 1, 2.0.1
				// EVSE 1 connector 1. Its status is in the API when the CALLRESULT comes.
				fault := map[string]string{"ocpp1.6": "Faulted", "ocpp2.0.1": "Faulted"}[proto]
				require.NoError(t, box.status(1, 1, fault, time.Now()))
				assert.Equal(t, "OUTOFORDER", a.evseStatus(t, 1001))
				assert.True(t, eventually(10*time.Second, func() bool { // PostgreSQL: once earlier transactions ended
					res, err := a.do(http.MethodGet, "/emsp/v1/events?type=evse.status.changed", "")
					require.NoError(t, err)
					return strings.Contains(string(res.body), `"ocppStatus":"Faulted"`)
				}), "the event log holds the notification's event")
				assert.True(t, eventually(10*time.Second, func() bool {
					return hooks.has("chargebox.connected", `"protocol":"`+proto+`"`, `"actor":"chargebox:CB-501"`) &&
						hooks.has("evse.status.changed", `"uid":1001`, `"status":"OUTOFORDER"`, `"source":"chargebox"`,
							`"actor":"chargebox:CB-501"`)
				}), "webhooks: chargebox.connected and the status change")

				// A box notification with a connector it does not have is refused with a CALLERROR.
				assert.Error(t, box.status(3, 9, "Available", time.Now()), "no EVSE 3 (2.0.1), no connector 9 (1.6)")

				// The operator sets EVSE 1002 INOPERATIVE: the box is asked.
				box.setAnswer("Accepted")
				res, err = a.do(http.MethodPatch, "/v2/evses/1002", `{"status": "INOPERATIVE"}`)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, res.status, string(res.body))
				var asked []string
				want := map[string][]string{"ocpp1.6": {"connector 2 Inoperative", "connector 3 Inoperative"},
					"ocpp2.0.1": {"evse 2 Inoperative"}}[proto]
				for range want {
					select {
					case a := <-box.asked:
						asked = append(asked, a)
					case <-time.After(15 * time.Second):
						t.Fatalf("ChangeAvailability not received; got %v\nserver log:\n%s", asked, srv.Log())
					}
				}
				assert.ElementsMatch(t, want, asked)
				assert.True(t, eventually(10*time.Second, func() bool {
					c := a.chargebox(t, 501)
					return len(c.Availability) == 1 && c.Availability[0].Answer == "Accepted" && c.Availability[0].State == "Inoperative"
				}), "the answer is shown")

				box.stop()
				assert.True(t, eventually(10*time.Second, func() bool { return a.evseStatus(t, 1001) == "UNKNOWN" }),
					"the EVSE in service turns UNKNOWN when the box disconnects")
				assert.Equal(t, "INOPERATIVE", a.evseStatus(t, 1002), "the operator's INOPERATIVE stays")
				assert.False(t, a.chargebox(t, 501).Connected)
				assert.True(t, eventually(10*time.Second, func() bool {
					return hooks.has("chargebox.disconnected", `"reason":"closed"`) &&
						hooks.has("evse.status.changed", `"uid":1001`, `"status":"UNKNOWN"`, `"source":"connection"`,
							`"actor":"chargebox:CB-501"`)
				}), "webhooks: chargebox.disconnected and the connection's status change")
			})
		}
	}
}

// TestOCPPAuthAndRevoke checks the upgrade's refusals through the real binary, and that
// revoking a connected box closes its connection.
func TestOCPPAuthAndRevoke(t *testing.T) {
	db := sqliteBackend().database(t)
	_, base := ocppServe(t, db)
	password := registerBox(t, db, 503, "503")
	url := base + "/503"
	dial := func(user, pass string) (*websocket.Conn, int) {
		d := websocket.Dialer{Subprotocols: []string{"ocpp1.6"}}
		h := http.Header{}
		req, _ := http.NewRequest(http.MethodGet, "http://x", nil)
		req.SetBasicAuth(user, pass)
		h.Set("Authorization", req.Header.Get("Authorization"))
		c, res, err := d.Dial(url, h)
		if err != nil {
			if res == nil {
				return nil, 0
			}
			return nil, res.StatusCode
		}
		return c, http.StatusSwitchingProtocols
	}
	_, status := dial("503", "wrong-password-0123456")
	assert.Equal(t, http.StatusUnauthorized, status)
	_, status = dial("504", password)
	assert.Equal(t, http.StatusUnauthorized, status)
	// closed waits until the server closes c and checks the close code.
	closed := func(c *websocket.Conn, why string) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var err error
		for err == nil {
			_, _, err = c.ReadMessage()
		}
		var ce *websocket.CloseError
		require.ErrorAs(t, err, &ce, why)
		assert.Equal(t, websocket.ClosePolicyViolation, ce.Code, why)
	}
	c, status := dial("503", password)
	require.Equal(t, http.StatusSwitchingProtocols, status)
	defer c.Close()
	renewed := registerBox(t, db, 503, "503")
	closed(c, "a new password closes the connection within the epoch's poll")
	_, status = dial("503", password)
	assert.Equal(t, http.StatusUnauthorized, status, "the old password no longer works")
	c, status = dial("503", renewed)
	require.Equal(t, http.StatusSwitchingProtocols, status)
	defer c.Close()
	out, err := runBinary(t, "chargebox", "revoke", "--database", db, "--id", "503")
	require.NoError(t, err, out)
	closed(c, "revoking closes the connection within the epoch's poll")
	_, status = dial("503", renewed)
	assert.Equal(t, http.StatusUnauthorized, status, "a revoked box cannot connect")
}

// runBinary runs the binary with args and returns its combined output.
func runBinary(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(proctest.Binary(t), args...).CombinedOutput()
	return string(out), err
}

// TestOCPPTLS serves wss:// with a certificate the test makes.
func TestOCPPTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	db := sqliteBackend().database(t)
	_, base := ocppServe(t, db, "--ocpp-tls-cert", certFile, "--ocpp-tls-key", keyFile)
	base = strings.Replace(base, "ws://", "wss://", 1)
	password := registerBox(t, db, 501, "501")
	for _, proto := range []string{"ocpp1.6", "ocpp2.0.1"} {
		box, err := dialSim(base, "501", password, proto, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
		require.NoError(t, err, proto)
		box.boot(t, 300)
		box.stop()
	}
	// Plain ws:// is not served on the TLS listener.
	_, err := dialSim(strings.Replace(base, "wss://", "ws://", 1), "501", password, "ocpp1.6", nil)
	assert.Error(t, err)
}

// selfSigned writes a self-signed P-256 certificate for 127.0.0.1 and its key under
// dir, and returns their paths and a pool trusting it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "chargenet test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestOCPPReplicas connects a box to one PostgreSQL replica and sets its EVSE
// INOPERATIVE through the other: the replica holding the connection sends the
// ChangeAvailability.
func TestOCPPReplicas(t *testing.T) {
	db := postgresBackend().database(t)
	a, baseA := ocppServe(t, db)
	b, _ := ocppServe(t, db)
	password := registerBox(t, db, 501, "501")
	box, err := dialSim(baseA, "501", password, "ocpp1.6", nil)
	require.NoError(t, err)
	defer box.stop()
	box.boot(t, 300)
	viaB := newAPI(b.Base, true)
	assert.True(t, viaB.chargebox(t, 501).Connected, "replica B sees the connection A holds")
	res, err := viaB.do(http.MethodPatch, "/v2/evses/1001", `{"status": "INOPERATIVE"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	start := time.Now()
	select {
	case got := <-box.asked:
		assert.Equal(t, "connector 1 Inoperative", got)
		t.Logf("ChangeAvailability reached the box through replica A %s after the PATCH through B", time.Since(start).Round(time.Millisecond))
		assert.Less(t, time.Since(start), 5*time.Second, "routed by the database's notification, not the 30 s sweep")
	case <-time.After(20 * time.Second):
		t.Fatalf("the box was not asked\nreplica A:\n%s\nreplica B:\n%s", a.Log(), b.Log())
	}
	assert.True(t, eventually(10*time.Second, func() bool {
		c := viaB.chargebox(t, 501)
		return len(c.Availability) == 1 && c.Availability[0].Answer == "Accepted"
	}))
}

// TestOCPPReplicasReplace connects a box to one PostgreSQL replica and then again to the
// other: the first replica closes the old connection (1008) within seconds, and the box
// stays connected, its EVSEs as it reported them.
func TestOCPPReplicasReplace(t *testing.T) {
	db := postgresBackend().database(t)
	a, baseA := ocppServe(t, db)
	b, baseB := ocppServe(t, db)
	password := registerBox(t, db, 501, "501")
	first := rawDial(t, baseA+"/501", "501", password)
	call(t, first, `[2,"1","StatusNotification",{"connectorId":0,"errorCode":"NoError","status":"Available"}]`)
	second := rawDial(t, baseB+"/501", "501", password)
	start := time.Now()
	_ = first.SetReadDeadline(time.Now().Add(10 * time.Second))
	var err error
	for err == nil {
		_, _, err = first.ReadMessage()
	}
	var ce *websocket.CloseError
	require.ErrorAs(t, err, &ce, "replica A closes the replaced connection\nA:\n%s\nB:\n%s", a.Log(), b.Log())
	assert.Equal(t, websocket.ClosePolicyViolation, ce.Code)
	t.Logf("replica A closed the replaced connection %s after the box connected to B", time.Since(start).Round(time.Millisecond))
	assert.Less(t, time.Since(start), 5*time.Second)
	call(t, second, `[2,"2","Heartbeat",{}]`)
	viaB := newAPI(b.Base, true)
	assert.True(t, viaB.chargebox(t, 501).Connected)
	assert.Equal(t, "AVAILABLE", viaB.evseStatus(t, 1001), "a replaced connection does not end the box's")
}

// rawDial opens a WebSocket (subprotocol ocpp1.6) to url with Basic auth, closed when
// the test ends.
func rawDial(t *testing.T, url, user, password string) *websocket.Conn {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	req.SetBasicAuth(user, password)
	d := websocket.Dialer{Subprotocols: []string{"ocpp1.6"}, HandshakeTimeout: 5 * time.Second}
	c, _, err := d.Dial(url, http.Header{"Authorization": req.Header["Authorization"]})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// call sends frame (a CALL) on c and requires its CALLRESULT.
func call(t *testing.T, c *websocket.Conn, frame string) {
	t.Helper()
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(frame)))
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, data, err := c.ReadMessage()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(data), "[3,"), "a CALLRESULT: %s", data)
}

// TestOCPPCrash kills the server with -9 while boxes send status notifications, starts
// it again, and checks that every notification that got its CALLRESULT before or after
// the kill is in the event log; the boxes reconnect and are served again.
func TestOCPPCrash(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			db := b.database(t)
			addr := proctest.FreeAddr(t)
			args := []string{"--ocpp-addr", addr}
			srv := serve(t, db, args...)
			const boxes = 8
			passwords := make([]string, boxes)
			for i := range boxes {
				passwords[i] = registerBox(t, db, int64(501+i), fmt.Sprint(501+i))
			}
			base := "ws://" + addr + "/ocpp/"
			type ack struct {
				box    int64
				n      int
				status string
				at     time.Time
			}
			var mu sync.Mutex
			var acked []ack
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for i := range boxes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := int64(501 + i)
					statuses := []string{"Available", "Charging"}
					n := 0
					for {
						select {
						case <-stop:
							return
						default:
						}
						d := websocket.Dialer{Subprotocols: []string{"ocpp1.6"}, HandshakeTimeout: 2 * time.Second}
						req, _ := http.NewRequest(http.MethodGet, "http://x", nil)
						req.SetBasicAuth(fmt.Sprint(id), passwords[i])
						c, _, err := d.Dial(base+fmt.Sprint(id), http.Header{"Authorization": req.Header["Authorization"]})
						if err != nil {
							time.Sleep(50 * time.Millisecond)
							continue // the server is down: try again
						}
						for {
							// Each notification is newer than the last and carries a new info, so
							// each one applied changes the EVSE: an event either way.
							n++
							at := time.Now().UTC().Truncate(time.Microsecond)
							st := statuses[n%2]
							frame := fmt.Sprintf(`[2,"%d","StatusNotification",{"connectorId":1,"errorCode":"OtherError",`+
								`"info":"n%d","status":%q,"timestamp":%q}]`, n, n, st, at.Format(time.RFC3339Nano))
							_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
							_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
							if c.WriteMessage(websocket.TextMessage, []byte(frame)) != nil {
								break
							}
							_, data, err := c.ReadMessage()
							if err != nil {
								break
							}
							if strings.HasPrefix(string(data), fmt.Sprintf(`[3,"%d"`, n)) {
								mu.Lock()
								acked = append(acked, ack{id, n, st, at})
								mu.Unlock()
							}
							select {
							case <-stop:
								_ = c.Close()
								return
							default:
							}
						}
						_ = c.Close()
					}
				}()
			}
			time.Sleep(1500 * time.Millisecond)
			srv.Kill()
			mu.Lock()
			before := len(acked)
			mu.Unlock()
			require.Positive(t, before, "notifications were acknowledged before the kill")
			srv = serve(t, db, args...)
			require.True(t, eventually(20*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(acked) > before+boxes*5
			}), "the boxes reconnected and were answered; server log:\n%s", srv.Log())
			close(stop)
			wg.Wait()

			a := newAPI(srv.Base, true)
			// lostAcks reads the log and returns the acknowledged notifications without an event.
			lostAcks := func() []ack {
				logged := map[string]bool{} // "box reportedAt" of status changes, "box info" of error changes
				cursor := ""
				for {
					res, err := a.do(http.MethodGet, "/emsp/v1/events?type=evse.status.changed&type=evse.updated&limit=100"+cursor, "")
					require.NoError(t, err)
					var page struct {
						Data []struct {
							Type string `json:"type"`
							Data struct {
								ChargeboxID int64  `json:"chargeboxId"`
								ReportedAt  string `json:"reportedAt"`
								EVSE        struct {
									Connectors []struct {
										Error *struct{ Info string } `json:"error"`
									} `json:"connectors"`
								} `json:"evse"`
							} `json:"data"`
						} `json:"data"`
						Pagination struct {
							NextCursor *string `json:"next_cursor"`
						} `json:"pagination"`
					}
					require.NoError(t, json.Unmarshal(res.body, &page))
					for _, e := range page.Data {
						if e.Type == "evse.status.changed" {
							at, err := time.Parse(time.RFC3339Nano, e.Data.ReportedAt)
							require.NoError(t, err)
							logged[fmt.Sprint(e.Data.ChargeboxID, " ", at.UnixMicro())] = true
							continue
						}
						if cs := e.Data.EVSE.Connectors; len(cs) > 0 && cs[0].Error != nil {
							logged[fmt.Sprint(e.Data.ChargeboxID, " ", cs[0].Error.Info)] = true
						}
					}
					if page.Pagination.NextCursor == nil {
						break
					}
					cursor = "&cursor=" + *page.Pagination.NextCursor
				}
				var lost []ack
				for _, k := range acked {
					if !logged[fmt.Sprint(k.box, " ", k.at.UnixMicro())] && !logged[fmt.Sprint(k.box, " n", k.n)] {
						lost = append(lost, k)
					}
				}
				return lost
			}
			// On PostgreSQL the log shows a change once the transactions before it ended.
			var lost []ack
			eventually(10*time.Second, func() bool { lost = lostAcks(); return len(lost) == 0 })
			for _, k := range lost {
				t.Logf("lost: box %d notification %d (%s at %s)", k.box, k.n, k.status, k.at.Format(time.RFC3339Nano))
			}
			t.Logf("%d notifications acknowledged (%d before the kill), %d lost", len(acked), before, len(lost))
			assert.Empty(t, lost, "an acknowledged notification is never lost")
		})
	}
}

// TestOCPPBoxGoneAfterRestart kills the server while a box is connected; the box does
// not come back, so after the offline timeout the restarted server turns its EVSEs
// UNKNOWN. A box that does come back keeps its EVSEs.
func TestOCPPBoxGoneAfterRestart(t *testing.T) {
	db := sqliteBackend().database(t)
	addr := proctest.FreeAddr(t)
	args := []string{"--ocpp-addr", addr, "--ocpp-offline-after", "2s"}
	srv := serve(t, db, args...)
	base := "ws://" + addr + "/ocpp"
	gone := registerBox(t, db, 501, "501")
	back := registerBox(t, db, 502, "502")
	boxGone, err := dialSim(base, "501", gone, "ocpp1.6", nil)
	require.NoError(t, err)
	require.NoError(t, boxGone.status(0, 0, "Available", time.Now()))
	boxBack, err := dialSim(base, "502", back, "ocpp2.0.1", nil)
	require.NoError(t, err)
	require.NoError(t, boxBack.status(0, 0, "Available", time.Now()))
	srv.Kill()
	boxGone.stop()
	boxBack.stop()
	srv = serve(t, db, args...)
	a := newAPI(srv.Base, true)
	assert.Equal(t, "AVAILABLE", a.evseStatus(t, 1001), "not before the offline timeout")
	boxBack, err = dialSim(base, "502", back, "ocpp2.0.1", nil)
	require.NoError(t, err)
	defer boxBack.stop()
	start := time.Now()
	require.True(t, eventually(15*time.Second, func() bool { return a.evseStatus(t, 1001) == "UNKNOWN" }),
		"the box that did not come back: its EVSEs turn UNKNOWN\n%s", srv.Log())
	t.Logf("EVSE 1001 UNKNOWN %s after the restart", time.Since(start).Round(100*time.Millisecond))
	assert.False(t, a.chargebox(t, 501).Connected)
	assert.True(t, a.chargebox(t, 502).Connected)
	uids := a.chargebox(t, 502).EvseUids
	assert.Equal(t, "AVAILABLE", a.evseStatus(t, uids[0]), "the box that came back keeps its EVSEs")
}
