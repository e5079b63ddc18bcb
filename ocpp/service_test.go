package ocpp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/intake"
	"github.com/chargenet/chargenet/ocpp"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const password = "test-password-0123456789"

// env is a running OCPP service over an in-memory store holding the demo inventory,
// with charge boxes 501 (identity 501) and 502 (identity CB-502) registered, and its
// application path wired as chargenet serve wires it.
type env struct {
	t      *testing.T
	store  *sqlite.Store
	intake *intake.Service
	svc    *ocpp.Service
	url    string // ws://HOST:PORT/ocpp/
}

func start(t *testing.T, tune func(*ocpp.Config)) *env {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, ":memory:")
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	require.NoError(t, store.Import(ctx, chargenet.DemoInventory(time.Now())))
	for id, identity := range map[int64]string{501: "501", 502: "CB-502"} {
		_, err := store.RegisterChargebox(ctx, id, identity, chargenet.HashChargeboxPassword(password), time.Now())
		require.NoError(t, err)
	}
	var svc *ocpp.Service
	in, err := intake.New(intake.Config{Store: store, Deliver: func(id int64, owed []chargenet.AvailabilityRequest) {
		svc.Deliver(id, owed)
	}})
	require.NoError(t, err)
	cfg := ocpp.Config{Addr: "127.0.0.1:0", Store: store, Intake: in, Authorize: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if tune != nil {
		tune(&cfg)
	}
	svc, err = ocpp.New(cfg)
	require.NoError(t, err)
	addr, err := svc.Listen()
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- svc.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, svc.Close(ctx))
		assert.NoError(t, <-served)
	})
	return &env{t: t, store: store, intake: in, svc: svc, url: "ws://" + addr.String() + "/ocpp/"}
}

// box is a raw WebSocket client: it sends frames as written and reads what comes.
type box struct {
	t  *testing.T
	ws *websocket.Conn
	in chan string
	// closed receives the close code the server sent, once.
	closed chan int
}

func basic(user, pass string) http.Header {
	h := http.Header{}
	h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
	return h
}

// dial connects as identity with password over proto; it returns the HTTP status of a
// refused upgrade.
func (e *env) dial(identity, pass, proto string) (*box, int, error) {
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	if proto != "" {
		d.Subprotocols = []string{proto}
	}
	ws, resp, err := d.Dial(e.url+identity, basic(identity, pass))
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		return nil, status, err
	}
	b := &box{t: e.t, ws: ws, in: make(chan string, 100), closed: make(chan int, 1)}
	go func() {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				code := -1
				if ce, ok := err.(*websocket.CloseError); ok {
					code = ce.Code
				}
				b.closed <- code
				close(b.in)
				return
			}
			b.in <- string(data)
		}
	}()
	e.t.Cleanup(func() { _ = ws.Close() })
	return b, http.StatusSwitchingProtocols, nil
}

// changedBy returns the uids of the evse.status.changed events in the log whose actor
// is actor, in log order, checking that each carries actor in its data too. The log
// shows an event shortly after its commit.
func (e *env) changedBy(actor string) []int64 {
	e.t.Helper()
	events, err := e.store.ListEvents(context.Background(), chargenet.ChangeSeek[int64]{Limit: chargenet.MaxPageSize},
		[]string{chargenet.EventStatusChanged}, actor)
	require.NoError(e.t, err)
	uids := []int64{}
	for _, ev := range events {
		var d struct {
			UID   int64  `json:"uid"`
			Actor string `json:"actor"`
		}
		require.NoError(e.t, json.Unmarshal(ev.Data, &d))
		assert.Equal(e.t, actor, d.Actor, "event %s", ev.ID)
		uids = append(uids, d.UID)
	}
	return uids
}

