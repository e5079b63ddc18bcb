package chargenet

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// operatorTransitions lists, for each EVSE status, the statuses the operator may set
// (PATCH /v2/evses/{uid}). REMOVED is terminal. docs/inventory.md and the contract show the
// same table.
var operatorTransitions = map[EvseStatus][]EvseStatus{
	StatusPlanned:     {StatusAvailable, StatusReserved, StatusCharging, StatusBlocked, StatusOutOfOrder, StatusInoperative, StatusUnknown, StatusRemoved},
	StatusAvailable:   {StatusInoperative, StatusRemoved},
	StatusReserved:    {StatusInoperative, StatusRemoved},
	StatusCharging:    {StatusInoperative, StatusRemoved},
	StatusBlocked:     {StatusInoperative, StatusRemoved},
	StatusOutOfOrder:  {StatusInoperative, StatusRemoved},
	StatusUnknown:     {StatusInoperative, StatusRemoved},
	StatusInoperative: {StatusAvailable, StatusUnknown, StatusRemoved},
	StatusRemoved:     nil,
}

// Held reports whether the operator holds the EVSE's status, so that charge box status
// notifications do not change it: PLANNED, REMOVED, and INOPERATIVE set by the operator.
// It returns why, for the notification's answer.
func (e *EVSE) Held() (reason string, held bool) {
	switch {
	case e.Status == StatusPlanned:
		return fmt.Sprintf("EVSE %d is PLANNED: charge box status notifications do not change it until the operator commissions it (PATCH /v2/evses/%d)", e.UID, e.UID), true
	case e.Status == StatusRemoved:
		return fmt.Sprintf("EVSE %d is REMOVED: nothing changes it any more", e.UID), true
	case e.Status == StatusInoperative && e.OperatorHold:
		return fmt.Sprintf("EVSE %d is INOPERATIVE, set by the operator: its status changes only through PATCH /v2/evses/%d", e.UID, e.UID), true
	}
	return "", false
}

// checkWritable refuses a change to a REMOVED EVSE (ErrConflict, evse_removed) and an
// ifMatch that does not match its ETag (ErrPreconditionFailed), in that order.
func (e *EVSE) checkWritable(ifMatch string) error {
	if e.Status == StatusRemoved {
		return Errorf(ErrConflict, CodeEVSERemoved, "uid", "the EVSE with uid %d is REMOVED and can no longer be changed", e.UID)
	}
	if ifMatch != "" && !MatchETag(ifMatch, e.ETag()) {
		return Errorf(ErrPreconditionFailed, CodePreconditionFailed, "If-Match",
			"If-Match %s does not match the current ETag %s of EVSE %d", ifMatch, e.ETag(), e.UID)
	}
	return nil
}

// CheckPreconditions refuses a change to a REMOVED EVSE (ErrConflict, evse_removed),
// an ifMatch that does not match its ETag and an ifVersion (when not 0) other than its
// Version (both ErrPreconditionFailed, param If-Match or version), in that order: with
// both, both must hold.
func (e *EVSE) CheckPreconditions(ifMatch string, ifVersion int64) error {
	if err := e.checkWritable(ifMatch); err != nil {
		return err
	}
	if ifVersion != 0 && ifVersion != e.Version {
		return Errorf(ErrPreconditionFailed, CodePreconditionFailed, "version",
			"version %d is not the current version %d of EVSE %d", ifVersion, e.Version, e.UID)
	}
	return nil
}

// checkUnchanged refuses a patch whose EvseID or Connectors differ from e's
// (ErrInvalid naming the first field that differs).
func (e *EVSE) checkUnchanged(p EVSEPatch) error {
	if p.EvseID != nil && *p.EvseID != e.EvseID {
		return Errorf(ErrInvalid, CodeInvalidBody, "evseId",
			"evseId %q is not EVSE %d's %q, and this operation does not change it", *p.EvseID, e.UID, e.EvseID)
	}
	if p.Connectors == nil {
		return nil
	}
	if len(p.Connectors) != len(e.Connectors) {
		return Errorf(ErrInvalid, CodeInvalidBody, "connectors",
			"connectors: %d given, EVSE %d has %d; connectors change through /v2/evses/%d/connectors", len(p.Connectors), e.UID, len(e.Connectors), e.UID)
	}
	for i := range p.Connectors {
		if field := e.Connectors[i].DiffSettings(p.Connectors[i]); field != "" {
			return Errorf(ErrInvalid, CodeInvalidBody, fmt.Sprintf("connectors[%d].%s", i, field),
				"connectors[%d].%s differs from EVSE %d's; connectors change through /v2/evses/%d/connectors", i, field, e.UID, e.UID)
		}
	}
	return nil
}

