package chargenet

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// EvseStatus is the status of an EVSE.
type EvseStatus string

// The EVSE statuses of the contract.
const (
	StatusAvailable   EvseStatus = "AVAILABLE"
	StatusReserved    EvseStatus = "RESERVED"
	StatusCharging    EvseStatus = "CHARGING"
	StatusBlocked     EvseStatus = "BLOCKED"
	StatusOutOfOrder  EvseStatus = "OUTOFORDER"
	StatusInoperative EvseStatus = "INOPERATIVE"
	StatusPlanned     EvseStatus = "PLANNED"
	StatusRemoved     EvseStatus = "REMOVED"
	StatusUnknown     EvseStatus = "UNKNOWN"
)

// Valid reports whether s is one of the contract's EVSE statuses.
func (s EvseStatus) Valid() bool {
	switch s {
	case StatusAvailable, StatusReserved, StatusCharging, StatusBlocked, StatusOutOfOrder,
		StatusInoperative, StatusPlanned, StatusRemoved, StatusUnknown:
		return true
	}
	return false
}

// ocppStatus maps OCPP 1.6 ChargePointStatus values to EVSE statuses.
var ocppStatus = map[string]EvseStatus{
	"Available":     StatusAvailable,
	"Reserved":      StatusReserved,
	"Preparing":     StatusCharging,
	"Charging":      StatusCharging,
	"Finishing":     StatusCharging,
	"SuspendedEV":   StatusBlocked,
	"SuspendedEVSE": StatusBlocked,
	"Faulted":       StatusOutOfOrder,
	"Unavailable":   StatusInoperative,
}

// StatusFromOCPP maps a charge box's OCPP 1.6 status to the EVSE status. It returns an
// ErrInvalid *Error for a status OCPP 1.6 does not define.
func StatusFromOCPP(status string) (EvseStatus, error) {
	s, ok := ocppStatus[status]
	if !ok {
		return "", Errorf(ErrInvalid, CodeInvalidBody, "status", "%q is not an OCPP 1.6 charge point status", status)
	}
	return s, nil
}

// ocpp201Status maps OCPP 2.0.1 ConnectorStatus values to EVSE statuses.
var ocpp201Status = map[string]EvseStatus{
	"Available":   StatusAvailable,
	"Occupied":    StatusCharging,
	"Reserved":    StatusReserved,
	"Unavailable": StatusInoperative,
	"Faulted":     StatusOutOfOrder,
}

// StatusFromOCPP201 maps a charging station's OCPP 2.0.1 connector status to the EVSE
// status. It returns an ErrInvalid *Error for a status OCPP 2.0.1 does not define.
func StatusFromOCPP201(status string) (EvseStatus, error) {
	s, ok := ocpp201Status[status]
	if !ok {
		return "", Errorf(ErrInvalid, CodeInvalidBody, "connectorStatus", "%q is not an OCPP 2.0.1 connector status", status)
	}
	return s, nil
}

// Standard is the plug standard of a connector.
type Standard string

// The connector standards of the contract.
const (
	StandardChademo         Standard = "CHADEMO"
	StandardIEC62196T2Combo Standard = "IEC_62196_T2_COMBO"
	StandardIEC62196T2      Standard = "IEC_62196_T2"
	StandardGBTAC           Standard = "GBT_AC"
	StandardGBTDC           Standard = "GBT_DC"
	StandardIEC62196T1Combo Standard = "IEC_62196_T1_COMBO"
	StandardIEC62196T1      Standard = "IEC_62196_T1"
)

// IsDC reports whether the standard carries direct current. It is false for AC standards
// and for values the contract does not define.
func (s Standard) IsDC() bool {
	switch s {
	case StandardChademo, StandardIEC62196T1Combo, StandardIEC62196T2Combo, StandardGBTDC:
		return true
	}
	return false
}

// Valid reports whether s is one of the contract's standards.
func (s Standard) Valid() bool {
	switch s {
	case StandardChademo, StandardIEC62196T2Combo, StandardIEC62196T2, StandardGBTAC,
		StandardGBTDC, StandardIEC62196T1Combo, StandardIEC62196T1:
		return true
	}
	return false
}

// Format is whether a connector is a socket or has a fixed cable.
type Format string

// The connector formats of the contract.
const (
	FormatSocket Format = "SOCKET"
	FormatCable  Format = "CABLE"
)

// Valid reports whether f is one of the contract's formats.
func (f Format) Valid() bool { return f == FormatSocket || f == FormatCable }

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

