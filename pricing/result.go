package pricing

import (
	"time"

	"github.com/chargenet/chargenet"
	"github.com/shopspring/decimal"
)

// Amounts are summed exactly as numerators over 3600: an hour-priced dimension costs
// price × seconds / 3600, which has no finite decimal in general, so every amount is
// kept as amount × 3600 (ENERGY: price × Wh × 3.6; FLAT: price × 3600) and divided once,
// when a total is rounded.
var (
	d3600 = decimal.NewFromInt(3600)
	d100  = decimal.NewFromInt(100)
)

// sum is a total being accumulated: excl. and incl. VAT numerators, whether any component
// applied, and whether the incl.-VAT sum is unknown.
type sum struct {
	excl, incl decimal.Decimal
	applied    bool
	noVAT      bool
}

func (s *sum) add(excl, incl decimal.Decimal, vatKnown bool) {
	s.excl = s.excl.Add(excl)
	s.incl = s.incl.Add(incl)
	s.applied = true
	// A component without VAT leaves the total incl. VAT unknown, unless its amount is
	// zero: zero is zero whatever the VAT.
	if !vatKnown && !excl.IsZero() {
		s.noVAT = true
	}
}

func (s *sum) merge(o *sum) {
	s.excl = s.excl.Add(o.excl)
	s.incl = s.incl.Add(o.incl)
	s.applied = s.applied || o.applied
	s.noVAT = s.noVAT || o.noVAT
}

// price rounds the sum once, half up, to minor decimal places.
func (s *sum) price(minor int32) chargenet.Price {
	pr := chargenet.Price{ExclVat: s.excl.DivRound(d3600, minor)}
	if !s.noVAT {
		in := s.incl.DivRound(d3600, minor)
		pr.InclVat = &in
	}
	return pr
}

func (s *sum) ptr(minor int32) *chargenet.Price {
	if !s.applied {
		return nil
	}
	pr := s.price(minor)
	return &pr
}

func hours(s int64) decimal.Decimal { return decimal.NewFromInt(s).DivRound(d3600, 6) }

