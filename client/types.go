package client

import (
	"slices"
	"time"

	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/timestamp"
)

// EVSEStatus is the status of an EVSE, mapped from the OCPP 1.6 status of its charge
// box. The service may add values; compare against the constants and treat others as
// unknown.
type EVSEStatus string

// The EVSE statuses of the contract.
const (
	StatusAvailable   EVSEStatus = "AVAILABLE"   // OCPP Available
	StatusReserved    EVSEStatus = "RESERVED"    // OCPP Reserved
	StatusCharging    EVSEStatus = "CHARGING"    // OCPP Preparing, Charging, Finishing
	StatusBlocked     EVSEStatus = "BLOCKED"     // OCPP SuspendedEV, SuspendedEVSE
	StatusOutOfOrder  EVSEStatus = "OUTOFORDER"  // OCPP Faulted
	StatusInoperative EVSEStatus = "INOPERATIVE" // OCPP Unavailable
	StatusPlanned     EVSEStatus = "PLANNED"     // set by the operator before commissioning
	StatusRemoved     EVSEStatus = "REMOVED"     // set by the operator after decommissioning
	StatusUnknown     EVSEStatus = "UNKNOWN"     // no status received yet
)

// Standard is the plug standard of a connector.
type Standard string

// The plug standards of the contract. The DC standards (CHADEMO, the two COMBO ones and
// GBT_DC) need PowerDC and FormatCable; the AC standards need an AC power type.
const (
	StandardChademo         Standard = "CHADEMO"
	StandardIEC62196T1      Standard = "IEC_62196_T1"
	StandardIEC62196T1Combo Standard = "IEC_62196_T1_COMBO"
	StandardIEC62196T2      Standard = "IEC_62196_T2"
	StandardIEC62196T2Combo Standard = "IEC_62196_T2_COMBO"
	StandardGBTAC           Standard = "GBT_AC"
	StandardGBTDC           Standard = "GBT_DC"
)

// IsDC reports whether s is one of the DC standards.
func (s Standard) IsDC() bool {
	switch s {
	case StandardChademo, StandardIEC62196T1Combo, StandardIEC62196T2Combo, StandardGBTDC:
		return true
	}
	return false
}

// Format says whether a connector is a socket (the driver brings a cable) or has a
// fixed cable.
type Format string

// The connector formats of the contract.
const (
	FormatSocket Format = "SOCKET"
	FormatCable  Format = "CABLE"
)

// PowerType is the power type of a connector.
type PowerType string

// The power types of the contract.
const (
	PowerAC1Phase      PowerType = "AC_1_PHASE"
	PowerAC2Phase      PowerType = "AC_2_PHASE"
	PowerAC2PhaseSplit PowerType = "AC_2_PHASE_SPLIT"
	PowerAC3Phase      PowerType = "AC_3_PHASE"
	PowerDC            PowerType = "DC"
)

// ConnectorErrorCode is an error code reported by a charge box (OCPP 1.6
// ChargePointErrorCode), such as "GroundFailure" or "HighTemperature".
type ConnectorErrorCode string

// EVSE is a charging point with its connectors.
type EVSE struct {
	// UID uniquely identifies the EVSE; it is the identifier of the API's paths.
	UID int64
	// EVSEID is the eMI3 / ISO 15118 EVSE ID, for example "DE*ABC*E1001*1".
	EVSEID string
	// ChargeboxID identifies the charge box that holds the EVSE.
	ChargeboxID int64
	// LocationID is the ID of the Location of the EVSE, or empty.
	LocationID string
	// Status is the EVSE's status.
	Status EVSEStatus
	// Connectors are all connectors of the EVSE in ascending ID order, deleted ones
	// included (see Connector.Deleted).
	Connectors []Connector
	// LastUpdated is when the EVSE or one of its connectors last changed (UTC, to the
	// microsecond). It is later with every Version.
	LastUpdated time.Time
	// Version counts the changes of the EVSE and its connectors (its ETag holds it): of
	// two copies of an EVSE, the one with the higher Version is the newer one.
	Version int64
}

