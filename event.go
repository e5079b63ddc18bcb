package chargenet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/chargenet/chargenet/timestamp"
)

// The event types the service produces. eventtypes.json lists them with their payload
// versions; renderers holds one renderer per type and version.
const (
	EventConnectorUpdated      = "evse.connector.updated"
	EventConnectorCreated      = "evse.connector.created"
	EventConnectorDeleted      = "evse.connector.deleted"
	EventStatusChanged         = "evse.status.changed"
	EventEVSECreated           = "evse.created"
	EventEVSERemoved           = "evse.removed"
	EventEVSEUpdated           = "evse.updated"
	EventLocationCreated       = "location.created"
	EventLocationUpdated       = "location.updated"
	EventLocationDeleted       = "location.deleted"
	EventChargeboxConnected    = "chargebox.connected"
	EventChargeboxDisconnected = "chargebox.disconnected"
)

// Sources of an evse.status.changed event (version 1.1 and later; SourceConnection
// from version 1.2).
const (
	SourceChargebox  = "chargebox"
	SourceOperator   = "operator"
	SourceConnection = "connection" // the charge box's OCPP connection ended
)

// Event is a change the service made, recorded in the same transaction as the change
// (the outbox) and delivered to the webhooks subscribed to its Type.
type Event struct {
	ID   string    // "evt_" + 26 characters (NewID); the webhook-id of every delivery
	Type string    // one of the Event* constants
	Time time.Time // when the change was committed
	// Payload is what the event says, as the domain made it; nil on an event read back
	// from the log. A store encodes it into Data when it writes the event.
	Payload EventPayload
	// Data is the payload in the type's latest version, as JSON; Render derives the
	// other versions from it.
	Data json.RawMessage
	// TraceParent is the W3C traceparent of the change that caused the event ("" when
	// it was not traced): its deliveries continue that trace.
	TraceParent string
	// Actor is who made the change: the name of the API key, or "chargebox:<identity>"
	// for a status a charge box reported over OCPP; "" when unknown (events recorded
	// before actors were). The store sets it; it is in Data from the payload versions
	// that have it, and the event log filters on it.
	Actor string
	// Pos and Seq are the event's place in the log (see ChangeSeek): Pos its change
	// position, Seq its number in the log, unique. Only ListEvents and Event set them.
	Pos uint64
	Seq int64
}

// renderers maps each event type and payload version to the function that turns an
// event's stored Data into that version's data. The catalogue (eventtypes.json) must
// list exactly these types and versions; a test keeps them equal.
//
// Every type's latest version carries actor (1.1; 1.2 for evse.status.changed, whose
// 1.2 also adds source connection; 1.0 for the chargebox types, which began with it);
// the versions before it are rendered without.
var renderers = map[string]map[string]func(json.RawMessage) (json.RawMessage, error){
	EventConnectorUpdated: {"1.0": withoutActor, "1.1": identity},
	EventConnectorCreated: {"1.0": withoutActor, "1.1": identity},
	EventConnectorDeleted: {"1.0": withoutActor, "1.1": identity},
	EventStatusChanged: {"1.0": then(withoutActor, statusChanged10), "1.1": then(withoutActor, statusChanged11),
		"1.2": statusChanged12},
	EventEVSECreated:     {"1.0": withoutActor, "1.1": identity},
	EventEVSERemoved:     {"1.0": withoutActor, "1.1": identity},
	EventEVSEUpdated:     {"1.0": withoutActor, "1.1": identity},
	EventLocationCreated: {"1.0": withoutActor, "1.1": identity},
	EventLocationUpdated: {"1.0": withoutActor, "1.1": identity},
	EventLocationDeleted: {"1.0": withoutActor, "1.1": identity},
	EventWebhookPing:     {"1.0": withoutActor, "1.1": identity},

	EventChargeboxConnected:    {"1.0": identity},
	EventChargeboxDisconnected: {"1.0": identity},
}

// PingVersion is the payload version test pings are delivered in: webhook.ping's latest.
const PingVersion = "1.1"

// actorKey is the key of actor in stored data, as JSON writes it.
var actorKey = []byte(`"actor"`)