// setStatus sets EVSE uid's status as the operator's PATCH does, and reports the change
// to the application path as the HTTP layer does.
func (e *env) setStatus(uid int64, st chargenet.EvseStatus) {
	e.t.Helper()
	now := time.Now()
	var before chargenet.EvseStatus
	changed, err := e.store.ChangeEVSE(context.Background(), uid, func(ev *chargenet.EVSE) ([]chargenet.Event, error) {
		before = ev.Status
		return ev.ApplyPatch(chargenet.EVSEPatch{Status: &st}, "", now)
	}, nil, "ops", now)
	require.NoError(e.t, err)
	e.intake.EVSEChanged(context.Background(), before, changed)
}

func (e *env) mustDial(identity, proto string) *box {
	e.t.Helper()
	b, status, err := e.dial(identity, password, proto)
	require.NoError(e.t, err, "status %d", status)
	require.Equal(e.t, proto, b.ws.Subprotocol())
	return b
}

// send writes a frame.
func (b *box) send(frame string) {
	b.t.Helper()
	require.NoError(b.t, b.ws.WriteMessage(websocket.TextMessage, []byte(frame)))
}

// next returns the next frame from the server.
func (b *box) next() string {
	b.t.Helper()
	select {
	case f, ok := <-b.in:
		require.True(b.t, ok, "the connection closed")
		return f
	case <-time.After(10 * time.Second):
		b.t.Fatal("no frame from the server in 10 s")
		return ""
	}
}

// call sends a frame and returns the next one.
func (b *box) call(frame string) string {
	b.t.Helper()
	b.send(frame)
	return b.next()
}

// callOK sends a CALL and requires its CALLRESULT, whose payload it returns.
func (b *box) callOK(id, action, payload string) map[string]any {
	b.t.Helper()
	got := b.call(fmt.Sprintf(`[2,%q,%q,%s]`, id, action, payload))
	var arr []json.RawMessage
	require.NoError(b.t, json.Unmarshal([]byte(got), &arr), got)
	require.Equal(b.t, `3`, string(arr[0]), "a CALLRESULT: %s", got)
	require.Equal(b.t, `"`+id+`"`, string(arr[1]), got)
	var out map[string]any
	require.NoError(b.t, json.Unmarshal(arr[2], &out))
	return out
}

// callError sends a frame and returns the code and id of the CALLERROR answering it.
func (b *box) callError(frame string) (id, code string) {
	b.t.Helper()
	got := b.call(frame)
	var arr []any
	require.NoError(b.t, json.Unmarshal([]byte(got), &arr), got)
	require.Len(b.t, arr, 5, got)
	require.EqualValues(b.t, 4, arr[0], "a CALLERROR: %s", got)
	return arr[1].(string), arr[2].(string)
}

const boot16 = `{"chargePointVendor":"ACME","chargePointModel":"Wallbox 22","chargePointSerialNumber":"SN-1","firmwareVersion":"1.4.2"}`
const boot201 = `{"reason":"PowerUp","chargingStation":{"vendorName":"ACME","model":"Station 2","serialNumber":"SN-2"}}`

func (e *env) evseStatus(uid int64) chargenet.EvseStatus {
	e.t.Helper()
	ev, err := e.store.EVSE(context.Background(), uid)
	require.NoError(e.t, err)
	return ev.Status
}

// eventually waits up to 10 s for cond.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 10*time.Millisecond, msg)
}

