package chargenet

import (
	"strings"
	"time"
)

// MaxClockSkew is how far in the future a status notification's timestamp may be. A
// notification from further ahead would make every later one look older and be
// ignored, so it is refused.
const MaxClockSkew = 5 * time.Minute

// CheckText refuses a text value holding the NUL character, which some databases
// cannot store. It returns an ErrInvalid *Error with Param param.
func CheckText(param, value string) error {
	if strings.ContainsRune(value, 0) {
		return Errorf(ErrInvalid, CodeInvalidBody, param, "%s must not contain the NUL character (\\u0000)", param)
	}
	return nil
}

// StatusNotification is a StatusNotification from a charge box: OCPP 1.6's, or OCPP
// 2.0.1's when Protocol is ProtocolOCPP201.
type StatusNotification struct {
	ChargeboxID int64
	// Protocol is ProtocolOCPP201 for a 2.0.1 notification; otherwise (empty or
	// ProtocolOCPP16) it is a 1.6 one.
	Protocol string
	// EVSE is, in a 2.0.1 notification, the station's EVSE number (evseId), which
	// ApplyStatusNotification maps with ConnectorID through StationConnector; 0 in a 1.6
	// one.
	EVSE            int
	ConnectorID     int    // OCPP numbering on the charge box; 0 is the whole charge box
	Status          string // OCPP 1.6 ChargePointStatus, or 2.0.1 ConnectorStatus
	ErrorCode       ErrorCode
	Info            string
	VendorErrorCode string
	Timestamp       time.Time // when the charge box saw the status; set to receipt time when absent
}

// StatusChange is what a status notification did to one EVSE.
type StatusChange struct {
	UID      int64
	Status   EvseStatus
	Previous EvseStatus
	Version  int64
	Reason   string // why the status was not applied: the operator holds it (see EVSE.Held)
}

// StatusResult is the outcome of a status notification.
type StatusResult struct {
	// Applied is false when no EVSE took the notification's status: it was not newer
	// than the last one applied to every connector it addresses (then nothing changed),
	// or the operator holds the status of every EVSE it addresses (see EVSE.Held).
	Applied bool
	// Reason says why, when Applied is false.
	Reason string
	EVSEs  []StatusChange
}

// StatusPlan is what ApplyStatusNotification decided: the new state of the EVSEs it
// changed and the events to record with them. The store writes Changed (status, status
// time, version, last update and the connectors' errors and status times) in the same
// transaction as Events.
type StatusPlan struct {
	Result  StatusResult
	Changed []*EVSE // the EVSEs to write, as they are after the notification
	// Reached holds, for each EVSE of Changed (by UID), the IDs of the connectors whose
	// error and status time the notification set, in ascending order; the EVSE's other
	// connectors are unchanged.
	Reached map[int64][]int64
	Events  []Event
}

