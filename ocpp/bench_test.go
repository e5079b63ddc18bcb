package ocpp_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/ocpp"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/gorilla/websocket"
)

// BenchmarkStatusNotification measures one OCPP 1.6 StatusNotification from send to
// CALLRESULT, over a WebSocket on the loopback, through an in-memory store: the frame's
// decoding, the application path, the commit (events included) and the answer. Each
// notification changes the EVSE's status, so that every one writes.
func BenchmarkStatusNotification(b *testing.B) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, ":memory:")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	if err := store.Import(ctx, chargenet.DemoInventory(time.Now())); err != nil {
		b.Fatal(err)
	}
	if _, err := store.RegisterChargebox(ctx, 501, "501", chargenet.HashChargeboxPassword(password), time.Now()); err != nil {
		b.Fatal(err)
	}
	svc, err := ocpp.New(ocpp.Config{Addr: "127.0.0.1:0", Store: store, Rate: 1e9, Burst: 1e9,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	addr, err := svc.Listen()
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- svc.Serve() }()
	b.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = svc.Close(cctx)
		<-served
	})
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second, Subprotocols: []string{chargenet.ProtocolOCPP16}}
	ws, _, err := d.Dial("ws://"+addr.String()+"/ocpp/501", basic("501", password))
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	call := func(id, action, payload string) {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`[2,%q,%q,%s]`, id, action, payload))); err != nil {
			b.Fatal(err)
		}
		_, got, err := ws.ReadMessage()
		if err != nil {
			b.Fatal(err)
		}
		if !strings.HasPrefix(string(got), "[3,") {
			b.Fatalf("%s: %s", action, got)
		}
	}
	call("boot", "BootNotification", boot16)
	statuses := []string{"Charging", "Available"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		call(fmt.Sprint(i), "StatusNotification", `{"connectorId":1,"errorCode":"NoError","status":"`+statuses[i%2]+`"}`)
	}
}
