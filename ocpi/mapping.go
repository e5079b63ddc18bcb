package ocpi

import (
	"math"
	"strconv"

	"github.com/chargenet/chargenet"
	ocpigen "github.com/chargenet/chargenet/gen/ocpi"
)

// The mapping of the inventory onto OCPI 2.2.1 (docs/ocpi.md has it as a table):
//
//   - A location is an OCPI Location of chargenet's country code and party ID, always
//     published; its coordinates have six decimals, its country stays ISO 3166-1
//     alpha-3, an empty postal code is left out. A deleted location is still a Location,
//     with every EVSE REMOVED, so that a pull by date_from sees the deletion.
//   - Its last_updated is the store's: the newest of its own, its EVSEs' and their
//     connectors' (chargenet.Location.Touch). An EVSE's and a connector's are theirs.
//   - An EVSE's uid and a connector's id are the decimal strings of chargenet's
//     integers. An EVSE has no capabilities, coordinates or floor: chargenet does not
//     know them and sends none. An EVSE without a connector in service is left out of its
//     Location (OCPI requires one or more connectors); an EVSE without a location is not
//     in OCPI at all.
//   - A deleted connector is left out of its EVSE. Power is in watts (kW × 1000),
//     voltage in volts and current in amperes, each rounded to an integer. The seven
//     standards, two formats and five power types are OCPI's own values. Tariff ids
//     are passed through; one that is not printable ASCII (OCPI's CiString) is left out.
//     A connector's error (OCPP) has no OCPI field and is not sent.
//   - Every time is UTC with "Z", in milliseconds (DateTime).

// site is what a Location shows, mapped from a chargenet.Site.
func (s *Service) location(site *chargenet.Site) ocpigen.Location {
	l := &site.Location
	out := ocpigen.Location{
		CountryCode: s.cfg.Party.CountryCode,
		PartyId:     s.cfg.Party.PartyID,
		Id:          l.ID,
		Publish:     true,
		Address:     l.Address,
		City:        l.City,
		Country:     l.Country,
		Coordinates: ocpigen.GeoLocation{Latitude: coordinate(l.Latitude), Longitude: coordinate(l.Longitude)},
		TimeZone:    l.TimeZone,
	}
	if l.Name != "" {
		name := l.Name
		out.Name = &name
	}
	if l.PostalCode != "" {
		pc := l.PostalCode
		out.PostalCode = &pc
	}
	removed := l.DeletedAt != nil
	evses := make([]ocpigen.EVSE, 0, len(site.EVSEs))
	for i := range site.EVSEs {
		if m, ok := evse(&site.EVSEs[i], removed); ok {
			evses = append(evses, m)
		}
	}
	out.Evses = &evses
	out.LastUpdated = DateTime(l.LastUpdated)
	return out
}

// evse returns e as an OCPI EVSE, REMOVED when removed (its location was deleted);
// false when e has no connector in service, which OCPI cannot show.
func evse(e *chargenet.EVSE, removed bool) (ocpigen.EVSE, bool) {
	out := ocpigen.EVSE{
		Uid:         strconv.FormatInt(e.UID, 10),
		Status:      ocpigen.Status(e.Status),
		LastUpdated: DateTime(e.LastUpdated),
		Connectors:  make([]ocpigen.Connector, 0, len(e.Connectors)),
	}
	if removed {
		out.Status = ocpigen.StatusREMOVED
	}
	if e.EvseID != "" {
		id := e.EvseID
		out.EvseId = &id
	}
	for i := range e.Connectors {
		if c := &e.Connectors[i]; c.DeletedAt == nil {
			out.Connectors = append(out.Connectors, connector(c))
		}
	}
	return out, len(out.Connectors) > 0
}

// connector returns c as an OCPI Connector.
func connector(c *chargenet.Connector) ocpigen.Connector {
	out := ocpigen.Connector{
		Id:          strconv.FormatInt(c.ID, 10),
		Standard:    ocpigen.ConnectorType(c.Standard),
		Format:      ocpigen.ConnectorFormat(c.Format),
		PowerType:   ocpigen.PowerType(c.PowerType),
		MaxVoltage:  roundInt(c.MaxVoltage),
		MaxAmperage: roundInt(c.MaxAmperage),
		LastUpdated: DateTime(c.LastUpdated),
	}
	watts := roundInt(c.MaxElectricPower * 1000)
	out.MaxElectricPower = &watts
	var tariffs []string
	for _, t := range c.TariffIDs {
		if ciString(t, 36) {
			tariffs = append(tariffs, t)
		}
	}
	if len(tariffs) > 0 {
		out.TariffIds = &tariffs
	}
	return out
}

// coordinate formats a latitude or longitude with six decimals (about 0.1 m), within
// OCPI's pattern and length.
func coordinate(f float64) string { return strconv.FormatFloat(f, 'f', 6, 64) }

func roundInt(f float64) int { return int(math.Round(f)) }

// ciString reports whether s is an OCPI CiString of at most n characters: 1 to n
// printable ASCII characters.
func ciString(s string, n int) bool {
	if s == "" || len(s) > n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
