package ocpp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/ocpp"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/gorilla/websocket"
)

// fuzzTarget is one service per fuzzing process, with boxes 501 and 502 registered.
var fuzzTarget struct {
	once sync.Once
	url  string
	err  error
}

func fuzzURL() (string, error) {
	fuzzTarget.once.Do(func() {
		ctx := context.Background()
		store, err := sqlite.Open(ctx, ":memory:")
		if err != nil {
			fuzzTarget.err = err
			return
		}
		if err := store.Import(ctx, chargenet.DemoInventory(time.Now())); err != nil {
			fuzzTarget.err = err
			return
		}
		for _, id := range []int64{501, 502} {
			if _, err := store.RegisterChargebox(ctx, id, fmt.Sprint(id), chargenet.HashChargeboxPassword(password), time.Now()); err != nil {
				fuzzTarget.err = err
				return
			}
		}
		svc, err := ocpp.New(ocpp.Config{Addr: "127.0.0.1:0", Store: store, Rate: 1e6, Burst: 1e6,
			MaxMessage: 16 << 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			fuzzTarget.err = err
			return
		}
		addr, err := svc.Listen()
		if err != nil {
			fuzzTarget.err = err
			return
		}
		go func() { _ = svc.Serve() }()
		fuzzTarget.url = "ws://" + addr.String() + "/ocpp/"
	})
	return fuzzTarget.url, fuzzTarget.err
}

// fuzzConns are the fuzzing process's connections, by subprotocol, dialled again when
// a frame closed one.
var fuzzConns = map[string]*websocket.Conn{}

func fuzzConn(t *testing.T, proto string) *websocket.Conn {
	if c := fuzzConns[proto]; c != nil {
		return c
	}
	url, err := fuzzURL()
	if err != nil {
		t.Fatal(err)
	}
	identity := "501" // one box per version: a second connection of a box replaces the first
	if proto == chargenet.ProtocolOCPP201 {
		identity = "502"
	}
	d := websocket.Dialer{Subprotocols: []string{proto}, HandshakeTimeout: 5 * time.Second}
	c, _, err := d.Dial(url+identity, basic(identity, password))
	if err != nil {
		t.Fatal(err)
	}
	fuzzConns[proto] = c
	return c
}

var fuzzSeq int

// FuzzMessage sends any frame to the OCPP endpoint, over 1.6 and 2.0.1, and then a
// Heartbeat. Whatever the frame, the service must answer it with a well-formed
// CALLRESULT or CALLERROR (or nothing, for a response to no request), keep the
// connection, and answer the Heartbeat: no crash, no silently dropped CALL, no frame of
// another shape. Only a frame over the size limit may end the connection, with 1009.
func FuzzMessage(f *testing.F) {
	for _, seed := range []string{
		`[2,"1","BootNotification",{"chargePointVendor":"ACME","chargePointModel":"M"}]`,
		`[2,"1","BootNotification",{"reason":"PowerUp","chargingStation":{"vendorName":"ACME","model":"M"}}]`,
		`[2,"2","StatusNotification",{"connectorId":1,"errorCode":"NoError","status":"Available"}]`,
		`[2,"3","StatusNotification",{"timestamp":"2026-11-22T10:00:00Z","connectorStatus":"Occupied","evseId":1,"connectorId":1}]`,
		`[2,"4","Heartbeat",{}]`, `[2,"5","FooBar",{}]`, `[3,"6",{}]`, `[4,"7","GenericError","x",{}]`,
		`[2,"8","Authorize",{"idTag":7}]`, `hello`, `[]`, `[2]`, `[2,"",""]`, `{"a":[2,"x"]}`, `[9,"9","Heartbeat",{}]`,
		`[2,"10","StartTransaction",{"connectorId":1,"idTag":"T","meterStart":0,"timestamp":"x"}]`,
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, frame string, v201 bool) {
		proto := chargenet.ProtocolOCPP16
		if v201 {
			proto = chargenet.ProtocolOCPP201
		}
		c := fuzzConn(t, proto)
		fuzzSeq++
		hb := fmt.Sprintf("hb-%d-fuzz", fuzzSeq)
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if err := c.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
			t.Fatalf("writing the frame: %v", err)
		}
		if err := c.WriteMessage(websocket.TextMessage, []byte(`[2,"`+hb+`","Heartbeat",{}]`)); err != nil {
			closed(t, c, proto, len(frame))
			return
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			_, data, err := c.ReadMessage()
			if err != nil {
				closed(t, c, proto, len(frame))
				return
			}
			var arr []json.RawMessage
			if err := json.Unmarshal(data, &arr); err != nil {
				t.Fatalf("frame %q: the service sent %q, not a JSON array", frame, data)
			}
			var typ int
			var id string
			if len(arr) < 3 || json.Unmarshal(arr[0], &typ) != nil || json.Unmarshal(arr[1], &id) != nil || id == "" {
				t.Fatalf("frame %q: the service sent %q, not an OCPP-J message", frame, data)
			}
			switch {
			case typ == 3 && len(arr) == 3 && id == hb:
				return // the Heartbeat's answer: everything before it was checked
			case typ == 3 && len(arr) == 3, typ == 4 && len(arr) == 5:
			default:
				t.Fatalf("frame %q: the service sent %q, neither a CALLRESULT nor a CALLERROR", frame, data)
			}
			if typ == 4 {
				var code string
				if json.Unmarshal(arr[2], &code) != nil || code == "" {
					t.Fatalf("frame %q: a CALLERROR without a code: %q", frame, data)
				}
			}
		}
	})
}

// closed checks that a connection ended only because the frame was over the limit, and
// forgets it.
func closed(t *testing.T, c *websocket.Conn, proto string, size int) {
	t.Helper()
	_, _, err := c.ReadMessage()
	fuzzConns[proto] = nil
	_ = c.Close()
	var ce *websocket.CloseError
	if size <= 16<<10 || !asClose(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("the connection ended after a frame of %d bytes: %v", size, err)
	}
}

func asClose(err error, ce **websocket.CloseError) bool {
	e, ok := err.(*websocket.CloseError)
	*ce = e
	return ok
}