// ApplyStatusNotification applies n to evses, all the EVSEs of charge box
// n.ChargeboxID in ascending UID order with their connectors in ascending ID order, in
// place, and returns what to write. OCPP connector k (k ≥ 1) is the k-th connector in
// that order, deleted ones included; connector 0 addresses every connector in service.
// A 2.0.1 notification's EVSE and connector are mapped onto that number first
// (StationConnector), and its events carry that number.
//
// A connector takes the notification's error (none for NoError) and StatusReportedAt
// when the notification is newer than the connector's StatusReportedAt; an EVSE with
// such a connector takes the mapped status when the notification is newer than the
// EVSE's StatusReportedAt and the operator does not hold its status (EVSE.Held). A
// REMOVED EVSE takes nothing. An EVSE whose status or connector error changed gets Version
// + 1 and LastUpdated NextUpdate(LastUpdated, now), and so does each connector whose
// error changed; a changed status also produces an evse.status.changed event,
// a connector error changed without the status an evse.updated event.
//
// Errors: ErrNotFound when the charge box has no EVSE or no connector k; ErrConflict
// when connector k is deleted; ErrInvalid for a status or error code the notification's
// OCPP version does not define, a timestamp more than MaxClockSkew ahead of now, or
// text holding NUL; StationConnector's errors.
func ApplyStatusNotification(evses []EVSE, n *StatusNotification, now time.Time) (*StatusPlan, error) {
	var status EvseStatus
	var err error
	if n.Protocol == ProtocolOCPP201 {
		status, err = StatusFromOCPP201(n.Status)
	} else {
		status, err = StatusFromOCPP(n.Status)
	}
	if err != nil {
		return nil, err
	}
	if !n.ErrorCode.Valid() {
		return nil, Errorf(ErrInvalid, CodeInvalidBody, "errorCode", "%q is not an OCPP 1.6 error code", n.ErrorCode)
	}
	if n.Timestamp.After(now.Add(MaxClockSkew)) {
		return nil, Errorf(ErrInvalid, CodeInvalidBody, "timestamp", "timestamp %s is more than %v ahead of the server's clock (%s)",
			n.Timestamp.UTC().Format(time.RFC3339), MaxClockSkew, now.UTC().Format(time.RFC3339))
	}
	if err := CheckText("info", n.Info); err != nil {
		return nil, err
	}
	if err := CheckText("vendorErrorCode", n.VendorErrorCode); err != nil {
		return nil, err
	}
	if len(evses) == 0 {
		return nil, Errorf(ErrNotFound, CodeNotFound, "chargeboxId", "charge box with chargeboxId %d has no EVSE", n.ChargeboxID)
	}
	if n.Protocol == ProtocolOCPP201 {
		k, err := StationConnector(evses, n.ChargeboxID, n.EVSE, n.ConnectorID)
		if err != nil {
			return nil, err
		}
		mapped := *n
		mapped.EVSE, mapped.ConnectorID = 0, k
		n = &mapped
	}
	type target struct{ evse, conn int }
	var targets []target
	k := 0
	for i := range evses {
		for j := range evses[i].Connectors {
			k++
			c := &evses[i].Connectors[j]
			switch {
			case n.ConnectorID == 0 && c.DeletedAt == nil:
				targets = append(targets, target{i, j})
			case n.ConnectorID == k:
				if c.DeletedAt != nil {
					return nil, Errorf(ErrConflict, CodeConnectorDeleted, "connectorId",
						"connectorId %d of charge box %d (connector %d of EVSE %d) was deleted", k, n.ChargeboxID, c.ID, evses[i].UID)
				}
				targets = append(targets, target{i, j})
			}
		}
	}
	if len(targets) == 0 {
		if n.ConnectorID == 0 {
			return nil, Errorf(ErrNotFound, CodeNotFound, "connectorId", "connectorId 0: charge box %d has no connector in service", n.ChargeboxID)
		}
		return nil, Errorf(ErrNotFound, CodeNotFound, "connectorId",
			"connectorId %d does not exist: charge box %d has %d connectors", n.ConnectorID, n.ChargeboxID, k)
	}
	var cerr *ConnectorError
	if n.ErrorCode != "NoError" {
		cerr = &ConnectorError{Code: n.ErrorCode, Info: n.Info, VendorErrorCode: n.VendorErrorCode}
	}
	ts := n.Timestamp.UTC()
	plan := &StatusPlan{Result: StatusResult{EVSEs: []StatusChange{}}, Reached: map[int64][]int64{}}
	var removed []string // why a REMOVED EVSE took nothing
	for _, t := range targets {
		if e := &evses[t.evse]; e.Status == StatusRemoved {
			reason, _ := e.Held()
			removed = append(removed, reason)
		}
	}
	touched := map[int]bool{} // EVSEs with a connector the notification applies to
	changed := map[int]bool{}
	var errorChanged []target // connectors whose error the notification changed
	var order []int
	for _, t := range targets {
		e := &evses[t.evse]
		c := &e.Connectors[t.conn]
		if !ts.After(c.StatusReportedAt) || e.Status == StatusRemoved {
			continue
		}
		if !sameError(c.Error, cerr) {
			changed[t.evse] = true
			errorChanged = append(errorChanged, t)
		}
		c.Error, c.StatusReportedAt = copyError(cerr), ts
		plan.Reached[e.UID] = append(plan.Reached[e.UID], c.ID)
		if !touched[t.evse] {
			touched[t.evse] = true
			order = append(order, t.evse)
		}
	}
	applied := false
	for _, i := range order {
		e := &evses[i]
		previous := e.Status
		reason, held := e.Held()
		if !held {
			applied = true
		}
		if !held && ts.After(e.StatusReportedAt) {
			e.StatusReportedAt = ts
			if e.Status != status {
				e.Status = status
				changed[i] = true
			}
		}
		if changed[i] {
			e.touch(now)
		}
		plan.Changed = append(plan.Changed, e) // status times move even without a visible change
		switch {
		case e.Status != previous:
			plan.Events = append(plan.Events, NewStatusChangedEvent(e, previous, n, now))
		case changed[i]: // only a connector's error changed: no status event tells it
			plan.Events = append(plan.Events, NewEVSEUpdatedEvent(e, e.LocationID, now))
		}
		plan.Result.EVSEs = append(plan.Result.EVSEs, StatusChange{UID: e.UID, Status: e.Status, Previous: previous, Version: e.Version, Reason: reason})
	}
	for _, t := range errorChanged {
		evses[t.evse].Connectors[t.conn].LastUpdated = evses[t.evse].LastUpdated
	}
	plan.Result.Applied = applied
	switch {
	case applied:
	case len(order) == 0 && len(removed) > 0:
		plan.Result.Reason = removed[0]
	case len(order) == 0:
		plan.Result.Reason = "the notification is not newer than the last one applied to the connectors it addresses"
	default:
		plan.Result.Reason = plan.Result.EVSEs[0].Reason
	}
	return plan, nil
}

func sameError(a, b *ConnectorError) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func copyError(e *ConnectorError) *ConnectorError {
	if e == nil {
		return nil
	}
	c := *e
	return &c
}