// withoutActor renders a version before actor: the stored data without it.
func withoutActor(d json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(d, actorKey) {
		return d, nil // stored before actors, or without one
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(d, &m); err != nil {
		return nil, err
	}
	if _, ok := m["actor"]; !ok {
		return d, nil // the text was in a value
	}
	delete(m, "actor")
	return json.Marshal(m)
}

// then returns the renderer that applies first, then second.
func then(first, second func(json.RawMessage) (json.RawMessage, error)) func(json.RawMessage) (json.RawMessage, error) {
	return func(d json.RawMessage) (json.RawMessage, error) {
		d, err := first(d)
		if err != nil {
			return nil, err
		}
		return second(d)
	}
}

// statusChanged10 renders evse.status.changed 1.0 from the stored data: without
// source, and for the operator's change and the connection's with ocppConnectorId 0
// (1.0 requires it; 0 is the whole charge box).
func statusChanged10(d json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(d, &m); err != nil {
		return nil, err
	}
	src, ok := m["source"]
	if !ok {
		return d, nil // stored before 1.1: already 1.0
	}
	delete(m, "source")
	if s := string(src); s == `"`+SourceOperator+`"` || s == `"`+SourceConnection+`"` {
		m["ocppConnectorId"] = json.RawMessage("0")
	}
	return json.Marshal(m)
}

// statusChanged11 renders evse.status.changed 1.1: the stored data, with source
// chargebox for data stored before 1.1 and for a change of the connection (1.1 knows
// only chargebox and operator; the connection is the charge box's).
func statusChanged11(d json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(d, &m); err != nil {
		return nil, err
	}
	if src, ok := m["source"]; ok && string(src) != `"`+SourceConnection+`"` {
		return d, nil
	}
	m["source"] = json.RawMessage(`"` + SourceChargebox + `"`)
	return json.Marshal(m)
}

// statusChanged12 renders evse.status.changed 1.2: the stored data, with source
// chargebox for data stored before 1.1.
func statusChanged12(d json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(d, &m); err != nil {
		return nil, err
	}
	if _, ok := m["source"]; ok {
		return d, nil
	}
	m["source"] = json.RawMessage(`"` + SourceChargebox + `"`)
	return json.Marshal(m)
}

func identity(d json.RawMessage) (json.RawMessage, error) { return d, nil }

// Render returns the body of a delivery of e in payload version version:
// {"type", "timestamp", "data"}, the timestamp as package timestamp writes it. It
// returns an error for a type or version without a renderer.
func (e *Event) Render(version string) ([]byte, error) {
	data, err := e.RenderData(version)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{e.Type, timestamp.Format(e.Time), data})
}

// RenderData returns e's data in payload version version. It returns an error for a
// type or version without a renderer.
func (e *Event) RenderData(version string) (json.RawMessage, error) {
	r, ok := renderers[e.Type][version]
	if !ok {
		return nil, fmt.Errorf("event %s: no renderer for %s version %s", e.ID, e.Type, version)
	}
	data, err := r(e.Data)
	if err != nil {
		return nil, fmt.Errorf("event %s: rendering %s version %s: %w", e.ID, e.Type, version, err)
	}
	return data, nil
}

// EventPayload is what an event says, as the domain made it: one of EVSEPayload,
// ConnectorPayload, StatusPayload, LocationPayload, PingPayload and ChargeboxPayload. A store encodes it
// into the event's Data (package internal/wire) when it writes the event.
type EventPayload interface{ eventPayload() }

// EVSEPayload is the data of evse.created, evse.removed and evse.updated: the EVSE as
// it is after the change, and the location it left (evse.updated only, "" when it
// did not move).
type EVSEPayload struct {
	EVSE               EVSE
	PreviousLocationID string
}

// ConnectorPayload is the data of evse.connector.updated, .created and .deleted: the
// EVSE as it is after the change, and the connector changed.
type ConnectorPayload struct {
	EVSE        EVSE
	ConnectorID int64
}

// StatusPayload is the data of evse.status.changed: the EVSE as it is after the change,
// its status before, who changed it (SourceChargebox, SourceOperator or
// SourceConnection), when, and the charge box's notification (nil for the operator's
// change and the connection's).
type StatusPayload struct {
	EVSE         EVSE
	Previous     EvseStatus
	Source       string
	ReportedAt   time.Time
	Notification *StatusNotification
}

// LocationPayload is the data of location.created, .updated and .deleted: the location
// as it is after the change.
type LocationPayload struct{ Location Location }

// PingPayload is the data of webhook.ping: the webhook tested and its URL.
type PingPayload struct{ WebhookID, URL string }

// ChargeboxPayload is the data of chargebox.connected and chargebox.disconnected: the
// box, the OCPP version of the connection, and why it ended (disconnected only).
type ChargeboxPayload struct {
	ChargeboxID                int64
	Identity, Protocol, Reason string
}

func (EVSEPayload) eventPayload()      {}
func (ConnectorPayload) eventPayload() {}
func (StatusPayload) eventPayload()    {}
func (LocationPayload) eventPayload()  {}
func (PingPayload) eventPayload()      {}
func (ChargeboxPayload) eventPayload() {}