func TestUpgrade(t *testing.T) {
	e := start(t, nil)
	for _, tc := range []struct {
		name, identity, user, pass, proto string
		status                            int
	}{
		{"right credentials, 1.6", "501", "501", password, "ocpp1.6", 101},
		{"right credentials, 2.0.1", "CB-502", "CB-502", password, "ocpp2.0.1", 101},
		{"wrong password", "501", "501", "wrong-password-01234", "ocpp1.6", 401},
		{"another box's credentials", "501", "CB-502", password, "ocpp1.6", 401},
		{"unknown identity", "503", "503", password, "ocpp1.6", 401},
		{"no credentials", "501", "", "", "ocpp1.6", 401},
		{"no subprotocol", "501", "501", password, "", 400},
		{"unknown subprotocol", "501", "501", password, "ocpp1.5", 400},
		{"an identity that is no identity", "a%20b", "a b", password, "ocpp1.6", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
			if tc.proto != "" {
				d.Subprotocols = []string{tc.proto}
			}
			h := http.Header{}
			if tc.user != "" {
				h = basic(tc.user, tc.pass)
			}
			ws, resp, err := d.Dial(e.url+tc.identity, h)
			if tc.status == 101 {
				require.NoError(t, err)
				assert.Equal(t, tc.proto, ws.Subprotocol())
				_ = ws.Close()
				return
			}
			require.Error(t, err)
			require.NotNil(t, resp)
			assert.Equal(t, tc.status, resp.StatusCode)
			if tc.status == 401 {
				assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Basic")
			}
		})
	}
	t.Run("the box's order of preference decides", func(t *testing.T) {
		d := websocket.Dialer{Subprotocols: []string{"ocpp2.0.1", "ocpp1.6"}}
		ws, _, err := d.Dial(e.url+"501", basic("501", password))
		require.NoError(t, err)
		defer ws.Close()
		assert.Equal(t, "ocpp2.0.1", ws.Subprotocol())
	})
	c, err := e.store.Chargebox(context.Background(), 503)
	assert.Nil(t, c)
	assert.ErrorIs(t, err, chargenet.ErrNotFound, "a refused box leaves nothing behind")
}

func TestMessages16(t *testing.T) {
	e := start(t, nil)
	b := e.mustDial("501", "ocpp1.6")
	conf := b.callOK("1", "BootNotification", boot16)
	assert.Equal(t, "Accepted", conf["status"])
	assert.EqualValues(t, 300, conf["interval"])
	assert.NotEmpty(t, conf["currentTime"])
	box, err := e.store.Chargebox(context.Background(), 501)
	require.NoError(t, err)
	require.NotNil(t, box.Boot)
	assert.Equal(t, chargenet.BootInfo{Vendor: "ACME", Model: "Wallbox 22", SerialNumber: "SN-1", FirmwareVersion: "1.4.2", At: box.Boot.At}, *box.Boot)
	assert.True(t, box.Connected())
	assert.Equal(t, chargenet.ProtocolOCPP16, box.Protocol)

	assert.NotEmpty(t, b.callOK("2", "Heartbeat", `{}`)["currentTime"])
	// The CALLRESULT comes after the commit: the EVSE has the status when it arrives.
	b.callOK("3", "StatusNotification", `{"connectorId":1,"errorCode":"GroundFailure","status":"Faulted"}`)
	assert.Equal(t, chargenet.StatusOutOfOrder, e.evseStatus(1001))
	b.callOK("4", "StatusNotification", `{"connectorId":3,"errorCode":"NoError","status":"Charging"}`)
	assert.Equal(t, chargenet.StatusCharging, e.evseStatus(1002), "connector 3 is EVSE 1002's second")
	eventually(t, func() bool { return len(e.changedBy("chargebox:501")) > 0 }, "the change is in the log")
	assert.Equal(t, []int64{1001}, e.changedBy("chargebox:501"), "the box's notification has its actor (1002 was CHARGING)")
	assert.Equal(t, map[string]any{"idTagInfo": map[string]any{"status": "Accepted"}}, b.callOK("5", "Authorize", `{"idTag":"TAG-1"}`))
	start := b.callOK("6", "StartTransaction", `{"connectorId":1,"idTag":"TAG-1","meterStart":0,"timestamp":"2026-11-22T10:00:00Z"}`)
	assert.Greater(t, start["transactionId"], 0.0)
	assert.Equal(t, map[string]any{"status": "Accepted"}, start["idTagInfo"])
	assert.Equal(t, map[string]any{"idTagInfo": map[string]any{"status": "Accepted"}},
		b.callOK("7", "StopTransaction", `{"transactionId":5,"idTag":"TAG-1","meterStop":10,"timestamp":"2026-11-22T11:00:00Z"}`))
	assert.Empty(t, b.callOK("8", "MeterValues", `{"connectorId":1,"meterValue":[{"timestamp":"2026-11-22T10:30:00Z","sampledValue":[{"value":"5"}]}]}`))
	assert.Equal(t, map[string]any{"status": "UnknownVendorId"}, b.callOK("9", "DataTransfer", `{"vendorId":"com.example"}`))

	// Refusals of the domain are PropertyConstraintViolation, and the connection stays.
	_, code := b.callError(`[2,"10","StatusNotification",{"connectorId":9,"errorCode":"NoError","status":"Available"}]`)
	assert.Equal(t, "PropertyConstraintViolation", code)
	_, code = b.callError(`[2,"11","StatusNotification",{"connectorId":1,"errorCode":"NoError","status":"Available","timestamp":"2099-01-01T00:00:00Z"}]`)
	assert.Equal(t, "PropertyConstraintViolation", code)
	b.callOK("12", "Heartbeat", `{}`)
}

