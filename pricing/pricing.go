// Package pricing prices a charging session by a tariff, to the cent, by the rules of
// OCPI 2.2.1: the session's usage (meter readings and status changes), a
// chargenet.Tariff and the location's time zone go in; charging periods, totals and
// costs, as a CDR lists them, come out. It is a pure function: no clock, no store.
//
// The rules, and each choice where OCPI leaves room, are in docs/pricing.md.
package pricing

import (
	"fmt"
	"time"
	_ "time/tzdata" // time.LoadLocation works where the machine has no zoneinfo

	"github.com/chargenet/chargenet"
	"github.com/shopspring/decimal"
)

// Usage is what a session did: its start and end (the transaction's), the meter readings
// and the changes of the connector's state. Instants are taken to the whole second.
type Usage struct {
	Start time.Time
	End   time.Time
	// Readings in time order. Readings before Start or after End only inform the
	// interpolation of the register at Start and End.
	Readings []Reading
	// States in time order. The latest state at or before an instant is in force; a state
	// before Start is in force at Start.
	States []State
}

// Reading is one meter sample. Any of its values may be missing.
type Reading struct {
	At time.Time
	// EnergyWh is the energy register (active energy imported, cumulative), in whole Wh.
	EnergyWh *int64
	// PowerW is the instantaneous active power, in W; it holds until the next reading
	// with a power.
	PowerW *decimal.Decimal
	// CurrentA is the instantaneous current, summed over the phases, in A; it holds
	// until the next reading with a current.
	CurrentA *decimal.Decimal
}

// State is a change of the connector's charging state at At.
type State struct {
	At   time.Time
	Kind StateKind
}

// StateKind is the charging state of a connector during a transaction.
type StateKind uint8

// The charging states, as OCPP reports them.
const (
	// Charging: the EVSE offers energy and the vehicle takes it (OCPP Charging). TIME.
	Charging StateKind = iota + 1
	// SuspendedEV: the vehicle requests no power, for example because it is full (OCPP
	// SuspendedEV). PARKING_TIME.
	SuspendedEV
	// SuspendedEVSE: the EVSE offers no energy while the vehicle would take it (OCPP
	// SuspendedEVSE: a limit, smart charging). Neither TIME nor PARKING_TIME.
	SuspendedEVSE
	// Connected: a vehicle is connected and nothing more is known (OCPP 2.0.1
	// EVConnected, 1.6 Preparing). Classified by the readings, as when no state is known.
	Connected
)

// String returns the OCPP name of the state.
func (k StateKind) String() string {
	switch k {
	case Charging:
		return "Charging"
	case SuspendedEV:
		return "SuspendedEV"
	case SuspendedEVSE:
		return "SuspendedEVSE"
	case Connected:
		return "Connected"
	}
	return fmt.Sprintf("StateKind(%d)", k)
}

// Result is a priced session: what a CDR reports of it.
type Result struct {
	TariffID string
	Currency string
	// Start and End are the session's, to the second.
	Start time.Time
	End   time.Time
	// Periods cover the session without gaps, in order; the first starts at Start, each
	// ends where the next starts and the last at End. A new period starts whenever the
	// element that prices a dimension changes.
	Periods []Period

	// EnergyWh, ChargingSeconds and ParkingSeconds are the exact measured totals: energy,
	// time charging (TIME) and time parked (PARKING_TIME), before any step size.
	EnergyWh        int64
	ChargingSeconds int64
	ParkingSeconds  int64

	// TotalEnergy (kWh), TotalTime (h, the whole session) and TotalParkingTime (h) are the
	// OCPI CDR totals. Hours have 6 decimal places.
	TotalEnergy      decimal.Decimal
	TotalTime        decimal.Decimal
	TotalParkingTime decimal.Decimal

	// TotalCost is the session's cost: the exact sum of every component's amount, rounded
	// once to the currency's minor units (half up), then held within the tariff's
	// MinPrice and MaxPrice. InclVat is nil when a component with an amount had no VAT.
	TotalCost chargenet.Price
	// TotalFixedCost (FLAT), TotalEnergyCost, TotalTimeCost and TotalParkingCost are the
	// sums of each dimension, each rounded once; nil when no component of that
	// dimension applied. They are not held within MinPrice and MaxPrice.
	TotalFixedCost   *chargenet.Price
	TotalEnergyCost  *chargenet.Price
	TotalTimeCost    *chargenet.Price
	TotalParkingCost *chargenet.Price
}

// Period is a charging period: a stretch of the session during which the same element
// prices each dimension.
type Period struct {
	StartDateTime time.Time
	EndDateTime   time.Time
	// EnergyWh, ChargingSeconds and ParkingSeconds are measured in this period.
	EnergyWh        int64
	ChargingSeconds int64
	ParkingSeconds  int64
	// Dimensions are the period's volumes as a CDR lists them: ENERGY (kWh) always,
	// TIME and PARKING_TIME (h) when not zero, MAX_POWER (kW) and MAX_CURRENT (A) when a
	// reading gave one.
	Dimensions []Dimension
	// Costs has one entry per dimension priced in this period: FLAT in the period where
	// it was charged, ENERGY, TIME and PARKING_TIME where their quantity is not zero.
	Costs []Cost
}

// CdrDimensionType is the kind of a period's volume (OCPI CdrDimensionType).
type CdrDimensionType string

// The volumes a period reports.
const (
	CdrEnergy      CdrDimensionType = "ENERGY"       // kWh
	CdrTime        CdrDimensionType = "TIME"         // h
	CdrParkingTime CdrDimensionType = "PARKING_TIME" // h
	CdrMaxPower    CdrDimensionType = "MAX_POWER"    // kW
	CdrMaxCurrent  CdrDimensionType = "MAX_CURRENT"  // A
)