// newEvent returns an event of type typ at now saying p.
func newEvent(typ string, p EventPayload, now time.Time) Event {
	return Event{ID: NewID("evt_", now), Type: typ, Time: Stamp(now), Payload: p}
}

// NewConnectorUpdatedEvent returns the evse.connector.updated event of connector
// connectorID of e, as e is after the update (its Version already incremented).
func NewConnectorUpdatedEvent(e *EVSE, connectorID int64, now time.Time) (Event, error) {
	return newConnectorEvent(EventConnectorUpdated, e, connectorID, now)
}

// newConnectorEvent returns the event of type typ (evse.connector.updated, .created or
// .deleted) of connector connectorID of e, as e is after the change. It returns an error
// when e has no such connector.
func newConnectorEvent(typ string, e *EVSE, connectorID int64, now time.Time) (Event, error) {
	if e.Connector(connectorID) == nil {
		return Event{}, fmt.Errorf("connector %d of EVSE %d not found", connectorID, e.UID)
	}
	return newEvent(typ, ConnectorPayload{EVSE: *e.Clone(), ConnectorID: connectorID}, now), nil
}

// NewStatusChangedEvent returns the evse.status.changed event of e, as e is after the
// change, caused by notification n.
func NewStatusChangedEvent(e *EVSE, previous EvseStatus, n *StatusNotification, now time.Time) Event {
	note := *n
	return newEvent(EventStatusChanged, StatusPayload{EVSE: *e.Clone(), Previous: previous, Source: SourceChargebox,
		ReportedAt: n.Timestamp.UTC(), Notification: &note}, now)
}

// NewOperatorStatusChangedEvent returns the evse.status.changed event of a status the
// operator set on e (e as it is after the change).
func NewOperatorStatusChangedEvent(e *EVSE, previous EvseStatus, now time.Time) Event {
	return newEvent(EventStatusChanged, StatusPayload{EVSE: *e.Clone(), Previous: previous, Source: SourceOperator,
		ReportedAt: now.UTC()}, now)
}

// NewConnectionStatusChangedEvent returns the evse.status.changed event of e (as it is
// after the change) turned UNKNOWN because its charge box's connection ended, with
// actor as its Actor (ChargeboxActor of the box).
func NewConnectionStatusChangedEvent(e *EVSE, previous EvseStatus, actor string, now time.Time) Event {
	ev := newEvent(EventStatusChanged, StatusPayload{EVSE: *e.Clone(), Previous: previous, Source: SourceConnection,
		ReportedAt: now.UTC()}, now)
	ev.Actor = actor
	return ev
}

// NewChargeboxEvent returns the chargebox.connected or chargebox.disconnected event of
// box c (its Protocol the connection's), with reason for chargebox.disconnected. Its
// actor is the box's (ChargeboxActor): a connection is the box's doing, and so is its
// end as the service sees it, even when a revocation ended it.
func NewChargeboxEvent(typ string, c *Chargebox, reason string, now time.Time) Event {
	ev := newEvent(typ, ChargeboxPayload{ChargeboxID: c.ID, Identity: c.Identity, Protocol: c.Protocol, Reason: reason}, now)
	ev.Actor = ChargeboxActor(c.Identity)
	return ev
}

// NewEVSEEvent returns the event of type typ (evse.created or evse.removed) of e as it
// is after the change.
func NewEVSEEvent(typ string, e *EVSE, now time.Time) Event {
	return newEvent(typ, EVSEPayload{EVSE: *e.Clone()}, now)
}

// NewEVSEUpdatedEvent returns the evse.updated event of e as it is after a change that
// no other event describes, with the location e left when the change moved it away from
// previousLocationID ("" or e's own location when it did not move).
func NewEVSEUpdatedEvent(e *EVSE, previousLocationID string, now time.Time) Event {
	if previousLocationID == e.LocationID {
		previousLocationID = ""
	}
	return newEvent(EventEVSEUpdated, EVSEPayload{EVSE: *e.Clone(), PreviousLocationID: previousLocationID}, now)
}

// NewLocationEvent returns the event of type typ (location.created, .updated or
// .deleted) of l as it is after the change.
func NewLocationEvent(typ string, l *Location, now time.Time) Event {
	cp := *l
	cp.EvseUIDs = slices.Clone(l.EvseUIDs)
	return newEvent(typ, LocationPayload{Location: cp}, now)
}

// NewPingEvent returns the webhook.ping event the test operation sends to webhook
// webhookID at url.
func NewPingEvent(webhookID, url string, now time.Time) Event {
	return newEvent(EventWebhookPing, PingPayload{WebhookID: webhookID, URL: url}, now)
}
