package reliability

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet/internal/proctest"
	ocpp16 "github.com/lorenzodonini/ocpp-go/ocpp1.6"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/core"
	types16 "github.com/lorenzodonini/ocpp-go/ocpp1.6/types"
	ocpp2 "github.com/lorenzodonini/ocpp-go/ocpp2.0.1"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/availability"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/provisioning"
	types2 "github.com/lorenzodonini/ocpp-go/ocpp2.0.1/types"
	"github.com/lorenzodonini/ocpp-go/ws"
	"github.com/stretchr/testify/require"
)

// sim is a charge box simulated on ocpp-go's charge-point side: an OCPP 1.6
// ChargePoint or a 2.0.1 ChargingStation, with its own WebSocket client. It answers
// ChangeAvailability with answer and reports each request on asked, as
// "connector N Inoperative" (1.6) or "evse N Inoperative" (2.0.1).
type sim struct {
	proto  string
	cp     ocpp16.ChargePoint
	cs     ocpp2.ChargingStation
	asked  chan string
	mu     sync.Mutex
	answer string
}

// dialSim connects identity with password to base (ws(s)://HOST:PORT/ocpp) over proto
// ("ocpp1.6" or "ocpp2.0.1"); tlsCfg, when set, is the client's TLS configuration.
func dialSim(base, identity, password, proto string, tlsCfg *tls.Config) (*sim, error) {
	var client *ws.Client
	if tlsCfg != nil {
		client = ws.NewTLSClient(tlsCfg)
	} else {
		client = ws.NewClient()
	}
	client.SetBasicAuth(identity, password)
	s := &sim{proto: proto, asked: make(chan string, 16), answer: "Accepted"}
	if proto == "ocpp1.6" {
		s.cp = ocpp16.NewChargePoint(identity, nil, client)
		s.cp.SetCoreHandler(simCore{s})
		return s, s.cp.Start(base)
	}
	s.cs = ocpp2.NewChargingStation(identity, nil, client)
	s.cs.SetAvailabilityHandler(simAvailability{s})
	return s, s.cs.Start(base)
}

func (s *sim) setAnswer(a string) { s.mu.Lock(); s.answer = a; s.mu.Unlock() }
func (s *sim) getAnswer() string  { s.mu.Lock(); defer s.mu.Unlock(); return s.answer }

// boot sends a BootNotification and requires Accepted with the heartbeat interval.
func (s *sim) boot(t *testing.T, interval int) {
	t.Helper()
	if s.cp != nil {
		conf, err := s.cp.BootNotification("Wallbox 22", "ACME", func(r *core.BootNotificationRequest) {
			r.ChargePointSerialNumber, r.FirmwareVersion = "SN-16", "1.4.2"
		})
		require.NoError(t, err)
		require.Equal(t, core.RegistrationStatusAccepted, conf.Status)
		require.Equal(t, interval, conf.Interval)
		return
	}
	conf, err := s.cs.BootNotification(provisioning.BootReasonPowerUp, "Station 2", "ACME", func(r *provisioning.BootNotificationRequest) {
		r.ChargingStation.SerialNumber, r.ChargingStation.FirmwareVersion = "SN-201", "2.0.0"
	})
	require.NoError(t, err)
	require.Equal(t, provisioning.RegistrationStatusAccepted, conf.Status)
	require.Equal(t, interval, conf.Interval)
}

// status sends a StatusNotification: connector is the box-wide number (1.6) or, for
// 2.0.1, evse and connector are the station's numbers. status is the version's value
// (Faulted, Available, ...). It returns the error of a CALLERROR.
func (s *sim) status(evse, connector int, status string, at time.Time) error {
	if s.cp != nil {
		_, err := s.cp.StatusNotification(connector, core.NoError, core.ChargePointStatus(status), func(r *core.StatusNotificationRequest) {
			r.Timestamp = types16.NewDateTime(at)
		})
		return err
	}
	_, err := s.cs.StatusNotification(types2.NewDateTime(at), availability.ConnectorStatus(status), evse, connector)
	return err
}

// stop closes the connection.
func (s *sim) stop() {
	if s.cp != nil {
		s.cp.Stop()
		return
	}
	s.cs.Stop()
}

// simCore answers the Core requests of a 1.6 central system.
type simCore struct{ s *sim }