// Clone returns a copy of e that shares no connector (nor connector error or deletion
// time) with it.
func (e *EVSE) Clone() *EVSE {
	cp := *e
	cp.Connectors = slices.Clone(e.Connectors)
	for i := range cp.Connectors {
		c := &cp.Connectors[i]
		c.TariffIDs = slices.Clone(c.TariffIDs)
		c.Error = copyError(c.Error)
		if c.DeletedAt != nil {
			at := *c.DeletedAt
			c.DeletedAt = &at
		}
	}
	return &cp
}

// Precision is the precision of every time the service keeps and sends.
const Precision = time.Microsecond

// Stamp returns t as the service keeps and sends times: in UTC, truncated to Precision.
// A change is stamped with it before it is written, so that what its answer shows
// equals what a later read returns.
func Stamp(t time.Time) time.Time { return t.UTC().Truncate(Precision) }

// NextUpdate returns the time of a change made at now to an object last changed at
// previous: now, or previous + 1 µs when now is not later (a clock behind, or two
// changes within a microsecond), in UTC to the microsecond. An object's LastUpdated
// taken this way in the transaction that locks it grows with every version, whichever
// replica's clock wrote it.
func NextUpdate(previous, now time.Time) time.Time {
	now = Stamp(now)
	if next := Stamp(previous).Add(Precision); !now.After(previous) && next.After(now) {
		return next
	}
	return now
}

// touch records a change of e made at now: Version + 1 and LastUpdated NextUpdate.
func (e *EVSE) touch(now time.Time) {
	e.Version++
	e.LastUpdated = NextUpdate(e.LastUpdated, now)
}

// touchConnector records a change of connector c of e made at now: e is touched and c
// takes e's new LastUpdated.
func (e *EVSE) touchConnector(c *Connector, now time.Time) {
	e.touch(now)
	c.LastUpdated = e.LastUpdated
}

// TouchConnector records a change of connector id of e made at now, after
// UpdateConnector changed it: e gets Version + 1 and LastUpdated NextUpdate, and the
// connector the same LastUpdated. It does nothing for a connector e does not have.
func (e *EVSE) TouchConnector(id int64, now time.Time) {
	if c := e.Connector(id); c != nil {
		e.touchConnector(c, now)
	}
}

// EVSEPatch holds the EVSE fields the operator changes; nil fields keep their value.
type EVSEPatch struct {
	Status      *EvseStatus
	ChargeboxID *int64
	LocationID  *string
	// IfVersion, when not 0, is a precondition as an If-Match of its ETag: the EVSE
	// must be at this Version (the version of a body written back from a read).
	IfVersion int64
	// EvseID and Connectors, when set, are fields of a read written back that a patch
	// does not change: they must be the EVSE's (Connectors compared by DiffSettings).
	EvseID     *string
	Connectors []Connector
}

// Empty reports whether the patch changes nothing.
func (p EVSEPatch) Empty() bool {
	return p.Status == nil && p.ChargeboxID == nil && p.LocationID == nil
}

// ApplyPatch applies the operator's patch to e in place and returns the events of the
// change: evse.status.changed for a new status, evse.removed too for REMOVED, and
// evse.updated for a new chargeboxId or locationId (with previousLocationId when the
// EVSE moved to another location). A
// patch that sets what e already has changes nothing and returns no event; otherwise e
// gets Version + 1 and LastUpdated NextUpdate(LastUpdated, now).
//
// Errors, in this order, with e unchanged: ErrInvalid for an empty patch or a value out
// of range; ErrConflict (evse_removed) for a REMOVED EVSE; ErrPreconditionFailed for an
// ifMatch that does not match; ErrConflict (invalid_transition) for a status the table
// does not allow from e's. Whether a new LocationID exists is the store's to check.
func (e *EVSE) ApplyPatch(p EVSEPatch, ifMatch string, now time.Time) ([]Event, error) {
	switch {
	case p.Empty():
		return nil, Errorf(ErrInvalid, CodeInvalidBody, "", "request body must set at least one field")
	case p.Status != nil && !p.Status.Valid():
		return nil, Errorf(ErrInvalid, CodeInvalidBody, "status", "%q is not an EVSE status", *p.Status)
	case p.ChargeboxID != nil && *p.ChargeboxID < 1:
		return nil, Errorf(ErrInvalid, CodeInvalidBody, "chargeboxId", "chargeboxId %d must be a positive integer", *p.ChargeboxID)
	case p.LocationID != nil && !ValidLocationID(*p.LocationID):
		return nil, Errorf(ErrInvalid, CodeInvalidBody, "locationId", "%q is not a location id", *p.LocationID)
	}
	if err := e.CheckPreconditions(ifMatch, p.IfVersion); err != nil {
		return nil, err
	}
	if err := e.checkUnchanged(p); err != nil {
		return nil, err
	}
	previous := e.Status
	if p.Status != nil && *p.Status != e.Status {
		allowed := operatorTransitions[e.Status]
		if !slices.Contains(allowed, *p.Status) {
			return nil, Errorf(ErrConflict, CodeInvalidTransition, "status", "status: EVSE %d cannot go from %s to %s; allowed: %s",
				e.UID, e.Status, *p.Status, joinStatuses(allowed))
		}
	}
	statusChanged, moved := false, false
	if p.Status != nil && *p.Status != e.Status {
		e.Status = *p.Status
		e.OperatorHold = e.Status == StatusInoperative
		statusChanged = true
	}
	if p.ChargeboxID != nil && *p.ChargeboxID != e.ChargeboxID {
		e.ChargeboxID = *p.ChargeboxID
		moved = true
	}
	previousLocation := e.LocationID
	if p.LocationID != nil && *p.LocationID != e.LocationID {
		e.LocationID = *p.LocationID
		moved = true
	}
	if !statusChanged && !moved {
		return nil, nil
	}
	e.touch(now)
	var events []Event
	if statusChanged {
		events = e.statusEvents(previous, now)
	}
	if moved { // no status event tells the old location or charge box
		events = append(events, NewEVSEUpdatedEvent(e, previousLocation, now))
	}
	return events, nil
}