// Connector returns the connector of e with the given ID, or nil.
func (e *EVSE) Connector(id int64) *Connector {
	for i := range e.Connectors {
		if e.Connectors[i].ID == id {
			return &e.Connectors[i]
		}
	}
	return nil
}

// Connector is one connector (plug or socket) of an EVSE.
type Connector struct {
	// ID identifies the connector within its EVSE.
	ID int64
	// Standard is the plug standard.
	Standard Standard
	// Format is socket or cable.
	Format Format
	// PowerType is AC (one, two or three phases) or DC.
	PowerType PowerType
	// MaxElectricPower is the maximum power output in kW.
	MaxElectricPower float64
	// MaxAmperage is the maximum current in A.
	MaxAmperage float64
	// MaxVoltage is the maximum voltage in V.
	MaxVoltage float64
	// TariffIDs are the identifiers of the currently valid tariffs (may be empty).
	TariffIDs []string
	// Error is the error the charge box reports for the connector, or nil.
	Error *ConnectorError
	// DeletedAt is when the connector was deleted, or nil while it is in service.
	DeletedAt *time.Time
}

// Deleted reports whether the connector was deleted. A deleted connector cannot be
// updated: UpdateConnector fails with ErrConflict.
func (c *Connector) Deleted() bool { return c.DeletedAt != nil }

// ConnectorError is the error status of a connector as reported by its charge box.
type ConnectorError struct {
	// Code is the OCPP 1.6 error code.
	Code ConnectorErrorCode
	// Info is free-form additional information, or empty.
	Info string
	// VendorErrorCode is the vendor's own error code, or empty.
	VendorErrorCode string
}

// ConnectorPatch holds the connector fields UpdateConnector changes: only the non-nil
// ones, the others keep their value. At least one must be set. With Go 1.26 a field is
// set most simply with new: ConnectorPatch{MaxElectricPower: new(300.0)}.
type ConnectorPatch struct {
	// Standard is the new plug standard; it must suit the connector's power type.
	Standard *Standard
	// Format is the new format; DC standards need FormatCable.
	Format *Format
	// MaxElectricPower in kW: greater than 0, at most 4000.
	MaxElectricPower *float64
	// MaxAmperage in A: greater than 0, at most 3000.
	MaxAmperage *float64
	// MaxVoltage in V: greater than 0, at most 1500.
	MaxVoltage *float64
}

// Location is a site that holds EVSEs, modelled on the OCPI 2.2.1 Location object.
type Location struct {
	// ID identifies the location (letters, digits, "-" and "_", at most 36 characters).
	ID string
	// Name is the display name.
	Name string
	// Address is the street and house number.
	Address string
	// City is the city or town.
	City string
	// PostalCode is the postal code, or empty where the country has none.
	PostalCode string
	// Country is the ISO 3166-1 alpha-3 country code, for example "DEU".
	Country string
	// Latitude and Longitude are the WGS 84 coordinates.
	Latitude, Longitude float64
	// TimeZone is the IANA time zone, for example "Europe/Berlin".
	TimeZone string
	// EVSEUIDs are the UIDs of the EVSEs at the location, ascending.
	EVSEUIDs []int64
	// LastUpdated is when the location last changed (UTC, to the microsecond): its own
	// fields, its deletion, the set of EVSEs it holds, or one of those EVSEs or their
	// connectors. It is the newest of the location's and its EVSEs', and later with every
	// Version.
	LastUpdated time.Time
	// Version counts the changes that moved LastUpdated: of two copies of a location, the
	// one with the higher Version is the newer one.
	Version int64
	// DeletedAt is when the location was deleted (see DeleteLocation), or nil while it
	// exists.
	DeletedAt *time.Time
}