// Valid reports whether p is one of the contract's power types.
func (p PowerType) Valid() bool {
	switch p {
	case PowerAC1Phase, PowerAC2Phase, PowerAC2PhaseSplit, PowerAC3Phase, PowerDC:
		return true
	}
	return false
}

// ErrorCode is an OCPP 1.6 ChargePointErrorCode reported for a connector.
type ErrorCode string

// errorCodes are the OCPP 1.6 ChargePointErrorCode values.
var errorCodes = map[ErrorCode]bool{
	"ConnectorLockFailure": true, "EVCommunicationError": true, "GroundFailure": true,
	"HighTemperature": true, "InternalError": true, "LocalListConflict": true, "NoError": true,
	"OtherError": true, "OverCurrentFailure": true, "OverVoltage": true,
	"PowerMeterFailure": true, "PowerSwitchFailure": true, "ReaderFailure": true,
	"ResetFailure": true, "UnderVoltage": true, "WeakSignal": true,
}

// Valid reports whether c is an OCPP 1.6 ChargePointErrorCode.
func (c ErrorCode) Valid() bool { return errorCodes[c] }

// MaxTariffs is the most tariff ids a connector can have.
const MaxTariffs = 50

// Upper bounds of a connector's ratings, wide enough for megawatt charging.
const (
	MaxElectricPowerKW = 4000
	MaxAmperageA       = 3000
	MaxVoltageV        = 1500
)

// ConnectorError is the error status a charge box reported for a connector.
type ConnectorError struct {
	Code            ErrorCode
	Info            string
	VendorErrorCode string
}

// Connector is one plug or socket of an EVSE.
type Connector struct {
	ID               int64
	Standard         Standard
	Format           Format
	PowerType        PowerType
	MaxElectricPower float64 // kW
	MaxAmperage      float64 // A
	MaxVoltage       float64 // V
	TariffIDs        []string
	Error            *ConnectorError // nil when there is no error
	DeletedAt        *time.Time      // nil while in service
	// StatusReportedAt is the timestamp of the last status notification applied to the
	// connector; zero before the first. Only the status notification path reads it:
	// EVSE and ListEVSEs leave it zero.
	StatusReportedAt time.Time
	// LastUpdated is when the connector's own fields (those the contract shows) last
	// changed; never later than its EVSE's LastUpdated.
	LastUpdated time.Time
}

// Validate checks the connector's values and the rules between them: enum values, ratings
// in (0, max], a DC standard needs power type DC and format CABLE, an AC standard needs an
// AC power type. It returns an ErrInvalid *Error naming the first offending field.
func (c *Connector) Validate() error {
	switch {
	case c.ID < 1:
		return Errorf(ErrInvalid, CodeInvalidBody, "id", "connector id %d must be a positive integer", c.ID)
	case !c.Standard.Valid():
		return Errorf(ErrInvalid, CodeInvalidBody, "standard", "%q is not a connector standard", c.Standard)
	case !c.Format.Valid():
		return Errorf(ErrInvalid, CodeInvalidBody, "format", "%q is not a connector format", c.Format)
	case !c.PowerType.Valid():
		return Errorf(ErrInvalid, CodeInvalidBody, "powerType", "%q is not a power type", c.PowerType)
	}
	if err := checkRating("maxElectricPower", c.MaxElectricPower, MaxElectricPowerKW); err != nil {
		return err
	}
	if err := checkRating("maxAmperage", c.MaxAmperage, MaxAmperageA); err != nil {
		return err
	}
	if err := checkRating("maxVoltage", c.MaxVoltage, MaxVoltageV); err != nil {
		return err
	}
	if c.Error != nil && !c.Error.Code.Valid() {
		return Errorf(ErrInvalid, CodeInvalidBody, "error.errorCode", "%q is not an OCPP 1.6 error code", c.Error.Code)
	}
	if len(c.TariffIDs) > MaxTariffs {
		return Errorf(ErrInvalid, CodeInvalidBody, "tariffIds", "a connector has at most %d tariff ids, not %d", MaxTariffs, len(c.TariffIDs))
	}
	for i, t := range c.TariffIDs {
		if t == "" || len(t) > 36 || strings.ContainsRune(t, 0) {
			return Errorf(ErrInvalid, CodeInvalidBody, fmt.Sprintf("tariffIds[%d]", i), "tariffIds[%d] must be 1 to 36 characters without NUL", i)
		}
	}
	return c.checkRules()
}