func (h simCore) OnChangeAvailability(r *core.ChangeAvailabilityRequest) (*core.ChangeAvailabilityConfirmation, error) {
	h.s.asked <- fmt.Sprintf("connector %d %s", r.ConnectorId, r.Type)
	return core.NewChangeAvailabilityConfirmation(core.AvailabilityStatus(h.s.getAnswer())), nil
}
func (simCore) OnChangeConfiguration(*core.ChangeConfigurationRequest) (*core.ChangeConfigurationConfirmation, error) {
	return core.NewChangeConfigurationConfirmation(core.ConfigurationStatusRejected), nil
}
func (simCore) OnClearCache(*core.ClearCacheRequest) (*core.ClearCacheConfirmation, error) {
	return core.NewClearCacheConfirmation(core.ClearCacheStatusRejected), nil
}
func (simCore) OnDataTransfer(*core.DataTransferRequest) (*core.DataTransferConfirmation, error) {
	return core.NewDataTransferConfirmation(core.DataTransferStatusUnknownVendorId), nil
}
func (simCore) OnGetConfiguration(*core.GetConfigurationRequest) (*core.GetConfigurationConfirmation, error) {
	return core.NewGetConfigurationConfirmation(nil), nil
}
func (simCore) OnRemoteStartTransaction(*core.RemoteStartTransactionRequest) (*core.RemoteStartTransactionConfirmation, error) {
	return core.NewRemoteStartTransactionConfirmation(types16.RemoteStartStopStatusRejected), nil
}
func (simCore) OnRemoteStopTransaction(*core.RemoteStopTransactionRequest) (*core.RemoteStopTransactionConfirmation, error) {
	return core.NewRemoteStopTransactionConfirmation(types16.RemoteStartStopStatusRejected), nil
}
func (simCore) OnReset(*core.ResetRequest) (*core.ResetConfirmation, error) {
	return core.NewResetConfirmation(core.ResetStatusRejected), nil
}
func (simCore) OnUnlockConnector(*core.UnlockConnectorRequest) (*core.UnlockConnectorConfirmation, error) {
	return core.NewUnlockConnectorConfirmation(core.UnlockStatusNotSupported), nil
}

// simAvailability answers ChangeAvailability of a 2.0.1 CSMS.
type simAvailability struct{ s *sim }

func (h simAvailability) OnChangeAvailability(r *availability.ChangeAvailabilityRequest) (*availability.ChangeAvailabilityResponse, error) {
	evse := 0
	if r.Evse != nil {
		evse = r.Evse.ID
	}
	h.s.asked <- fmt.Sprintf("evse %d %s", evse, r.OperationalStatus)
	return availability.NewChangeAvailabilityResponse(availability.ChangeAvailabilityStatus(h.s.getAnswer())), nil
}

// registerBox runs `chargenet chargebox create` and returns the password it printed on
// its last line.
func registerBox(t *testing.T, database string, id int64, identity string) string {
	t.Helper()
	cmd := exec.Command(proctest.Binary(t), "chargebox", "create", "--database", database, "--id", fmt.Sprint(id), "--identity", identity)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	password := lines[len(lines)-1]
	require.Regexp(t, `^[A-Za-z0-9]{32}$`, password, "the password, alone on the last line")
	return password
}

// ocppServe starts `chargenet serve --demo` with the OCPP listener on a free port and
// returns it with the listener's base URL (ws://HOST:PORT/ocpp).
func ocppServe(t *testing.T, database string, args ...string) (*proctest.Server, string) {
	t.Helper()
	addr := proctest.FreeAddr(t)
	srv := serve(t, database, append([]string{"--ocpp-addr", addr, "--webhook-allow-insecure"}, args...)...)
	return srv, "ws://" + addr + "/ocpp"
}

// hookEvents is a webhook receiver that keeps every delivery's type and data.
type hookEvents struct {
	*httptest.Server
	mu     sync.Mutex
	events []hookEvent
}

type hookEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

func newHookEvents(t *testing.T) *hookEvents {
	r := &hookEvents{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var ev hookEvent
		if json.Unmarshal(b, &ev) == nil {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

// has reports whether a delivery of typ whose data contains every fragment arrived.
func (r *hookEvents) has(typ string, fragments ...string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.events {
		if ev.Type != typ {
			continue
		}
		ok := true
		for _, f := range fragments {
			ok = ok && strings.Contains(string(ev.Data), f)
		}
		if ok {
			return true
		}
	}
	return false
}
