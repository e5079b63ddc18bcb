package ocpp

import (
	"github.com/chargenet/chargenet"
	ocpp2 "github.com/lorenzodonini/ocpp-go/ocpp2.0.1"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/authorization"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/availability"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/data"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/diagnostics"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/display"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/firmware"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/iso15118"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/localauth"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/meter"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/provisioning"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/remotecontrol"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/reservation"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/security"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/smartcharging"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/tariffcost"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/transactions"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/types"
	"github.com/lorenzodonini/ocpp-go/ocppj"
)

// newCSMS builds ocpp-go's 2.0.1 CSMS on endpoint e with the per-box dispatcher, every
// 2.0.1 functional block, and the handlers of the messages a station needs answered to
// charge.
func (s *Service) newCSMS(e *endpoint) ocpp2.CSMS {
	d := newDispatcher(s.cfg.CommandTimeout, s.group)
	srv := ocppj.NewServer(e, d, d, authorization.Profile, availability.Profile, data.Profile, diagnostics.Profile,
		display.Profile, firmware.Profile, iso15118.Profile, localauth.Profile, meter.Profile, provisioning.Profile,
		remotecontrol.Profile, reservation.Profile, security.Profile, smartcharging.Profile, tariffcost.Profile,
		transactions.Profile)
	fix := dialect{v201: true}
	srv.SetInvalidMessageHook(fix.fixError)
	e.check = s.checker(fix, srv)
	cs := ocpp2.NewCSMS(srv, e)
	h := v201{s}
	cs.SetProvisioningHandler(h)
	cs.SetAvailabilityHandler(h)
	cs.SetAuthorizationHandler(h)
	cs.SetTransactionsHandler(h)
	cs.SetMeterHandler(h)
	cs.SetDataHandler(h)
	cs.SetNewChargingStationHandler(func(c ocpp2.ChargingStationConnection) { s.ready(c.ID()) })
	cs.SetChargingStationDisconnectedHandler(func(ocpp2.ChargingStationConnection) {})
	cs.Start(0, "")
	return cs
}

// v201 answers the OCPP 2.0.1 messages a station sends to charge.
type v201 struct{ s *Service }

var (
	_ provisioning.CSMSHandler  = v201{}
	_ availability.CSMSHandler  = v201{}
	_ authorization.CSMSHandler = v201{}
	_ transactions.CSMSHandler  = v201{}
	_ meter.CSMSHandler         = v201{}
	_ data.CSMSHandler          = v201{}
)

func (h v201) now() *types.DateTime { return types.NewDateTime(h.s.now()) }

// OnBootNotification accepts the station, records what it told, and gives the
// heartbeat interval and the time.
func (h v201) OnBootNotification(id string, req *provisioning.BootNotificationRequest) (*provisioning.BootNotificationResponse, error) {
	st := req.ChargingStation
	if err := h.s.booted(id, chargenet.BootInfo{Vendor: st.VendorName, Model: st.Model, SerialNumber: st.SerialNumber,
		FirmwareVersion: st.FirmwareVersion}); err != nil {
		return nil, err
	}
	return provisioning.NewBootNotificationResponse(h.now(), h.s.heartbeat(), provisioning.RegistrationStatusAccepted), nil
}

// OnNotifyReport acknowledges.
func (h v201) OnNotifyReport(string, *provisioning.NotifyReportRequest) (*provisioning.NotifyReportResponse, error) {
	return provisioning.NewNotifyReportResponse(), nil
}

// OnHeartbeat answers the time.
func (h v201) OnHeartbeat(string, *availability.HeartbeatRequest) (*availability.HeartbeatResponse, error) {
	return availability.NewHeartbeatResponse(*h.now()), nil
}

// OnStatusNotification applies the notification through the application path
// (intake), as the HTTP ingestion does, and answers once it is committed. A 2.0.1 station reports no error
// codes in it: the connector errors are cleared (NoError).
func (h v201) OnStatusNotification(id string, req *availability.StatusNotificationRequest) (*availability.StatusNotificationResponse, error) {
	n := &chargenet.StatusNotification{Protocol: chargenet.ProtocolOCPP201, EVSE: req.EvseID, ConnectorID: req.ConnectorID,
		Status: string(req.ConnectorStatus), ErrorCode: "NoError"}
	if req.Timestamp != nil {
		n.Timestamp = req.Timestamp.Time
	}
	if err := h.s.notify(id, n); err != nil {
		return nil, err
	}
	return availability.NewStatusNotificationResponse(), nil
}

// idTokenInfo answers an idToken as --ocpp-authorize says.
func (h v201) idTokenInfo() types.IdTokenInfo {
	if h.s.cfg.Authorize {
		return types.IdTokenInfo{Status: types.AuthorizationStatusAccepted}
	}
	return types.IdTokenInfo{Status: types.AuthorizationStatusInvalid}
}

// OnAuthorize answers with the configured authorization.
func (h v201) OnAuthorize(string, *authorization.AuthorizeRequest) (*authorization.AuthorizeResponse, error) {
	return authorization.NewAuthorizationResponse(h.idTokenInfo()), nil
}

// OnTransactionEvent acknowledges, with the configured authorization when the event
// carries an idToken (chargenet keeps no sessions).
func (h v201) OnTransactionEvent(_ string, req *transactions.TransactionEventRequest) (*transactions.TransactionEventResponse, error) {
	res := transactions.NewTransactionEventResponse()
	if req.IDToken != nil {
		info := h.idTokenInfo()
		res.IDTokenInfo = &info
	}
	return res, nil
}

// OnMeterValues acknowledges.
func (h v201) OnMeterValues(string, *meter.MeterValuesRequest) (*meter.MeterValuesResponse, error) {
	return meter.NewMeterValuesResponse(), nil
}

// OnDataTransfer answers UnknownVendorId: chargenet knows no vendor extension.
func (h v201) OnDataTransfer(string, *data.DataTransferRequest) (*data.DataTransferResponse, error) {
	return data.NewDataTransferResponse(data.DataTransferStatusUnknownVendorId), nil
}
