package pricing_test

import (
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/pricing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// propertyTariffs are tariffs with every kind of restriction, for the property tests.
func propertyTariffs() []*chargenet.Tariff {
	kwh := tariff("kwh",
		element(nil, flat("0.35", "19")),
		element(&chargenet.TariffRestrictions{MaxKWh: pdec("1.5")}, energy("0.00", "19", 1), chargingTime("0.60", "19", 60)),
		element(&chargenet.TariffRestrictions{MinKWh: pdec("1.5"), MaxKWh: pdec("12.345")}, energy("0.31", "19", 100)),
		element(&chargenet.TariffRestrictions{MinDuration: ptr(5400)}, parkingTime("3.00", "19", 600)),
		element(nil, energy("0.47", "19", 250), parkingTime("1.00", "19", 300)))
	power := tariff("power",
		element(&chargenet.TariffRestrictions{MaxPower: pdec("11")}, energy("0.29", "21", 1)),
		element(&chargenet.TariffRestrictions{MinPower: pdec("11"), MaxPower: pdec("50"), StartTime: "07:00", EndTime: "23:30"}, energy("0.49", "21", 1)),
		element(nil, energy("0.59", "21", 10), chargingTime("0.05", "21", 1)),
		element(&chargenet.TariffRestrictions{DayOfWeek: []string{"SATURDAY", "SUNDAY"}}, parkingTime("0.50", "21", 60)))
	return []*chargenet.Tariff{complexTariff(), stepSizeTariff(), kwh, power}
}

type leg struct {
	charging bool
	seconds  int64
	rate     int64 // Wh a second
	currentA string
}

// randomLegs draws a session of 1 to 5 legs, charging at a steady whole number of Wh a
// second or parked.
func randomLegs(rng *rand.Rand) []leg {
	legs := make([]leg, 1+rng.IntN(5))
	for i := range legs {
		legs[i] = leg{
			charging: i == 0 || rng.IntN(3) > 0,
			seconds:  1 + rng.Int64N(3*3600),
			rate:     1 + rng.Int64N(20),
			currentA: []string{"6", "16", "32", "43.5"}[rng.IntN(4)],
		}
	}
	return legs
}

// build makes the usage of legs from start. Each leg starts with a state and a reading
// with the register, power and current; extra adds up to that many readings of the
// register alone inside each charging leg, on its straight line.
func build(rng *rand.Rand, start time.Time, legs []leg, extra int) *pricing.Usage {
	u := &pricing.Usage{Start: start}
	at, wh := start, int64(0)
	for _, l := range legs {
		kind, power := pricing.SuspendedEV, "0"
		if l.charging {
			kind, power = pricing.Charging, dec("3600").Mul(dec(big.NewInt(l.rate).String())).String()
		}
		u.States = append(u.States, pricing.State{At: at, Kind: kind})
		u.Readings = append(u.Readings, pricing.Reading{At: at, EnergyWh: ptr(wh), PowerW: pdec(power), CurrentA: pdec(l.currentA)})
		if l.charging && extra > 0 {
			var secs []int64
			for range 1 + rng.IntN(extra) {
				secs = append(secs, 1+rng.Int64N(l.seconds))
			}
			slices.Sort(secs)
			for _, s := range secs {
				u.Readings = append(u.Readings, pricing.Reading{At: at.Add(time.Duration(s) * time.Second), EnergyWh: ptr(wh + s*l.rate)})
			}
		}
		at = at.Add(time.Duration(l.seconds) * time.Second)
		if l.charging {
			wh += l.seconds * l.rate
		}
		u.Readings = append(u.Readings, pricing.Reading{At: at, EnergyWh: ptr(wh)})
	}
	u.End = at
	return u
}

// Adding readings on the straight line between two readings changes nothing.
func TestResamplingKeepsTotals(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	rng := rand.New(rand.NewPCG(7, 11))
	week := time.Date(2026, 3, 23, 0, 0, 0, 0, berlin) // a Monday, the week of a DST change
	for i := range 400 {
		tf := propertyTariffs()[i%4]
		start := week.Add(time.Duration(rng.Int64N(7*24*3600)) * time.Second)
		legs := randomLegs(rng)
		seed := rng.Uint64()
		coarse, err := pricing.Price(tf, build(rand.New(rand.NewPCG(seed, 0)), start, legs, 0), berlin)
		require.NoError(t, err)
		fine, err := pricing.Price(tf, build(rand.New(rand.NewPCG(seed, 0)), start, legs, 30), berlin)
		require.NoError(t, err)
		require.Greater(t, coarse.EnergyWh, int64(0))
		assert.Equal(t, coarse.EnergyWh, fine.EnergyWh, "case %d", i)
		assert.Equal(t, priceString(&coarse.TotalCost, 2), priceString(&fine.TotalCost, 2), "case %d", i)
		assert.Equal(t, priceString(coarse.TotalEnergyCost, 2), priceString(fine.TotalEnergyCost, 2), "case %d", i)
		assert.Equal(t, priceString(coarse.TotalTimeCost, 2), priceString(fine.TotalTimeCost, 2), "case %d", i)
		assert.Equal(t, priceString(coarse.TotalParkingCost, 2), priceString(fine.TotalParkingCost, 2), "case %d", i)
		assert.Equal(t, costs(coarse), costs(fine), "case %d", i)
	}
}

// Each total is the exact sum of the period costs, rounded once; the periods cover the
// session without gaps and add up to its totals.
func TestTotalsAreSumsOfPeriods(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	rng := rand.New(rand.NewPCG(3, 5))
	week := time.Date(2026, 10, 19, 0, 0, 0, 0, berlin)
	for i := range 400 {
		tf := propertyTariffs()[i%4]
		u := build(rng, week.Add(time.Duration(rng.Int64N(7*24*3600))*time.Second), randomLegs(rng), 5)
		r, err := pricing.Price(tf, u, berlin)
		require.NoError(t, err)

		var excl, incl [4]big.Rat // FLAT, ENERGY, TIME, PARKING_TIME
		var noVAT [4]bool
		var energyWh, charging, parked int64
		require.NotEmpty(t, r.Periods)
		assert.Equal(t, u.Start.UTC(), r.Periods[0].StartDateTime)
		assert.Equal(t, u.End.UTC(), r.Periods[len(r.Periods)-1].EndDateTime)
		for j, p := range r.Periods {
			if j > 0 {
				assert.Equal(t, r.Periods[j-1].EndDateTime, p.StartDateTime)
			}
			assert.True(t, p.StartDateTime.Before(p.EndDateTime), "case %d: an empty period", i)
			energyWh += p.EnergyWh
			charging += p.ChargingSeconds
			parked += p.ParkingSeconds
			for _, c := range p.Costs {
				pc := tf.Elements[c.Element].PriceComponents[c.Component]
				require.Equal(t, c.Type, pc.Type)
				assert.GreaterOrEqual(t, c.Billed, c.Quantity)
				a := new(big.Rat).Mul(pc.Price.Rat(), new(big.Rat).SetInt64(c.Billed))
				k := slices.Index([]chargenet.DimensionType{chargenet.DimensionFlat, chargenet.DimensionEnergy, chargenet.DimensionTime, chargenet.DimensionParkingTime}, c.Type)
				switch c.Type {
				case chargenet.DimensionEnergy:
					a.Quo(a, big.NewRat(1000, 1))
				case chargenet.DimensionTime, chargenet.DimensionParkingTime:
					a.Quo(a, big.NewRat(3600, 1))
				}
				excl[k].Add(&excl[k], a)
				if pc.VAT == nil {
					noVAT[k] = noVAT[k] || a.Sign() != 0
					continue
				}
				incl[k].Add(&incl[k], new(big.Rat).Mul(a, new(big.Rat).Add(big.NewRat(1, 1), new(big.Rat).Quo(pc.VAT.Rat(), big.NewRat(100, 1)))))
			}
		}
		assert.Equal(t, r.EnergyWh, energyWh)
		assert.Equal(t, *u.Readings[len(u.Readings)-1].EnergyWh, r.EnergyWh)
		assert.Equal(t, r.ChargingSeconds, charging)
		assert.Equal(t, r.ParkingSeconds, parked)
		assert.LessOrEqual(t, charging+parked, int64(u.End.Sub(u.Start)/time.Second))

		var allExcl, allIncl big.Rat
		allNoVAT := false
		inclString := func(x *big.Rat, unknown bool) string {
			if unknown {
				return "-"
			}
			return roundHalfUp(x)
		}
		for k, got := range []*chargenet.Price{r.TotalFixedCost, r.TotalEnergyCost, r.TotalTimeCost, r.TotalParkingCost} {
			allExcl.Add(&allExcl, &excl[k])
			allIncl.Add(&allIncl, &incl[k])
			allNoVAT = allNoVAT || noVAT[k]
			if got == nil {
				assert.Zero(t, excl[k].Sign(), "case %d", i)
				continue
			}
			assert.Equal(t, roundHalfUp(&excl[k])+"/"+inclString(&incl[k], noVAT[k]), priceString(got, 2), "case %d, total %d", i, k)
		}
		assert.Equal(t, roundHalfUp(&allExcl)+"/"+inclString(&allIncl, allNoVAT), priceString(&r.TotalCost, 2), "case %d", i)
	}
}

// roundHalfUp rounds a non-negative x to cents, half up.
func roundHalfUp(x *big.Rat) string {
	c := new(big.Rat).Add(new(big.Rat).Mul(x, big.NewRat(100, 1)), big.NewRat(1, 2))
	q := new(big.Int).Quo(c.Num(), c.Denom())
	return new(big.Rat).SetFrac(q, big.NewInt(100)).FloatString(2)
}
