// Package wire turns the domain into the contract's JSON and back: EVSEs, connectors,
// locations and the data of events, through the types generated from the contract
// (package gen). The server answers with these bytes and the stores keep them, so every
// place that sends an EVSE, a location or an event sends the same JSON. Times are sent
// as package timestamp writes them. Answers show an EVSE's and a location's version;
// the EVSEs and locations in event data do not (their payload versions do not have it).
package wire

import (
	"encoding/json"
	"fmt"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/timestamp"
)

// EVSE returns e as the contract's EVSE, as answers show it: with its version.
func EVSE(e *chargenet.EVSE) gen.EVSE {
	out := evse(e)
	version := e.Version
	out.Version = &version
	return out
}

// evse returns e as the contract's EVSE without its version, as event data shows it.
func evse(e *chargenet.EVSE) gen.EVSE {
	out := gen.EVSE{
		Uid:         e.UID,
		EvseId:      e.EvseID,
		ChargeboxId: e.ChargeboxID,
		Status:      gen.EvseStatus(e.Status),
		LastUpdated: timestamp.New(e.LastUpdated),
		Connectors:  make([]gen.Connector, len(e.Connectors)),
	}
	if e.LocationID != "" {
		id := e.LocationID
		out.LocationId = &id
	}
	for i := range e.Connectors {
		out.Connectors[i] = Connector(&e.Connectors[i])
	}
	return out
}

// Connector returns c as the contract's Connector.
func Connector(c *chargenet.Connector) gen.Connector {
	out := gen.Connector{
		Id:               c.ID,
		Standard:         gen.ConnectorStandard(c.Standard),
		Format:           gen.ConnectorFormat(c.Format),
		PowerType:        gen.PowerType(c.PowerType),
		MaxElectricPower: c.MaxElectricPower,
		MaxAmperage:      c.MaxAmperage,
		MaxVoltage:       c.MaxVoltage,
		TariffIds:        c.TariffIDs,
	}
	if out.TariffIds == nil {
		out.TariffIds = []string{}
	}
	if c.Error != nil {
		st := gen.ConnectorStatus{ErrorCode: gen.ConnectorErrorCode(c.Error.Code)}
		if c.Error.Info != "" {
			st.Info = &c.Error.Info
		}
		if c.Error.VendorErrorCode != "" {
			st.VendorErrorCode = &c.Error.VendorErrorCode
		}
		out.Error = &st
	}
	out.DeletedAt = timestamp.Ptr(c.DeletedAt)
	return out
}

// Location returns l as the contract's Location, as answers show it: with its version.
func Location(l *chargenet.Location) gen.Location {
	out := location(l)
	version := l.Version
	out.Version = &version
	return out
}

// location returns l as the contract's Location without its version, as event data
// shows it.
func location(l *chargenet.Location) gen.Location {
	out := gen.Location{
		Id:          l.ID,
		Name:        l.Name,
		Address:     l.Address,
		City:        l.City,
		Country:     l.Country,
		Coordinates: gen.GeoLocation{Latitude: l.Latitude, Longitude: l.Longitude},
		TimeZone:    l.TimeZone,
		EvseUids:    l.EvseUIDs,
		LastUpdated: timestamp.New(l.LastUpdated),
	}
	if out.EvseUids == nil {
		out.EvseUids = []int64{}
	}
	if l.PostalCode != "" {
		pc := l.PostalCode
		out.PostalCode = &pc
	}
	out.DeletedAt = timestamp.Ptr(l.DeletedAt)
	return out
}

// EncodeEVSE returns the contract JSON of e, as answers show it.
func EncodeEVSE(e *chargenet.EVSE) ([]byte, error) { return json.Marshal(EVSE(e)) }

// EncodeLocation returns the contract JSON of l, as answers show it.
func EncodeLocation(l *chargenet.Location) ([]byte, error) { return json.Marshal(Location(l)) }

// ParseEVSE returns the domain EVSE of a contract EVSE (as found in an import file). It
// does not validate; call Validate on the result.
func ParseEVSE(e *gen.EVSE) chargenet.EVSE {
	out := chargenet.EVSE{
		UID:         e.Uid,
		EvseID:      e.EvseId,
		ChargeboxID: e.ChargeboxId,
		Status:      chargenet.EvseStatus(e.Status),
		LastUpdated: e.LastUpdated.UTC(),
		Connectors:  make([]chargenet.Connector, len(e.Connectors)),
	}
	if e.LocationId != nil {
		out.LocationID = *e.LocationId
	}
	for i := range e.Connectors {
		out.Connectors[i] = ParseConnector(&e.Connectors[i])
	}
	return out
}