func TestMessages201(t *testing.T) {
	e := start(t, func(c *ocpp.Config) { c.Authorize = false })
	b := e.mustDial("CB-502", "ocpp2.0.1")
	assert.Equal(t, "Accepted", b.callOK("1", "BootNotification", boot201)["status"])
	now := time.Now().UTC().Format(time.RFC3339)
	evses, err := e.store.Chargebox(context.Background(), 502)
	require.NoError(t, err)
	require.Len(t, evses.EVSEUIDs, 2)
	b.callOK("2", "StatusNotification", `{"timestamp":"`+now+`","connectorStatus":"Occupied","evseId":2,"connectorId":1}`)
	assert.Equal(t, chargenet.StatusCharging, e.evseStatus(evses.EVSEUIDs[1]), "station EVSE 2 is the box's second EVSE")
	eventually(t, func() bool { return len(e.changedBy("chargebox:CB-502")) > 0 }, "the change is in the log")
	assert.Equal(t, []int64{evses.EVSEUIDs[1]}, e.changedBy("chargebox:CB-502"), "the box's notification has its actor")
	assert.Equal(t, map[string]any{"idTokenInfo": map[string]any{"status": "Invalid"}},
		b.callOK("3", "Authorize", `{"idToken":{"idToken":"TAG-1","type":"ISO14443"}}`), "--ocpp-authorize reject")
	assert.Equal(t, map[string]any{"idTokenInfo": map[string]any{"status": "Invalid"}},
		b.callOK("4", "TransactionEvent", `{"eventType":"Started","timestamp":"`+now+`","triggerReason":"Authorized","seqNo":0,`+
			`"transactionInfo":{"transactionId":"T-1"},"idToken":{"idToken":"TAG-1","type":"ISO14443"}}`))
	assert.Empty(t, b.callOK("5", "TransactionEvent", `{"eventType":"Updated","timestamp":"`+now+`","triggerReason":"MeterValuePeriodic","seqNo":1,`+
		`"transactionInfo":{"transactionId":"T-1"}}`))
	assert.Empty(t, b.callOK("6", "MeterValues", `{"evseId":1,"meterValue":[{"timestamp":"`+now+`","sampledValue":[{"value":5}]}]}`))
	assert.Equal(t, map[string]any{"status": "UnknownVendorId"}, b.callOK("7", "DataTransfer", `{"vendorId":"com.example"}`))
	assert.NotEmpty(t, b.callOK("8", "Heartbeat", `{}`)["currentTime"])
	assert.Empty(t, b.callOK("9", "NotifyReport", `{"requestId":1,"generatedAt":"`+now+`","seqNo":0}`))
}

