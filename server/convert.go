package server

import (
	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
)

// EVSEToAPI converts a domain EVSE to its contract representation.
func EVSEToAPI(e *chargenet.EVSE) gen.EVSE {
	out := gen.EVSE{
		Uid:         e.UID,
		EvseId:      e.EvseID,
		ChargeboxId: e.ChargeboxID,
		Status:      gen.EvseStatus(e.Status),
		LastUpdated: e.LastUpdated.UTC(),
		Connectors:  make([]gen.Connector, len(e.Connectors)),
	}
	if e.LocationID != "" {
		id := e.LocationID
		out.LocationId = &id
	}
	for i := range e.Connectors {
		out.Connectors[i] = connectorToAPI(&e.Connectors[i])
	}
	return out
}

func connectorToAPI(c *chargenet.Connector) gen.Connector {
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
	if c.DeletedAt != nil {
		t := c.DeletedAt.UTC()
		out.DeletedAt = &t
	}
	return out
}

// EVSEFromAPI converts a contract EVSE (as found in an import file) to the domain type.
// It does not validate; call Validate on the result.
func EVSEFromAPI(e *gen.EVSE) chargenet.EVSE {
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
	for i, c := range e.Connectors {
		dc := chargenet.Connector{
			ID:               c.Id,
			Standard:         chargenet.Standard(c.Standard),
			Format:           chargenet.Format(c.Format),
			PowerType:        chargenet.PowerType(c.PowerType),
			MaxElectricPower: c.MaxElectricPower,
			MaxAmperage:      c.MaxAmperage,
			MaxVoltage:       c.MaxVoltage,
			TariffIDs:        c.TariffIds,
		}
		if dc.TariffIDs == nil {
			dc.TariffIDs = []string{}
		}
		if c.Error != nil {
			dc.Error = &chargenet.ConnectorError{Code: chargenet.ErrorCode(c.Error.ErrorCode)}
			if c.Error.Info != nil {
				dc.Error.Info = *c.Error.Info
			}
			if c.Error.VendorErrorCode != nil {
				dc.Error.VendorErrorCode = *c.Error.VendorErrorCode
			}
		}
		if c.DeletedAt != nil {
			t := c.DeletedAt.UTC()
			dc.DeletedAt = &t
		}
		out.Connectors[i] = dc
	}
	return out
}

// LocationToAPI converts a domain location to its contract representation.
func LocationToAPI(l *chargenet.Location) gen.Location {
	out := gen.Location{
		Id:          l.ID,
		Name:        l.Name,
		Address:     l.Address,
		City:        l.City,
		Country:     l.Country,
		Coordinates: gen.GeoLocation{Latitude: l.Latitude, Longitude: l.Longitude},
		TimeZone:    l.TimeZone,
		EvseUids:    l.EvseUIDs,
		LastUpdated: l.LastUpdated.UTC(),
	}
	if out.EvseUids == nil {
		out.EvseUids = []int64{}
	}
	if l.PostalCode != "" {
		pc := l.PostalCode
		out.PostalCode = &pc
	}
	if l.DeletedAt != nil {
		at := l.DeletedAt.UTC()
		out.DeletedAt = &at
	}
	return out
}

// LocationFromAPI converts a contract location (as found in an import file) to the
// domain type. EvseUids is ignored: it is derived from the EVSEs' locationId.
func LocationFromAPI(l *gen.Location) chargenet.Location {
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

func patchFromAPI(p *gen.ConnectorPatch) chargenet.ConnectorPatch {
	out := chargenet.ConnectorPatch{
		MaxElectricPower: p.MaxElectricPower,
		MaxAmperage:      p.MaxAmperage,
		MaxVoltage:       p.MaxVoltage,
	}
	if p.Standard != nil {
		s := chargenet.Standard(*p.Standard)
		out.Standard = &s
	}
	if p.Format != nil {
		f := chargenet.Format(*p.Format)
		out.Format = &f
	}
	return out
}