// Deleted reports whether the location was deleted. A deleted location is in no list
// page and its ID cannot be used again: PutLocation fails with ErrConflict.
func (l *Location) Deleted() bool { return l.DeletedAt != nil }

// NewEVSE is an EVSE to create with CreateEVSE; the service assigns its UID.
type NewEVSE struct {
	// EVSEID is the eMI3 EVSE ID, for example "DE*ABC*E2001*1"; no other EVSE may have
	// it.
	EVSEID string
	// ChargeboxID identifies the charge box that holds the EVSE.
	ChargeboxID int64
	// LocationID is the ID of an existing location that is not deleted.
	LocationID string
	// Status is the first status; empty means StatusPlanned. It cannot be StatusRemoved.
	// Charge box status notifications leave a planned EVSE's status alone until the
	// operator commissions it with UpdateEVSE.
	Status EVSEStatus
	// Connectors are the EVSE's connectors; the i-th one (from 0) gets the ID i+1.
	Connectors []NewConnector
}

// NewConnector is a connector to create, in a NewEVSE or with CreateConnector. The
// connector rules of UpdateConnector apply: a DC standard needs PowerDC and FormatCable,
// an AC standard an AC power type.
type NewConnector struct {
	// Standard is the plug standard.
	Standard Standard
	// Format is socket or cable.
	Format Format
	// PowerType is AC (one, two or three phases) or DC.
	PowerType PowerType
	// MaxElectricPower in kW: greater than 0, at most 4000.
	MaxElectricPower float64
	// MaxAmperage in A: greater than 0, at most 3000.
	MaxAmperage float64
	// MaxVoltage in V: greater than 0, at most 1500.
	MaxVoltage float64
	// TariffIDs are the identifiers of the connector's tariffs (may be empty).
	TariffIDs []string
}

// EVSEPatch holds the EVSE fields UpdateEVSE changes: only the non-nil ones, the others
// keep their value. At least one must be set.
type EVSEPatch struct {
	// Status is the new status; see UpdateEVSE for the transitions allowed.
	Status *EVSEStatus
	// ChargeboxID is the charge box that now holds the EVSE.
	ChargeboxID *int64
	// LocationID is the ID of the EVSE's new location, an existing one that is not
	// deleted.
	LocationID *string
}

// EventType is one event type a webhook can subscribe to.
type EventType struct {
	// Type is the event type's name, for example "evse.connector.updated".
	Type string
	// APIVersions are the payload versions ("MAJOR.MINOR") it is available in, oldest
	// first.
	APIVersions []string
	// Latest is the highest of APIVersions: what a subscription naming no version gets.
	Latest string
}

func evseFromAPI(a *gen.EVSE) EVSE {
	e := EVSE{
		UID:         a.Uid,
		EVSEID:      a.EvseId,
		ChargeboxID: a.ChargeboxId,
		Status:      EVSEStatus(a.Status),
		Connectors:  make([]Connector, len(a.Connectors)),
		LastUpdated: a.LastUpdated.Time,
	}
	if a.Version != nil {
		e.Version = *a.Version
	}
	if a.LocationId != nil {
		e.LocationID = *a.LocationId
	}
	for i, ac := range a.Connectors {
		c := Connector{
			ID:               ac.Id,
			Standard:         Standard(ac.Standard),
			Format:           Format(ac.Format),
			PowerType:        PowerType(ac.PowerType),
			MaxElectricPower: ac.MaxElectricPower,
			MaxAmperage:      ac.MaxAmperage,
			MaxVoltage:       ac.MaxVoltage,
			TariffIDs:        ac.TariffIds,
			DeletedAt:        timeOf(ac.DeletedAt),
		}
		if c.TariffIDs == nil {
			c.TariffIDs = []string{}
		}
		if ac.Error != nil {
			c.Error = &ConnectorError{Code: ConnectorErrorCode(ac.Error.ErrorCode)}
			if ac.Error.Info != nil {
				c.Error.Info = *ac.Error.Info
			}
			if ac.Error.VendorErrorCode != nil {
				c.Error.VendorErrorCode = *ac.Error.VendorErrorCode
			}
		}
		e.Connectors[i] = c
	}
	return e
}