// TestFrames sends what a broken box sends and checks each CALLERROR, and that the same
// connection still answers afterwards.
func TestFrames(t *testing.T) {
	e := start(t, nil)
	for _, v := range []struct {
		proto, typeCode, framing, occurrence string
	}{
		{"ocpp1.6", "FormationViolation", "FormationViolation", "OccurenceConstraintViolation"},
		{"ocpp2.0.1", "MessageTypeNotSupported", "RpcFrameworkError", "OccurrenceConstraintViolation"},
	} {
		t.Run(v.proto, func(t *testing.T) {
			b := e.mustDial("501", v.proto)
			for _, tc := range []struct {
				name, frame, id, code string
			}{
				{"not JSON", `hello`, "-1", v.framing},
				{"not an array", `{"a":1}`, "-1", v.framing},
				{"too short", `[2,"m1"]`, "-1", v.framing},
				{"id not a string", `[2,123,"Heartbeat",{}]`, "-1", v.framing},
				{"empty id", `[2,"","Heartbeat",{}]`, "-1", v.framing},
				{"id over 36 characters", `[2,"` + strings.Repeat("x", 37) + `","Heartbeat",{}]`, "-1", v.framing},
				{"CALL without payload", `[2,"m2","Heartbeat"]`, "m2", v.framing},
				{"unknown message type", `[9,"m3","Heartbeat",{}]`, "m3", v.typeCode},
				{"payload not an object", `[2,"m4","Heartbeat",[]]`, "m4", "TypeConstraintViolation"},
				{"unknown action", `[2,"m5","FooBar",{}]`, "m5", "NotImplemented"},
				{"an action not served", `[2,"m6","SignCertificate",{"csr":"x"}]`, "m6", "NotSupported"},
				{"required field missing", `[2,"m7","StatusNotification",{"connectorId":1}]`, "m7", v.occurrence},
				{"wrong JSON type", `[2,"m8","Authorize",{"idTag":7,"idToken":7}]`, "m8", "TypeConstraintViolation"},
				{"value not in the enum", `[2,"m9","DataTransfer",{"vendorId":"` + strings.Repeat("v", 300) + `"}]`, "m9", "PropertyConstraintViolation"},
			} {
				id, code := b.callError(tc.frame)
				assert.Equal(t, tc.id, id, tc.name)
				assert.Equal(t, tc.code, code, tc.name)
				assert.NotEmpty(t, b.callOK("hb", "Heartbeat", `{}`)["currentTime"], "still answering after %s", tc.name)
			}
		})
	}
}

// TestBadEnum sends a status OCPP does not define.
func TestBadEnum(t *testing.T) {
	e := start(t, nil)
	b := e.mustDial("501", "ocpp1.6")
	_, code := b.callError(`[2,"1","StatusNotification",{"connectorId":1,"errorCode":"NoError","status":"Sleeping"}]`)
	assert.Equal(t, "PropertyConstraintViolation", code)
	b2 := e.mustDial("CB-502", "ocpp2.0.1")
	_, code = b2.callError(`[2,"1","StatusNotification",{"timestamp":"2026-11-22T10:00:00Z","connectorStatus":"Charging","evseId":1,"connectorId":1}]`)
	assert.Equal(t, "PropertyConstraintViolation", code)
}

func TestLimits(t *testing.T) {
	e := start(t, func(c *ocpp.Config) { c.MaxMessage = 4096; c.HandshakeTimeout = 500 * time.Millisecond })
	t.Run("a frame over the limit closes with 1009", func(t *testing.T) {
		b := e.mustDial("501", "ocpp1.6")
		b.send(`[2,"1","DataTransfer",{"vendorId":"v","data":"` + strings.Repeat("x", 5000) + `"}]`)
		select {
		case code := <-b.closed:
			assert.Equal(t, websocket.CloseMessageTooBig, code)
		case <-time.After(5 * time.Second):
			t.Fatal("not closed")
		}
	})
	t.Run("an upgrade that never completes times out", func(t *testing.T) {
		addr := strings.TrimSuffix(strings.TrimPrefix(e.url, "ws://"), "/ocpp/")
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Write([]byte("GET /ocpp/501 HTTP/1.1\r\nHost: x\r\n"))
		require.NoError(t, err)
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = io.ReadAll(c)
		require.NoError(t, err, "the server closed the connection")
		assert.Less(t, time.Since(start), 3*time.Second)
	})
}