// checkRules checks the standard against the power type and the format.
func (c *Connector) checkRules() error {
	if c.Standard.IsDC() {
		if c.PowerType != PowerDC {
			return Errorf(ErrInvalid, CodeInvalidConnector, "standard",
				"standard %s is a DC standard but the connector has powerType %s", c.Standard, c.PowerType)
		}
		if c.Format != FormatCable {
			return Errorf(ErrInvalid, CodeInvalidConnector, "format",
				"standard %s is a DC standard and needs format CABLE, not %s", c.Standard, c.Format)
		}
		return nil
	}
	if c.PowerType == PowerDC {
		return Errorf(ErrInvalid, CodeInvalidConnector, "standard",
			"standard %s is an AC standard but the connector has powerType %s", c.Standard, c.PowerType)
	}
	return nil
}

func checkRating(field string, v, upper float64) error {
	if !(v > 0 && v <= upper) { // also rejects NaN
		return Errorf(ErrInvalid, CodeInvalidBody, field, "%s %v must be greater than 0 and at most %v", field, v, upper)
	}
	return nil
}

// ConnectorPatch holds the connector fields a client wants to change; nil fields keep
// their value.
type ConnectorPatch struct {
	Standard         *Standard
	Format           *Format
	MaxElectricPower *float64
	MaxAmperage      *float64
	MaxVoltage       *float64
	// IfVersion, when not 0, is a precondition as an If-Match of the EVSE's ETag: the
	// EVSE must be at this Version (the version of a body written back from a read).
	IfVersion int64
	// PowerType and TariffIDs, when set, are fields of a read written back that a patch
	// does not change: they must be the connector's.
	PowerType *PowerType
	TariffIDs *[]string
}

// Empty reports whether the patch changes nothing.
func (p ConnectorPatch) Empty() bool {
	return p.Standard == nil && p.Format == nil && p.MaxElectricPower == nil &&
		p.MaxAmperage == nil && p.MaxVoltage == nil
}

// Apply returns c with the patch's fields set. It does not validate the result.
func (p ConnectorPatch) Apply(c Connector) Connector {
	if p.Standard != nil {
		c.Standard = *p.Standard
	}
	if p.Format != nil {
		c.Format = *p.Format
	}
	if p.MaxElectricPower != nil {
		c.MaxElectricPower = *p.MaxElectricPower
	}
	if p.MaxAmperage != nil {
		c.MaxAmperage = *p.MaxAmperage
	}
	if p.MaxVoltage != nil {
		c.MaxVoltage = *p.MaxVoltage
	}
	return c
}

// EVSE is a charging point with its connectors.
type EVSE struct {
	UID         int64
	EvseID      string
	ChargeboxID int64
	LocationID  string // empty when the EVSE belongs to no location
	Status      EvseStatus
	Connectors  []Connector // ascending ID, deleted ones included
	// LastUpdated is when the EVSE or one of its connectors last changed (see
	// NextUpdate): it grows with every Version.
	LastUpdated time.Time
	// Version counts the changes to the EVSE and its connectors; the ETag derives from it.
	Version int64
	// StatusReportedAt is the timestamp of the status notification that set Status; zero
	// before the first. Only the status notification path reads it: EVSE and ListEVSEs
	// leave it zero.
	StatusReportedAt time.Time
	// OperatorHold is true while the status is INOPERATIVE because the operator set it;
	// charge box notifications then leave the status alone (see Held). Stores read it
	// for ChangeEVSE and the status notification path; EVSE and ListEVSEs may leave it
	// false. An imported EVSE has none.
	OperatorHold bool
	// ChangePos is the position of the EVSE's last change in the change order (see
	// ChangeSeek); only ListEVSEChanges sets it.
	ChangePos uint64
}

// EvseIDPattern is the eMI3 / ISO 15118 EVSE ID format the service accepts: country code,
// optional '*', operator id, optional '*', 'E', instance part.
const EvseIDPattern = `^[A-Z]{2}\*?[A-Z0-9]{3}\*?E[A-Z0-9][A-Z0-9*]{0,30}$`

var evseIDRe = regexp.MustCompile(EvseIDPattern)

// ETag returns the strong entity tag of the EVSE's current state.
func (e *EVSE) ETag() string { return ETag(e.Version) }

// ETag returns the strong entity tag of an EVSE at version.
func ETag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// Connector returns the connector with the given id, or nil.
func (e *EVSE) Connector(id int64) *Connector {
	for i := range e.Connectors {
		if e.Connectors[i].ID == id {
			return &e.Connectors[i]
		}
	}
	return nil
}

// Validate checks the EVSE and all its connectors. It returns an ErrInvalid *Error whose
// Param names the offending field (connectors[i].field for a connector).
func (e *EVSE) Validate() error { return e.validate(true) }

