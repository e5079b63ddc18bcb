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
	EventStatusChanged    = "evse.status.changed"
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
}

// Renderers maps each event type and payload version to the function that turns an
// event's stored Data into that version's data. The catalogue (eventtypes.json) must
// list exactly these types and versions; a test keeps them equal.
var Renderers = map[string]map[string]func(json.RawMessage) (json.RawMessage, error){
	EventConnectorUpdated: {"1.0": identity},
	EventStatusChanged:    {"1.0": identity},
}

func identity(d json.RawMessage) (json.RawMessage, error) { return d, nil }

// Render returns the body of a delivery of e in payload version version:
// {"type", "timestamp", "data"}. It returns an error for a type or version without a
// renderer.
func (e *Event) Render(version string) ([]byte, error) {
	r, ok := Renderers[e.Type][version]
	if !ok {
		return nil, fmt.Errorf("event %s: no renderer for %s version %s", e.ID, e.Type, version)
	}
	data, err := r(e.Data)
	if err != nil {
		return nil, fmt.Errorf("event %s: rendering %s version %s: %w", e.ID, e.Type, version, err)
	}
	return json.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{e.Type, e.Time.UTC().Format(time.RFC3339Nano), data})
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
	return Event{ID: NewID("evt_", now), Type: EventConnectorUpdated, Time: now.UTC(), Data: data}, nil
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
	}{newEVSEData(e), e.Status, previous, n.ConnectorID, n.Status, n.ErrorCode, n.Timestamp.UTC()})
	if err != nil {
		return Event{}, err
	}
	return Event{ID: NewID("evt_", now), Type: EventStatusChanged, Time: now.UTC(), Data: data}, nil
}