// TestSecondConnectionReplaces connects a box twice: the second replaces the first.
func TestSecondConnectionReplaces(t *testing.T) {
	e := start(t, nil)
	first := e.mustDial("501", "ocpp1.6")
	first.callOK("1", "BootNotification", boot16)
	second := e.mustDial("501", "ocpp2.0.1")
	select {
	case code := <-first.closed:
		assert.Equal(t, websocket.ClosePolicyViolation, code)
	case <-time.After(5 * time.Second):
		t.Fatal("the first connection stayed")
	}
	second.callOK("1", "BootNotification", boot201)
	box, err := e.store.Chargebox(context.Background(), 501)
	require.NoError(t, err)
	assert.True(t, box.Connected())
	assert.Equal(t, chargenet.ProtocolOCPP201, box.Protocol)
	assert.Equal(t, 1, e.svc.Connected())
	assert.NotEqual(t, chargenet.StatusUnknown, e.evseStatus(1001), "a replaced connection does not end the box's")
}

// TestDisconnect closes a box's connection and waits for its EVSEs to turn UNKNOWN; a
// silent box is closed after the offline timeout.
func TestDisconnect(t *testing.T) {
	e := start(t, func(c *ocpp.Config) { c.OfflineAfter = 2 * time.Second })
	b := e.mustDial("501", "ocpp1.6")
	b.callOK("1", "StatusNotification", `{"connectorId":0,"errorCode":"NoError","status":"Available"}`)
	require.Equal(t, chargenet.StatusAvailable, e.evseStatus(1001))
	require.NoError(t, b.ws.Close())
	eventually(t, func() bool { return e.evseStatus(1001) == chargenet.StatusUnknown }, "EVSE 1001 UNKNOWN after the close")
	eventually(t, func() bool { return e.evseStatus(1002) == chargenet.StatusUnknown }, "EVSE 1002 UNKNOWN after the close")
	eventually(t, func() bool { return len(e.changedBy("chargebox:501")) >= 3 }, "the changes are in the log")
	assert.Equal(t, []int64{1002, 1001, 1002}, e.changedBy("chargebox:501"),
		"the notification's change (1002 was CHARGING) and the connection's two have the box's actor")

	// A box that answers nothing, not even pings, is closed after the offline timeout.
	d := websocket.Dialer{Subprotocols: []string{"ocpp2.0.1"}}
	ws, _, err := d.Dial(e.url+"CB-502", basic("CB-502", password))
	require.NoError(t, err)
	defer ws.Close()
	ws.SetPingHandler(func(string) error { return nil }) // no pong
	begin := time.Now()
	var readErr error
	for readErr == nil {
		_, _, readErr = ws.ReadMessage()
	}
	assert.InDelta(t, 2.0, time.Since(begin).Seconds(), 1.0, "closed after the offline timeout: %v", readErr)
	box, err := e.store.Chargebox(context.Background(), 502)
	require.NoError(t, err)
	eventually(t, func() bool {
		box, err = e.store.Chargebox(context.Background(), 502)
		return err == nil && !box.Connected()
	}, "502's connection recorded as ended")
}

