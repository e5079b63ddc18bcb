package chargenet

import (
	"encoding/json"
	"fmt"
	"time"
)

// The event types the service produces. eventtypes.json lists them with their payload
// versions; Renderers holds one renderer per type and version.
const (
	EventConnectorUpdated = "evse.connector.updated"
	EventConnectorCreated = "evse.connector.created"
	EventConnectorDeleted = "evse.connector.deleted"
	EventStatusChanged    = "evse.status.changed"
	EventEVSECreated      = "evse.created"
	EventEVSERemoved      = "evse.removed"
	EventEVSEUpdated      = "evse.updated"
	EventLocationCreated  = "location.created"
	EventLocationUpdated  = "location.updated"
	EventLocationDeleted  = "location.deleted"
)

// Sources of an evse.status.changed event (version 1.1 and later).
const (
	SourceChargebox = "chargebox"
	SourceOperator  = "operator"
)

// Event is a change the service made, recorded in the same transaction as the change
// (the outbox) and delivered to the webhooks subscribed to its Type.
type Event struct {
	ID   string    // "evt_" + 26 characters (NewID); the webhook-id of every delivery
	Type string    // one of the Event* constants
	Time time.Time // when the change was committed
	// Data is the payload in the type's latest version, as JSON; Render derives the
	// other versions from it.
	Data json.RawMessage
	// TraceParent is the W3C traceparent of the change that caused the event ("" when
	// it was not traced): its deliveries continue that trace.
	TraceParent string
	// Pos and Seq are the event's place in the log (see ChangeSeek): Pos its change
	// position, Seq its number in the log, unique. Only ListEvents and Event set them.
	Pos uint64
	Seq int64
}

// Renderers maps each event type and payload version to the function that turns an
// event's stored Data into that version's data. The catalogue (eventtypes.json) must
// list exactly these types and versions; a test keeps them equal.
var Renderers = map[string]map[string]func(json.RawMessage) (json.RawMessage, error){
	EventConnectorUpdated: {"1.0": identity},
	EventConnectorCreated: {"1.0": identity},
	EventConnectorDeleted: {"1.0": identity},
	EventStatusChanged:    {"1.0": statusChanged10, "1.1": statusChanged11},
	EventEVSECreated:      {"1.0": identity},
	EventEVSERemoved:      {"1.0": identity},
	EventEVSEUpdated:      {"1.0": identity},
	EventLocationCreated:  {"1.0": identity},
	EventLocationUpdated:  {"1.0": identity},
	EventLocationDeleted:  {"1.0": identity},
	EventWebhookPing:      {"1.0": identity},
}

// statusChanged10 renders evse.status.changed 1.0 from the stored data: without
// source, and for the operator's change with ocppConnectorId 0 (1.0 requires it).
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
	if string(src) == `"`+SourceOperator+`"` {
		m["ocppConnectorId"] = json.RawMessage("0")
	}
	return json.Marshal(m)
}

// statusChanged11 renders evse.status.changed 1.1: the stored data, with source
// chargebox for data stored before 1.1.
func statusChanged11(d json.RawMessage) (json.RawMessage, error) {
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
// {"type", "timestamp", "data"}. It returns an error for a type or version without a
// renderer.
func (e *Event) Render(version string) ([]byte, error) {
	data, err := e.RenderData(version)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{e.Type, e.Time.UTC().Format(time.RFC3339Nano), data})
}

// RenderData returns e's data in payload version version. It returns an error for a
// type or version without a renderer.
func (e *Event) RenderData(version string) (json.RawMessage, error) {
	r, ok := Renderers[e.Type][version]
	if !ok {
		return nil, fmt.Errorf("event %s: no renderer for %s version %s", e.ID, e.Type, version)
	}
	data, err := r(e.Data)
	if err != nil {
		return nil, fmt.Errorf("event %s: rendering %s version %s: %w", e.ID, e.Type, version, err)
	}
	return data, nil
}

// evseData are the fields every EVSE event's data starts with.
type evseData struct {
	UID         int64  `json:"uid"`
	EvseID      string `json:"evseId"`
	ChargeboxID int64  `json:"chargeboxId"`
	LocationID  string `json:"locationId,omitempty"`
	Version     int64  `json:"version"`
}

func newEVSEData(e *EVSE) evseData {
	return evseData{UID: e.UID, EvseID: e.EvseID, ChargeboxID: e.ChargeboxID, LocationID: e.LocationID, Version: e.Version}
}

// NewConnectorUpdatedEvent returns the evse.connector.updated event of connector
// connectorID of e, as e is after the update (its Version already incremented). The
// data is the contract's ConnectorUpdatedData.
func NewConnectorUpdatedEvent(e *EVSE, connectorID int64, now time.Time) (Event, error) {
	return newConnectorEvent(EventConnectorUpdated, e, connectorID, now)
}

