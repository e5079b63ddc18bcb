package pricing_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/pricing"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func pdec(s string) *decimal.Decimal {
	d := dec(s)
	return &d
}

func ptr[T any](v T) *T { return &v }

// component builds a price component; vat "" leaves the VAT unknown.
func component(typ chargenet.DimensionType, price, vat string, step int) chargenet.PriceComponent {
	c := chargenet.PriceComponent{Type: typ, Price: dec(price), StepSize: step}
	if vat != "" {
		c.VAT = pdec(vat)
	}
	return c
}

func energy(price, vat string, step int) chargenet.PriceComponent {
	return component(chargenet.DimensionEnergy, price, vat, step)
}

func chargingTime(price, vat string, step int) chargenet.PriceComponent {
	return component(chargenet.DimensionTime, price, vat, step)
}

func parkingTime(price, vat string, step int) chargenet.PriceComponent {
	return component(chargenet.DimensionParkingTime, price, vat, step)
}

func flat(price, vat string) chargenet.PriceComponent {
	return component(chargenet.DimensionFlat, price, vat, 1)
}

func element(r *chargenet.TariffRestrictions, cs ...chargenet.PriceComponent) chargenet.TariffElement {
	return chargenet.TariffElement{PriceComponents: cs, Restrictions: r}
}

func tariff(id string, elements ...chargenet.TariffElement) *chargenet.Tariff {
	return &chargenet.Tariff{ID: id, Currency: "EUR", Elements: elements}
}

// session builds a Usage leg by leg: each leg sets the state, and readings mark its
// start and end with the register.
type session struct {
	at time.Time
	wh int64
	u  pricing.Usage
}

func newSession(start time.Time) *session {
	return &session{at: start, u: pricing.Usage{Start: start}}
}

// charge adds a leg of d charging wh Wh at a steady rate. powerW and currentA, when not
// empty, are reported at the start of the leg.
func (s *session) charge(d time.Duration, wh int64, powerW, currentA string) *session {
	return s.leg(pricing.Charging, d, wh, powerW, currentA)
}

// park adds a leg of d in which the vehicle requests no power.
func (s *session) park(d time.Duration) *session { return s.leg(pricing.SuspendedEV, d, 0, "0", "") }

func (s *session) leg(k pricing.StateKind, d time.Duration, wh int64, powerW, currentA string) *session {
	s.u.States = append(s.u.States, pricing.State{At: s.at, Kind: k})
	r := pricing.Reading{At: s.at, EnergyWh: ptr(s.wh)}
	if powerW != "" {
		r.PowerW = pdec(powerW)
	}
	if currentA != "" {
		r.CurrentA = pdec(currentA)
	}
	s.u.Readings = append(s.u.Readings, r)
	s.at = s.at.Add(d)
	s.wh += wh
	s.u.Readings = append(s.u.Readings, pricing.Reading{At: s.at, EnergyWh: ptr(s.wh)})
	return s
}

func (s *session) usage() *pricing.Usage {
	u := s.u
	u.End = s.at
	return &u
}

// priceString shows a price as "excl/incl" to the currency's minor units, "-" for an
// unknown incl. VAT, and "nil" for no price.
func priceString(p *chargenet.Price, minor int32) string {
	if p == nil {
		return "nil"
	}
	in := "-"
	if p.InclVat != nil {
		in = p.InclVat.StringFixed(minor)
	}
	return p.ExclVat.StringFixed(minor) + "/" + in
}

func mustLoad(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

func local(t testing.TB, loc *time.Location, s string) time.Time {
	t.Helper()
	tm, err := time.ParseInLocation("2006-01-02 15:04:05", s, loc)
	require.NoError(t, err)
	return tm
}

// costs lists a result's period costs as "TYPE quantity->billed amount", for checks
// of where a step size went.
func costs(r *pricing.Result) []string {
	var out []string
	for _, p := range r.Periods {
		for _, c := range p.Costs {
			out = append(out, fmt.Sprintf("%s %d->%d %s", c.Type, c.Quantity, c.Billed, c.Amount.ExclVat.String()))
		}
	}
	return out
}

// dimensions lists a period's volumes as "TYPE volume".
func dimensions(p pricing.Period) []string {
	var out []string
	for _, d := range p.Dimensions {
		out = append(out, string(d.Type)+" "+d.Volume.String())
	}
	return out
}