// TestChangeAvailability sets an EVSE INOPERATIVE and back and answers the box's requests.
func TestChangeAvailability(t *testing.T) {
	e := start(t, nil)
	b16 := e.mustDial("501", "ocpp1.6")
	b16.callOK("1", "BootNotification", boot16)
	b201 := e.mustDial("CB-502", "ocpp2.0.1")
	b201.callOK("1", "BootNotification", boot201)
	set := func(uid int64, st chargenet.EvseStatus) { e.setStatus(uid, st) }
	// answer reads a ChangeAvailability CALL and answers it with status.
	answer := func(b *box, status string) []any {
		var arr []any
		require.NoError(t, json.Unmarshal([]byte(b.next()), &arr))
		require.EqualValues(t, 2, arr[0])
		require.Equal(t, "ChangeAvailability", arr[2])
		b.send(fmt.Sprintf(`[3,%q,{"status":%q}]`, arr[1], status))
		return arr
	}
	set(1002, chargenet.StatusInoperative)
	got := []any{answer(b16, "Accepted")[3], answer(b16, "Scheduled")[3]}
	assert.ElementsMatch(t, []any{
		map[string]any{"connectorId": 2.0, "type": "Inoperative"},
		map[string]any{"connectorId": 3.0, "type": "Inoperative"},
	}, got, "1.6: each of EVSE 1002's connectors (box-wide numbers 2 and 3)")
	availability := func(id int64) []chargenet.AvailabilityRequest {
		box, err := e.store.Chargebox(context.Background(), id)
		require.NoError(t, err)
		return box.Availability
	}
	eventually(t, func() bool { a := availability(501); return len(a) == 1 && a[0].Answer == chargenet.AnswerScheduled },
		"Scheduled when any connector scheduled")

	box502, err := e.store.Chargebox(context.Background(), 502)
	require.NoError(t, err)
	set(box502.EVSEUIDs[1], chargenet.StatusInoperative)
	req := answer(b201, "Rejected")
	assert.Equal(t, map[string]any{"operationalStatus": "Inoperative", "evse": map[string]any{"id": 2.0}}, req[3])
	eventually(t, func() bool { a := availability(502); return len(a) == 1 && a[0].Answer == chargenet.AnswerRejected }, "Rejected")

	set(1002, chargenet.StatusAvailable)
	answer(b16, "Accepted")
	answer(b16, "Accepted")
	eventually(t, func() bool {
		a := availability(501)
		return len(a) == 1 && a[0].State == chargenet.Operative && a[0].Answer == chargenet.AnswerAccepted
	}, "Operative accepted")
}

// TestOwedOnReconnect changes availability while the box is away: it is asked when it
// comes back.
func TestOwedOnReconnect(t *testing.T) {
	e := start(t, nil)
	e.setStatus(1001, chargenet.StatusInoperative)
	box, err := e.store.Chargebox(context.Background(), 501)
	require.NoError(t, err)
	require.Len(t, box.Availability, 1)
	assert.Equal(t, chargenet.AnswerPending, box.Availability[0].Answer, "pending while the box is away")
	b := e.mustDial("501", "ocpp1.6")
	var arr []any
	require.NoError(t, json.Unmarshal([]byte(b.next()), &arr))
	assert.Equal(t, "ChangeAvailability", arr[2])
	assert.Equal(t, map[string]any{"connectorId": 1.0, "type": "Inoperative"}, arr[3])
}

// TestFloodThrottled floods from one box while another measures its latency.
func TestFloodThrottled(t *testing.T) {
	e := start(t, func(c *ocpp.Config) { c.Rate, c.Burst = 50, 10 })
	other := e.mustDial("CB-502", "ocpp2.0.1")
	measure := func(n int) time.Duration {
		var worst time.Duration
		for i := range n {
			time.Sleep(10 * time.Millisecond)
			t0 := time.Now()
			other.callOK(fmt.Sprint("o", i), "Heartbeat", `{}`)
			worst = max(worst, time.Since(t0))
		}
		return worst
	}
	flood := e.mustDial("501", "ocpp1.6")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = flood.ws.SetWriteDeadline(time.Now().Add(time.Second))
			if flood.ws.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`[2,"f%d","Heartbeat",{}]`, i))) != nil {
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	worst := measure(50)
	answered := 0
	deadline := time.After(time.Second)
count:
	for {
		select {
		case <-flood.in:
			answered++
		case <-deadline:
			break count
		}
	}
	close(stop)
	wg.Wait()
	assert.Less(t, worst, 500*time.Millisecond, "the other box is not slowed")
	assert.Less(t, answered, 120, "the flooder gets about its rate (50/s), not what it sends")
}