func (p *pricer) result() *Result {
	t := p.t
	res := &Result{
		TariffID: t.ID, Currency: t.Currency,
		Start: time.Unix(p.s, 0).UTC(), End: time.Unix(p.e, 0).UTC(),
		Periods: make([]Period, len(p.periods)),
	}

	// The step size: once for ENERGY, once for TIME and PARKING_TIME together (only
	// PARKING_TIME when both were priced), by the last applied component of the
	// dimension; what it adds is billed in the last period of that dimension.
	var (
		total [3]int64
		last  = [3]int{-1, -1, -1}
		extra [3]int64
	)
	for i := range p.periods {
		pa := &p.periods[i]
		for d := range 3 {
			if pa.el[d] >= 0 && pa.qty[d] > 0 {
				total[d] += pa.qty[d]
				last[d] = i
			}
		}
	}
	round := func(d int) {
		if last[d] < 0 {
			return
		}
		c := p.cands[d][p.periods[last[d]].el[d]]
		if step := int64(t.Elements[c.e].PriceComponents[c.c].StepSize); step > 1 {
			extra[d] = (total[d]+step-1)/step*step - total[d]
		}
	}
	round(dEnergy)
	if last[dParking] >= 0 {
		round(dParking)
	} else {
		round(dTime)
	}

	var sums [nDims]sum
	for i := range p.periods {
		pa := &p.periods[i]
		out := &res.Periods[i]
		out.StartDateTime, out.EndDateTime = time.Unix(pa.start, 0).UTC(), time.Unix(pa.end, 0).UTC()
		out.EnergyWh, out.ChargingSeconds, out.ParkingSeconds = pa.qty[dEnergy], pa.qty[dTime], pa.qty[dParking]
		res.EnergyWh += pa.qty[dEnergy]
		res.ChargingSeconds += pa.qty[dTime]
		res.ParkingSeconds += pa.qty[dParking]

		out.Dimensions = append(out.Dimensions, Dimension{CdrEnergy, decimal.New(pa.qty[dEnergy], -3)})
		if pa.qty[dTime] > 0 {
			out.Dimensions = append(out.Dimensions, Dimension{CdrTime, hours(pa.qty[dTime])})
		}
		if pa.qty[dParking] > 0 {
			out.Dimensions = append(out.Dimensions, Dimension{CdrParkingTime, hours(pa.qty[dParking])})
		}
		if pa.maxPower >= 0 {
			out.Dimensions = append(out.Dimensions, Dimension{CdrMaxPower, p.u.Readings[p.powers[pa.maxPower].r].PowerW.Div(thousand)})
		}
		if pa.maxCurrent >= 0 {
			out.Dimensions = append(out.Dimensions, Dimension{CdrMaxCurrent, *p.u.Readings[p.currents[pa.maxCurrent].r].CurrentA})
		}

		if p.flatCand >= 0 && p.flatPeriod == i {
			out.Costs = append(out.Costs, p.cost(dFlat, p.flatCand, 1, 0, &sums[dFlat]))
		}
		for d := range 3 {
			if pa.el[d] >= 0 && pa.qty[d] > 0 {
				var add int64
				if last[d] == i {
					add = extra[d]
				}
				out.Costs = append(out.Costs, p.cost(d, pa.el[d], pa.qty[d], add, &sums[d]))
			}
		}
	}

	res.TotalEnergy = decimal.New(res.EnergyWh, -3)
	res.TotalTime = hours(p.e - p.s)
	res.TotalParkingTime = hours(res.ParkingSeconds)
	res.TotalFixedCost = sums[dFlat].ptr(p.minor)
	res.TotalEnergyCost = sums[dEnergy].ptr(p.minor)
	res.TotalTimeCost = sums[dTime].ptr(p.minor)
	res.TotalParkingCost = sums[dParking].ptr(p.minor)

	var all sum
	for d := range sums {
		all.merge(&sums[d])
	}
	res.TotalCost = clamp(all.price(p.minor), t.MinPrice, t.MaxPrice)
	return res
}

// cost prices quantity (plus the step size's extra) of dimension d by candidate ci and
// adds it to s.
func (p *pricer) cost(d, ci int, quantity, extra int64, s *sum) Cost {
	c := p.cands[d][ci]
	pc := &p.t.Elements[c.e].PriceComponents[c.c]
	billed := quantity + extra
	var n decimal.Decimal // amount × 3600
	switch d {
	case dEnergy:
		n = pc.Price.Mul(decimal.New(billed*36, -1))
	case dFlat:
		n = pc.Price.Mul(d3600)
	default:
		n = pc.Price.Mul(decimal.NewFromInt(billed))
	}
	amount := chargenet.Price{ExclVat: n.DivRound(d3600, 16)}
	var in decimal.Decimal
	if pc.VAT != nil {
		in = n.Mul(d100.Add(*pc.VAT)).Shift(-2)
		a := in.DivRound(d3600, 16)
		amount.InclVat = &a
	}
	s.add(n, in, pc.VAT != nil)
	return Cost{Type: pc.Type, Element: c.e, Component: c.c, Quantity: quantity, Billed: billed, Amount: amount}
}

// clamp holds a total within the tariff's bounds, excl. and incl. VAT each on its own.
func clamp(pr chargenet.Price, lo, hi *chargenet.Price) chargenet.Price {
	if lo != nil {
		pr.ExclVat = decimal.Max(pr.ExclVat, lo.ExclVat)
		if pr.InclVat != nil && lo.InclVat != nil && pr.InclVat.LessThan(*lo.InclVat) {
			v := *lo.InclVat
			pr.InclVat = &v
		}
	}
	if hi != nil {
		pr.ExclVat = decimal.Min(pr.ExclVat, hi.ExclVat)
		if pr.InclVat != nil && hi.InclVat != nil && pr.InclVat.GreaterThan(*hi.InclVat) {
			v := *hi.InclVat
			pr.InclVat = &v
		}
	}
	return pr
}