// Dimension is one volume of a period (OCPI CdrDimension).
type Dimension struct {
	Type   CdrDimensionType
	Volume decimal.Decimal
}

// Cost is what one price component charged in one period.
type Cost struct {
	Type chargenet.DimensionType
	// Element and Component index the tariff's Elements and that element's
	// PriceComponents: the component that priced this dimension in this period.
	Element   int
	Component int
	// Quantity is what the period used: Wh, seconds, or 1 for FLAT. Billed is Quantity
	// plus, in the last period of its dimension, what the step size added.
	Quantity int64
	Billed   int64
	// Amount is Billed times the component's price (excl. VAT), and incl. VAT when the
	// component has a VAT; not rounded (16 decimal places; exact for FLAT and ENERGY).
	Amount chargenet.Price
}

// MaxSessionDuration is the longest session Price accepts.
const MaxSessionDuration = 366 * 24 * time.Hour

// maxRegister bounds an energy register (Wh): 10^15 Wh is a terawatt-year.
const maxRegister = 1_000_000_000_000_000

// Price prices usage u by tariff t, in the time zone loc of the location (its
// restrictions on time of day, date and day of week are in local time; load it with
// time.LoadLocation(location.TimeZone), which this package makes work without zoneinfo
// on the machine).
//
// It returns an ErrInvalid *chargenet.Error when t is not valid (see Tariff.Validate),
// when the session does not start within the tariff's StartDateTime and EndDateTime,
// when loc is nil, or when the usage is not consistent: End before Start, a session
// longer than MaxSessionDuration, readings or states out of time order, a register that
// goes down, a negative power or current. Its Param names the field.
func Price(t *chargenet.Tariff, u *Usage, loc *time.Location) (*Result, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if loc == nil {
		return nil, invalid("timeZone", "a time zone is required")
	}
	if err := checkUsage(u); err != nil {
		return nil, err
	}
	if t.StartDateTime != nil && u.Start.Before(*t.StartDateTime) || t.EndDateTime != nil && !u.Start.Before(*t.EndDateTime) {
		return nil, invalid("start", "the session started at %s, when tariff %s was not active", u.Start.UTC().Format(time.RFC3339), t.ID)
	}
	p := newPricer(t, u, loc)
	p.run()
	return p.result(), nil
}

func checkUsage(u *Usage) error {
	switch {
	case u.End.Before(u.Start):
		return invalid("end", "%s is before start %s", u.End.UTC().Format(time.RFC3339), u.Start.UTC().Format(time.RFC3339))
	case u.End.Sub(u.Start) > MaxSessionDuration:
		return invalid("end", "a session lasts at most %s, not %s", MaxSessionDuration, u.End.Sub(u.Start))
	}
	var (
		last     int64 = -1
		lastSeen bool
		prevAt   time.Time
	)
	for i := range u.Readings {
		r := &u.Readings[i]
		if i > 0 && r.At.Before(prevAt) {
			return invalid(fmt.Sprintf("readings[%d].at", i), "readings must be in time order: %s is before the previous reading", r.At.UTC().Format(time.RFC3339Nano))
		}
		prevAt = r.At
		if r.EnergyWh != nil {
			e := *r.EnergyWh
			switch {
			case e < 0 || e > maxRegister:
				return invalid(fmt.Sprintf("readings[%d].energyWh", i), "register %d Wh must be from 0 to %d", e, maxRegister)
			case lastSeen && e < last:
				return invalid(fmt.Sprintf("readings[%d].energyWh", i), "the register went down from %d Wh to %d Wh", last, e)
			}
			last, lastSeen = e, true
		}
		if r.PowerW != nil && !validMeasure(*r.PowerW) {
			return invalid(fmt.Sprintf("readings[%d].powerW", i), "%s must be from 0 to below 10^12, with at most 6 decimal places", r.PowerW)
		}
		if r.CurrentA != nil && !validMeasure(*r.CurrentA) {
			return invalid(fmt.Sprintf("readings[%d].currentA", i), "%s must be from 0 to below 10^12, with at most 6 decimal places", r.CurrentA)
		}
	}
	for i := range u.States {
		s := &u.States[i]
		if s.Kind < Charging || s.Kind > Connected {
			return invalid(fmt.Sprintf("states[%d].kind", i), "unknown state kind %d", s.Kind)
		}
		if i > 0 && s.At.Before(u.States[i-1].At) {
			return invalid(fmt.Sprintf("states[%d].at", i), "states must be in time order: %s is before the previous state", s.At.UTC().Format(time.RFC3339Nano))
		}
	}
	return nil
}

// validMeasure reports whether a power (W) or current (A) is from 0 to below 10^12 with
// at most 6 decimal places: then v × 10^6 is a whole number that fits an int64, in which
// the engine compares them.
func validMeasure(v decimal.Decimal) bool {
	if v.Sign() < 0 {
		return false
	}
	if v.Exponent() < -6 && !v.Equal(v.Truncate(6)) {
		return false
	}
	return v.IsZero() || v.NumDigits()+int(v.Exponent()) <= 12
}

// invalid returns an ErrInvalid *chargenet.Error about param, whose message starts with it.
func invalid(param, format string, args ...any) error {
	return chargenet.Errorf(chargenet.ErrInvalid, chargenet.CodeInvalidBody, param, "%s: %s", param, fmt.Sprintf(format, args...))
}