// ParseConnector returns the domain connector of a contract connector.
func ParseConnector(c *gen.Connector) chargenet.Connector {
	out := chargenet.Connector{
		ID:               c.Id,
		Standard:         chargenet.Standard(c.Standard),
		Format:           chargenet.Format(c.Format),
		PowerType:        chargenet.PowerType(c.PowerType),
		MaxElectricPower: c.MaxElectricPower,
		MaxAmperage:      c.MaxAmperage,
		MaxVoltage:       c.MaxVoltage,
		TariffIDs:        c.TariffIds,
	}
	if out.TariffIDs == nil {
		out.TariffIDs = []string{}
	}
	if c.Error != nil {
		out.Error = &chargenet.ConnectorError{Code: chargenet.ErrorCode(c.Error.ErrorCode)}
		if c.Error.Info != nil {
			out.Error.Info = *c.Error.Info
		}
		if c.Error.VendorErrorCode != nil {
			out.Error.VendorErrorCode = *c.Error.VendorErrorCode
		}
	}
	if c.DeletedAt != nil {
		t := c.DeletedAt.UTC()
		out.DeletedAt = &t
	}
	return out
}

// ParseLocation returns the domain location of a contract location (as found in an
// import file). EvseUids is ignored: it is derived from the EVSEs' locationId.
func ParseLocation(l *gen.Location) chargenet.Location {
	out := chargenet.Location{
		ID:          l.Id,
		Name:        l.Name,
		Address:     l.Address,
		City:        l.City,
		Country:     l.Country,
		Latitude:    l.Coordinates.Latitude,
		Longitude:   l.Coordinates.Longitude,
		TimeZone:    l.TimeZone,
		LastUpdated: l.LastUpdated.UTC(),
	}
	if l.PostalCode != nil {
		out.PostalCode = *l.PostalCode
	}
	return out
}

// EventData returns the data of ev in its type's latest payload version: ev.Data when
// the event was read back from the log (Payload nil), else its Payload encoded, with
// ev.Actor as actor (none when it is empty). It returns an error for a payload of an
// unknown kind.
func EventData(ev *chargenet.Event) (json.RawMessage, error) {
	actor := optional(ev.Actor)
	switch p := ev.Payload.(type) {
	case nil:
		return ev.Data, nil
	case chargenet.EVSEPayload:
		e := &p.EVSE
		return json.Marshal(gen.EvseEventData{Uid: e.UID, EvseId: e.EvseID, ChargeboxId: e.ChargeboxID,
			LocationId: optional(e.LocationID), Version: e.Version, Evse: evse(e),
			PreviousLocationId: optional(p.PreviousLocationID), Actor: actor})
	case chargenet.ConnectorPayload:
		e := &p.EVSE
		c := e.Connector(p.ConnectorID)
		if c == nil {
			return nil, fmt.Errorf("event %s: connector %d of EVSE %d not found", ev.ID, p.ConnectorID, e.UID)
		}
		return json.Marshal(gen.ConnectorUpdatedData{Uid: e.UID, EvseId: e.EvseID, ChargeboxId: e.ChargeboxID,
			LocationId: optional(e.LocationID), Version: e.Version, Connector: Connector(c), Actor: actor})
	case chargenet.StatusPayload:
		e := &p.EVSE
		source := p.Source
		out := gen.StatusChangedData{Uid: e.UID, EvseId: e.EvseID, ChargeboxId: e.ChargeboxID,
			LocationId: optional(e.LocationID), Version: e.Version, Status: gen.EvseStatus(e.Status),
			PreviousStatus: gen.EvseStatus(p.Previous), ReportedAt: timestamp.New(p.ReportedAt), Source: &source, Actor: actor}
		if n := p.Notification; n != nil {
			code := gen.ConnectorErrorCode(n.ErrorCode)
			out.OcppConnectorId, out.OcppStatus, out.ErrorCode = &n.ConnectorID, &n.Status, &code
		}
		return json.Marshal(out)
	case chargenet.LocationPayload:
		l := location(&p.Location)
		l.Actor = actor
		return json.Marshal(l)
	case chargenet.PingPayload:
		return json.Marshal(gen.PingData{WebhookId: p.WebhookID, Url: p.URL, Actor: actor})
	case chargenet.ChargeboxPayload:
		out := gen.ChargeboxEventData{ChargeboxId: p.ChargeboxID, Identity: p.Identity,
			Protocol: gen.ChargeboxEventDataProtocol(p.Protocol), Actor: actor}
		if p.Reason != "" {
			reason := gen.ChargeboxEventDataReason(p.Reason)
			out.Reason = &reason
		}
		return json.Marshal(out)
	}
	return nil, fmt.Errorf("event %s: payload of unknown kind %T", ev.ID, ev.Payload)
}

