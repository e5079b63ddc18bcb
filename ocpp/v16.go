package ocpp

import (
	"crypto/rand"
	"encoding/binary"

	"github.com/chargenet/chargenet"
	ocpp16 "github.com/lorenzodonini/ocpp-go/ocpp1.6"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/certificates"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/core"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/extendedtriggermessage"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/firmware"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/localauth"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/logging"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/remotetrigger"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/reservation"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/securefirmware"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/security"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/smartcharging"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/types"
	"github.com/lorenzodonini/ocpp-go/ocppj"
)

// newCentralSystem builds ocpp-go's 1.6 central system on endpoint e with the per-box
// dispatcher, every 1.6 profile (so that an action of a profile it does not serve is
// NotSupported, and an action of none NotImplemented), and the Core handlers.
func (s *Service) newCentralSystem(e *endpoint) ocpp16.CentralSystem {
	d := newDispatcher(s.cfg.CommandTimeout, s.group)
	srv := ocppj.NewServer(e, d, d, core.Profile, localauth.Profile, firmware.Profile, reservation.Profile,
		remotetrigger.Profile, smartcharging.Profile, logging.Profile, security.Profile, extendedtriggermessage.Profile,
		certificates.Profile, securefirmware.Profile)
	fix := dialect{}
	srv.SetInvalidMessageHook(fix.fixError)
	e.check = s.checker(fix, srv)
	cs := ocpp16.NewCentralSystem(srv, e)
	cs.SetCoreHandler(v16{s})
	cs.SetNewChargePointHandler(func(c ocpp16.ChargePointConnection) { s.ready(c.ID()) })
	// Set always: it fails the callbacks of requests pending when a box disconnects.
	cs.SetChargePointDisconnectedHandler(func(ocpp16.ChargePointConnection) {})
	cs.Start(0, "") // starts the dispatcher; the transport listens
	return cs
}

// v16 answers the OCPP 1.6 Core profile (core.CentralSystemHandler).
type v16 struct{ s *Service }

var _ core.CentralSystemHandler = v16{}

func (h v16) now() *types.DateTime { return types.NewDateTime(h.s.now()) }

// OnBootNotification accepts the box, records what it told, and gives the heartbeat
// interval and the time.
func (h v16) OnBootNotification(id string, req *core.BootNotificationRequest) (*core.BootNotificationConfirmation, error) {
	serial := req.ChargePointSerialNumber
	if serial == "" {
		serial = req.ChargeBoxSerialNumber
	}
	if err := h.s.booted(id, chargenet.BootInfo{Vendor: req.ChargePointVendor, Model: req.ChargePointModel,
		SerialNumber: serial, FirmwareVersion: req.FirmwareVersion}); err != nil {
		return nil, err
	}
	return core.NewBootNotificationConfirmation(h.now(), h.s.heartbeat(), core.RegistrationStatusAccepted), nil
}

// OnHeartbeat answers the time.
func (h v16) OnHeartbeat(string, *core.HeartbeatRequest) (*core.HeartbeatConfirmation, error) {
	return core.NewHeartbeatConfirmation(h.now()), nil
}

// OnStatusNotification applies the notification through the application path
// (intake), as the HTTP ingestion does, and answers once it is committed.
func (h v16) OnStatusNotification(id string, req *core.StatusNotificationRequest) (*core.StatusNotificationConfirmation, error) {
	n := &chargenet.StatusNotification{Protocol: chargenet.ProtocolOCPP16, ConnectorID: req.ConnectorId, Status: string(req.Status),
		ErrorCode: chargenet.ErrorCode(req.ErrorCode), Info: req.Info, VendorErrorCode: req.VendorErrorCode}
	if req.Timestamp != nil {
		n.Timestamp = req.Timestamp.Time
	}
	if err := h.s.notify(id, n); err != nil {
		return nil, err
	}
	return core.NewStatusNotificationConfirmation(), nil
}

// idTagInfo answers an idTag as --ocpp-authorize says: chargenet keeps no tokens.
func (h v16) idTagInfo() *types.IdTagInfo {
	if h.s.cfg.Authorize {
		return &types.IdTagInfo{Status: types.AuthorizationStatusAccepted}
	}
	return &types.IdTagInfo{Status: types.AuthorizationStatusInvalid}
}

// OnAuthorize answers with the configured authorization.
func (h v16) OnAuthorize(string, *core.AuthorizeRequest) (*core.AuthorizeConfirmation, error) {
	return core.NewAuthorizationConfirmation(h.idTagInfo()), nil
}

// OnStartTransaction gives the transaction an id (chargenet keeps no sessions) and the
// configured authorization.
func (h v16) OnStartTransaction(string, *core.StartTransactionRequest) (*core.StartTransactionConfirmation, error) {
	return core.NewStartTransactionConfirmation(h.idTagInfo(), transactionID()), nil
}

// OnStopTransaction acknowledges, with the configured authorization when the request
// names an idTag.
func (h v16) OnStopTransaction(_ string, req *core.StopTransactionRequest) (*core.StopTransactionConfirmation, error) {
	conf := core.NewStopTransactionConfirmation()
	if req.IdTag != "" {
		conf.IdTagInfo = h.idTagInfo()
	}
	return conf, nil
}

// OnMeterValues acknowledges.
func (h v16) OnMeterValues(string, *core.MeterValuesRequest) (*core.MeterValuesConfirmation, error) {
	return core.NewMeterValuesConfirmation(), nil
}

// OnDataTransfer answers UnknownVendorId: chargenet knows no vendor extension.
func (h v16) OnDataTransfer(string, *core.DataTransferRequest) (*core.DataTransferConfirmation, error) {
	return core.NewDataTransferConfirmation(core.DataTransferStatusUnknownVendorId), nil
}

// transactionID returns a random positive 31-bit transaction id.
func transactionID() int {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return int(binary.BigEndian.Uint32(b[:])&0x7fffffff) | 1
}