// timeOf returns the time of t, nil when t is nil.
func timeOf(t *timestamp.Time) *time.Time {
	if t == nil {
		return nil
	}
	at := t.Time
	return &at
}

func locationFromAPI(a *gen.Location) Location {
	l := Location{
		ID:          a.Id,
		Name:        a.Name,
		Address:     a.Address,
		City:        a.City,
		Country:     a.Country,
		Latitude:    a.Coordinates.Latitude,
		Longitude:   a.Coordinates.Longitude,
		TimeZone:    a.TimeZone,
		EVSEUIDs:    a.EvseUids,
		LastUpdated: a.LastUpdated.Time,
		DeletedAt:   timeOf(a.DeletedAt),
	}
	if a.Version != nil {
		l.Version = *a.Version
	}
	if a.PostalCode != nil {
		l.PostalCode = *a.PostalCode
	}
	if l.EVSEUIDs == nil {
		l.EVSEUIDs = []int64{}
	}
	return l
}

func (p ConnectorPatch) toAPI() gen.ConnectorPatch {
	return gen.ConnectorPatch{
		Standard:         (*gen.ConnectorStandard)(p.Standard),
		Format:           (*gen.ConnectorFormat)(p.Format),
		MaxElectricPower: p.MaxElectricPower,
		MaxAmperage:      p.MaxAmperage,
		MaxVoltage:       p.MaxVoltage,
	}
}

func (l Location) toAPI() gen.LocationInput {
	in := gen.LocationInput{
		Name:        l.Name,
		Address:     l.Address,
		City:        l.City,
		Country:     l.Country,
		Coordinates: gen.GeoLocation{Latitude: l.Latitude, Longitude: l.Longitude},
		TimeZone:    l.TimeZone,
	}
	if l.PostalCode != "" {
		in.PostalCode = &l.PostalCode
	}
	return in
}

func (e NewEVSE) toAPI() gen.EVSECreate {
	out := gen.EVSECreate{
		EvseId:      e.EVSEID,
		ChargeboxId: e.ChargeboxID,
		LocationId:  e.LocationID,
		Connectors:  make([]gen.ConnectorInput, len(e.Connectors)),
	}
	if e.Status != "" {
		out.Status = (*gen.EvseStatus)(&e.Status)
	}
	for i, c := range e.Connectors {
		a := c.toAPI()
		out.Connectors[i] = gen.ConnectorInput{
			Id:               int64(i + 1),
			Standard:         a.Standard,
			Format:           a.Format,
			PowerType:        a.PowerType,
			MaxElectricPower: a.MaxElectricPower,
			MaxAmperage:      a.MaxAmperage,
			MaxVoltage:       a.MaxVoltage,
			TariffIds:        a.TariffIds,
		}
	}
	return out
}

func (c NewConnector) toAPI() gen.ConnectorCreate {
	out := gen.ConnectorCreate{
		Standard:         gen.ConnectorStandard(c.Standard),
		Format:           gen.ConnectorFormat(c.Format),
		PowerType:        gen.PowerType(c.PowerType),
		MaxElectricPower: c.MaxElectricPower,
		MaxAmperage:      c.MaxAmperage,
		MaxVoltage:       c.MaxVoltage,
	}
	if c.TariffIDs != nil {
		ids := slices.Clone(c.TariffIDs)
		out.TariffIds = &ids
	}
	return out
}

func (p EVSEPatch) toAPI() gen.EVSEPatch {
	return gen.EVSEPatch{
		Status:      (*gen.EvseStatus)(p.Status),
		ChargeboxId: p.ChargeboxID,
		LocationId:  p.LocationID,
	}
}