// validate is Validate, with the uid checked only when requireUID.
func (e *EVSE) validate(requireUID bool) error {
	switch {
	case requireUID && e.UID < 1:
		return Errorf(ErrInvalid, CodeInvalidBody, "uid", "uid %d must be a positive integer", e.UID)
	case !evseIDRe.MatchString(e.EvseID):
		return Errorf(ErrInvalid, CodeInvalidBody, "evseId", "evseId %q does not match the eMI3 format %s", e.EvseID, EvseIDPattern)
	case e.ChargeboxID < 1:
		return Errorf(ErrInvalid, CodeInvalidBody, "chargeboxId", "chargeboxId %d must be a positive integer", e.ChargeboxID)
	case !e.Status.Valid():
		return Errorf(ErrInvalid, CodeInvalidBody, "status", "%q is not an EVSE status", e.Status)
	}
	seen := make(map[int64]bool, len(e.Connectors))
	for i := range e.Connectors {
		c := &e.Connectors[i]
		if err := c.Validate(); err != nil {
			return prefixParam(err, fmt.Sprintf("connectors[%d].", i))
		}
		if seen[c.ID] {
			return Errorf(ErrInvalid, CodeInvalidBody, fmt.Sprintf("connectors[%d].id", i), "connector id %d appears twice", c.ID)
		}
		seen[c.ID] = true
	}
	return nil
}

// UpdateConnector applies patch to connector connectorID of e, in place, after checking,
// in this order: the connector exists (ErrNotFound), e is not REMOVED (ErrConflict,
// evse_removed), ifMatch matches e's ETag when given (ErrPreconditionFailed), the connector is not deleted (ErrConflict), and the result
// keeps the connector rules (ErrInvalid). On error e is unchanged. It returns the updated
// connector.
func (e *EVSE) UpdateConnector(connectorID int64, patch ConnectorPatch, ifMatch string) (*Connector, error) {
	c := e.Connector(connectorID)
	if c == nil {
		return nil, Errorf(ErrNotFound, CodeNotFound, "connectorId", "connector with connectorId %d not found on EVSE %d", connectorID, e.UID)
	}
	if err := e.CheckPreconditions(ifMatch, patch.IfVersion); err != nil {
		return nil, err
	}
	if c.DeletedAt != nil {
		return nil, Errorf(ErrConflict, CodeConnectorDeleted, "connectorId",
			"connector with connectorId %d of EVSE %d was deleted at %s and cannot be updated", connectorID, e.UID, c.DeletedAt.UTC().Format(time.RFC3339))
	}
	if patch.Empty() {
		return nil, Errorf(ErrInvalid, CodeInvalidBody, "", "request body must set at least one field")
	}
	if patch.PowerType != nil && *patch.PowerType != c.PowerType {
		return nil, Errorf(ErrInvalid, CodeInvalidBody, "powerType",
			"powerType %s is not the connector's %s, and this operation does not change it", *patch.PowerType, c.PowerType)
	}
	if patch.TariffIDs != nil && !slices.Equal(*patch.TariffIDs, c.TariffIDs) {
		return nil, Errorf(ErrInvalid, CodeInvalidBody, "tariffIds", "tariffIds are not the connector's, and this operation does not change them")
	}
	updated := patch.Apply(*c)
	if err := updated.Validate(); err != nil {
		return nil, err
	}
	*c = updated
	return c, nil
}

// DiffSettings returns the first field a client sets (standard, format, powerType,
// maxElectricPower, maxAmperage, maxVoltage, tariffIds, and the id) in which o differs
// from c, or "" when there is none. The fields the service sets (error, deletedAt) are
// not compared.
func (c Connector) DiffSettings(o Connector) string {
	switch {
	case o.ID != c.ID:
		return "id"
	case o.Standard != c.Standard:
		return "standard"
	case o.Format != c.Format:
		return "format"
	case o.PowerType != c.PowerType:
		return "powerType"
	case o.MaxElectricPower != c.MaxElectricPower:
		return "maxElectricPower"
	case o.MaxAmperage != c.MaxAmperage:
		return "maxAmperage"
	case o.MaxVoltage != c.MaxVoltage:
		return "maxVoltage"
	case !slices.Equal(o.TariffIDs, c.TariffIDs):
		return "tariffIds"
	}
	return ""
}

// MatchETag reports whether an If-Match header value (a comma-separated list of entity
// tags, or "*") matches etag. Weak tags never match: If-Match uses strong comparison.
func MatchETag(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

func prefixParam(err error, prefix string) error {
	if de, ok := err.(*Error); ok {
		cp := *de
		cp.Param = prefix + de.Param
		cp.Message = prefix + de.Param + ": " + de.Message
		return &cp
	}
	return err
}