// Remove sets e's status to REMOVED (from any status) and returns its
// evse.status.changed and evse.removed events. An EVSE already REMOVED is left as it is
// and returns no event. ErrPreconditionFailed for an ifMatch that does not match.
func (e *EVSE) Remove(ifMatch string, now time.Time) ([]Event, error) {
	if e.Status == StatusRemoved {
		return nil, nil
	}
	if err := e.checkWritable(ifMatch); err != nil {
		return nil, err
	}
	previous := e.Status
	e.Status, e.OperatorHold = StatusRemoved, false
	e.touch(now)
	return e.statusEvents(previous, now), nil
}

// statusEvents returns the events of an operator's status change from previous.
func (e *EVSE) statusEvents(previous EvseStatus, now time.Time) []Event {
	events := []Event{NewOperatorStatusChangedEvent(e, previous, now)}
	if e.Status == StatusRemoved {
		events = append(events, NewEVSEEvent(EventEVSERemoved, e, now))
	}
	return events
}

func joinStatuses(s []EvseStatus) string {
	if len(s) == 0 {
		return "none"
	}
	parts := make([]string, len(s))
	for i, st := range s {
		parts[i] = string(st)
	}
	return strings.Join(parts, ", ")
}

// AddConnector adds c to e with the next connector id (one more than the highest,
// deleted connectors included, so that the OCPP numbering of the charge box stays
// stable), and returns its evse.connector.created event; e gets Version + 1. c's ID,
// Error and DeletedAt are ignored.
//
// Errors, with e unchanged: ErrConflict (evse_removed), ErrPreconditionFailed, and
// ErrInvalid when c breaks a connector rule or e already has MaxConnectors connectors.
func (e *EVSE) AddConnector(c Connector, ifMatch string, now time.Time) ([]Event, error) {
	if err := e.checkWritable(ifMatch); err != nil {
		return nil, err
	}
	if len(e.Connectors) >= MaxConnectors {
		return nil, Errorf(ErrInvalid, CodeInvalidBody, "", "EVSE %d has %d connectors, the most an EVSE can have", e.UID, MaxConnectors)
	}
	var next int64 = 1
	for i := range e.Connectors {
		next = max(next, e.Connectors[i].ID+1)
	}
	c.ID, c.Error, c.DeletedAt = next, nil, nil
	if c.TariffIDs == nil {
		c.TariffIDs = []string{}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	e.Connectors = append(e.Connectors, c)
	e.touchConnector(&e.Connectors[len(e.Connectors)-1], now)
	ev, err := newConnectorEvent(EventConnectorCreated, e, c.ID, now)
	if err != nil {
		return nil, err
	}
	return []Event{ev}, nil
}

// DeleteConnector marks connector id of e deleted at now and returns its
// evse.connector.deleted event; e gets Version + 1. A connector already deleted is left
// as it is and returns no event. Errors, with e unchanged: ErrNotFound (no such
// connector), ErrConflict (evse_removed), ErrPreconditionFailed.
func (e *EVSE) DeleteConnector(id int64, ifMatch string, now time.Time) ([]Event, error) {
	c := e.Connector(id)
	if c == nil {
		return nil, Errorf(ErrNotFound, CodeNotFound, "connectorId", "connector with connectorId %d not found on EVSE %d", id, e.UID)
	}
	if err := e.checkWritable(ifMatch); err != nil {
		return nil, err
	}
	if c.DeletedAt != nil {
		return nil, nil
	}
	e.touchConnector(c, now)
	at := c.LastUpdated
	c.DeletedAt = &at
	ev, err := newConnectorEvent(EventConnectorDeleted, e, id, now)
	if err != nil {
		return nil, err
	}
	return []Event{ev}, nil
}

// MaxConnectors is the most connectors an EVSE can have, deleted ones included.
const MaxConnectors = 24

// PrepareNew checks an EVSE to create and fills in what the service decides: status
// PLANNED when none is given (REMOVED cannot be the first), the operator's hold for a
// first INOPERATIVE, Version 1 and LastUpdated now. Its connector ids must be 1..n for
// n connectors, each once. UID is assigned by the store and not checked here.
//
// Errors: an ErrInvalid *Error naming the first offending field.
func (e *EVSE) PrepareNew(now time.Time) error {
	if e.Status == "" {
		e.Status = StatusPlanned
	}
	if e.Status == StatusRemoved {
		return Errorf(ErrInvalid, CodeInvalidBody, "status", "an EVSE cannot be created REMOVED")
	}
	if len(e.Connectors) == 0 || len(e.Connectors) > MaxConnectors {
		return Errorf(ErrInvalid, CodeInvalidBody, "connectors", "an EVSE needs 1 to %d connectors, not %d", MaxConnectors, len(e.Connectors))
	}
	for i := range e.Connectors {
		c := &e.Connectors[i]
		if c.ID < 1 || c.ID > int64(len(e.Connectors)) {
			return Errorf(ErrInvalid, CodeInvalidBody, fmt.Sprintf("connectors[%d].id", i),
				"connectors[%d].id: connector ids must be 1 to %d for %d connectors, not %d", i, len(e.Connectors), len(e.Connectors), c.ID)
		}
		c.Error, c.DeletedAt = nil, nil
		if c.TariffIDs == nil {
			c.TariffIDs = []string{}
		}
	}
	if e.LocationID == "" {
		return Errorf(ErrInvalid, CodeInvalidBody, "locationId", "locationId is required")
	}
	if !ValidLocationID(e.LocationID) {
		return Errorf(ErrInvalid, CodeInvalidBody, "locationId", "%q is not a location id", e.LocationID)
	}
	e.OperatorHold = e.Status == StatusInoperative
	e.Version = 1
	e.LastUpdated = Stamp(now)
	for i := range e.Connectors {
		e.Connectors[i].LastUpdated = e.LastUpdated
	}
	slices.SortFunc(e.Connectors, func(a, b Connector) int { return int(a.ID - b.ID) })
	return e.validate(false)
}

// LocationDeleted is the error of a write to a deleted location, named by path
// parameter id.
func LocationDeleted(id string, at time.Time) error { return LocationDeletedParam("id", id, at) }

// LocationDeletedParam is LocationDeleted for a location named by param (as
// "locationId" in a body).
func LocationDeletedParam(param, id string, at time.Time) error {
	return Errorf(ErrConflict, CodeLocationDeleted, param, "%s: location %s was deleted at %s; its id cannot be used again",
		param, id, at.UTC().Format(time.RFC3339))
}

// LocationNotFound is the error of a location that does not exist; param names the
// parameter or field that named it.
func LocationNotFound(param, id string) error {
	return Errorf(ErrNotFound, CodeNotFound, param, "location with id %s not found", id)
}

// LocationInUse is the error of deleting location id while the EVSEs uids (not REMOVED)
// are at it.
func LocationInUse(id string, uids []int64) error {
	parts := make([]string, len(uids))
	for i, u := range uids {
		parts[i] = fmt.Sprint(u)
	}
	return Errorf(ErrConflict, CodeLocationInUse, "id", "location %s still has EVSEs that are not REMOVED: %s; remove them first (DELETE /v2/evses/{uid})",
		id, strings.Join(parts, ", "))
}

// SameFields reports whether l and o have the same fields a client sets (everything but
// EvseUIDs, LastUpdated, Version and DeletedAt).
func (l *Location) SameFields(o *Location) bool {
	return l.ID == o.ID && l.Name == o.Name && l.Address == o.Address && l.City == o.City && l.PostalCode == o.PostalCode &&
		l.Country == o.Country && l.Latitude == o.Latitude && l.Longitude == o.Longitude && l.TimeZone == o.TimeZone
}