// newConnectorEvent returns the event of type typ (evse.connector.updated, .created or
// .deleted) of connector connectorID of e, as e is after the change.
func newConnectorEvent(typ string, e *EVSE, connectorID int64, now time.Time) (Event, error) {
	c := e.Connector(connectorID)
	if c == nil {
		return Event{}, fmt.Errorf("connector %d of EVSE %d not found", connectorID, e.UID)
	}
	data, err := json.Marshal(struct {
		evseData
		Connector connectorJSON `json:"connector"`
	}{newEVSEData(e), newConnectorJSON(c)})
	if err != nil {
		return Event{}, err
	}
	return Event{ID: NewID("evt_", now), Type: typ, Time: now.UTC(), Data: data}, nil
}

// NewStatusChangedEvent returns the evse.status.changed event of e, as e is after the
// change, caused by notification n. The data is the contract's StatusChangedData.
func NewStatusChangedEvent(e *EVSE, previous EvseStatus, n *StatusNotification, now time.Time) (Event, error) {
	data, err := json.Marshal(struct {
		evseData
		Status          EvseStatus `json:"status"`
		PreviousStatus  EvseStatus `json:"previousStatus"`
		OCPPConnectorID int        `json:"ocppConnectorId"`
		OCPPStatus      string     `json:"ocppStatus"`
		ErrorCode       ErrorCode  `json:"errorCode"`
		ReportedAt      time.Time  `json:"reportedAt"`
		Source          string     `json:"source"`
	}{newEVSEData(e), e.Status, previous, n.ConnectorID, n.Status, n.ErrorCode, n.Timestamp.UTC(), SourceChargebox})
	if err != nil {
		return Event{}, err
	}
	return Event{ID: NewID("evt_", now), Type: EventStatusChanged, Time: now.UTC(), Data: data}, nil
}

// NewOperatorStatusChangedEvent returns the evse.status.changed event of a status the
// operator set on e (e as it is after the change).
func NewOperatorStatusChangedEvent(e *EVSE, previous EvseStatus, now time.Time) (Event, error) {
	data, err := json.Marshal(struct {
		evseData
		Status         EvseStatus `json:"status"`
		PreviousStatus EvseStatus `json:"previousStatus"`
		ReportedAt     time.Time  `json:"reportedAt"`
		Source         string     `json:"source"`
	}{newEVSEData(e), e.Status, previous, now.UTC(), SourceOperator})
	if err != nil {
		return Event{}, err
	}
	return Event{ID: NewID("evt_", now), Type: EventStatusChanged, Time: now.UTC(), Data: data}, nil
}

// NewEVSEEvent returns the event of type typ (evse.created or evse.removed) of e as it
// is after the change: the contract's EvseEventData.
func NewEVSEEvent(typ string, e *EVSE, now time.Time) (Event, error) {
	return newEVSEEvent(typ, e, "", now)
}

// NewEVSEUpdatedEvent returns the evse.updated event of e as it is after a change that
// no other event describes: the contract's EvseEventData, with previousLocationId when
// the change moved e away from location previousLocationID ("" or e's own location when
// it did not move).
func NewEVSEUpdatedEvent(e *EVSE, previousLocationID string, now time.Time) (Event, error) {
	if previousLocationID == e.LocationID {
		previousLocationID = ""
	}
	return newEVSEEvent(EventEVSEUpdated, e, previousLocationID, now)
}

func newEVSEEvent(typ string, e *EVSE, previousLocationID string, now time.Time) (Event, error) {
	doc, err := EVSEJSON(e)
	if err != nil {
		return Event{}, err
	}
	data, err := json.Marshal(struct {
		evseData
		EVSE               json.RawMessage `json:"evse"`
		PreviousLocationID string          `json:"previousLocationId,omitempty"`
	}{newEVSEData(e), doc, previousLocationID})
	if err != nil {
		return Event{}, err
	}
	return Event{ID: NewID("evt_", now), Type: typ, Time: now.UTC(), Data: data}, nil
}

// NewLocationEvent returns the event of type typ (location.created, .updated or
// .deleted) of l as it is after the change: the contract's Location.
func NewLocationEvent(typ string, l *Location, now time.Time) (Event, error) {
	data, err := LocationJSON(l)
	if err != nil {
		return Event{}, err
	}
	return Event{ID: NewID("evt_", now), Type: typ, Time: now.UTC(), Data: data}, nil
}

// NewPingEvent returns the webhook.ping event the test operation sends to webhook
// webhookID at url: its data is {"webhookId", "url"}.
func NewPingEvent(webhookID, url string, now time.Time) Event {
	data, _ := json.Marshal(struct { // two strings always encode
		WebhookID string `json:"webhookId"`
		URL       string `json:"url"`
	}{webhookID, url})
	return Event{ID: NewID("evt_", now), Type: EventWebhookPing, Time: now.UTC(), Data: data}
}