// EventPayload returns the payload of an inventory event (a location's, an EVSE's, a
// connector's, a status change): ev.Payload when it is set, else what ev.Data says of
// it, as an event read back from the log has it. The location of a location event and
// the EVSE of an EVSE event are whole; the EVSE of a connector event holds its
// identity, location, version and that connector, of a status change its identity,
// location, version and status, with the notification's connector, status and error
// code. It returns an error for another type of event, or Data that is not its type's.
func EventPayload(ev *chargenet.Event) (chargenet.EventPayload, error) {
	if ev.Payload != nil {
		return ev.Payload, nil
	}
	decode := func(v any) error {
		if err := json.Unmarshal(ev.Data, v); err != nil {
			return fmt.Errorf("event %s: the data of %s: %w", ev.ID, ev.Type, err)
		}
		return nil
	}
	switch ev.Type {
	case chargenet.EventLocationCreated, chargenet.EventLocationUpdated, chargenet.EventLocationDeleted:
		var d gen.Location
		if err := decode(&d); err != nil {
			return nil, err
		}
		l := ParseLocation(&d)
		l.EvseUIDs = d.EvseUids
		if d.DeletedAt != nil {
			t := d.DeletedAt.UTC()
			l.DeletedAt = &t
		}
		return chargenet.LocationPayload{Location: l}, nil
	case chargenet.EventEVSECreated, chargenet.EventEVSEUpdated, chargenet.EventEVSERemoved:
		var d gen.EvseEventData
		if err := decode(&d); err != nil {
			return nil, err
		}
		e := ParseEVSE(&d.Evse)
		e.Version = d.Version
		return chargenet.EVSEPayload{EVSE: e, PreviousLocationID: deref(d.PreviousLocationId)}, nil
	case chargenet.EventConnectorCreated, chargenet.EventConnectorUpdated, chargenet.EventConnectorDeleted:
		var d gen.ConnectorUpdatedData
		if err := decode(&d); err != nil {
			return nil, err
		}
		e := chargenet.EVSE{UID: d.Uid, EvseID: d.EvseId, ChargeboxID: d.ChargeboxId, LocationID: deref(d.LocationId),
			Version: d.Version, Connectors: []chargenet.Connector{ParseConnector(&d.Connector)}}
		return chargenet.ConnectorPayload{EVSE: e, ConnectorID: d.Connector.Id}, nil
	case chargenet.EventStatusChanged:
		var d gen.StatusChangedData
		if err := decode(&d); err != nil {
			return nil, err
		}
		e := chargenet.EVSE{UID: d.Uid, EvseID: d.EvseId, ChargeboxID: d.ChargeboxId, LocationID: deref(d.LocationId),
			Version: d.Version, Status: chargenet.EvseStatus(d.Status)}
		p := chargenet.StatusPayload{EVSE: e, Previous: chargenet.EvseStatus(d.PreviousStatus), Source: deref(d.Source),
			ReportedAt: d.ReportedAt.UTC()}
		if d.OcppConnectorId != nil {
			n := &chargenet.StatusNotification{ChargeboxID: d.ChargeboxId, ConnectorID: *d.OcppConnectorId, Status: deref(d.OcppStatus)}
			if d.ErrorCode != nil {
				n.ErrorCode = chargenet.ErrorCode(*d.ErrorCode)
			}
			p.Notification = n
		}
		return p, nil
	}
	return nil, fmt.Errorf("event %s: %s is not an inventory event", ev.ID, ev.Type)
}

// deref returns *s, or "" when s is nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// EncodeEvents sets the Data of every event that has a Payload (see EventData).
func EncodeEvents(events []chargenet.Event) error {
	for i := range events {
		ev := &events[i]
		if ev.Payload == nil {
			continue
		}
		data, err := EventData(ev)
		if err != nil {
			return err
		}
		ev.Data = data
	}
	return nil
}

// optional returns a pointer to s, or nil when s is empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
