package pricing_test

import (
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/pricing"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

// benchSession is a 24-hour session with a reading every minute (1,440): 8 hours charging
// at a varying power, then 16 hours parked; and a tariff of two time-of-day elements with
// parking.
func benchSession(tb testing.TB) (*chargenet.Tariff, *pricing.Usage, *time.Location) {
	loc := mustLoad(tb, "Europe/Berlin")
	tf := tariff("day-night",
		element(nil, flat("0.50", "19")),
		element(&chargenet.TariffRestrictions{StartTime: "07:00", EndTime: "23:00"}, energy("0.39", "19", 1), parkingTime("2.40", "19", 300)),
		element(&chargenet.TariffRestrictions{StartTime: "23:00", EndTime: "07:00"}, energy("0.29", "19", 1), parkingTime("0.00", "19", 300)))
	start := local(tb, loc, "2026-01-05 18:00:00")
	u := &pricing.Usage{Start: start, End: start.Add(24 * time.Hour)}
	wh := int64(0)
	for m := range 24*60 + 1 {
		at := start.Add(time.Duration(m) * time.Minute)
		w := int64(0)
		if m < 8*60 {
			w = 7000 + int64(m%60)*100
		}
		power, current := decimal.NewFromInt(w), decimal.NewFromInt(w).Div(decimal.NewFromInt(690)).Round(1)
		u.Readings = append(u.Readings, pricing.Reading{At: at, EnergyWh: ptr(wh), PowerW: &power, CurrentA: &current})
		wh += w / 60
	}
	u.States = []pricing.State{{At: start, Kind: pricing.Charging}, {At: start.Add(8 * time.Hour), Kind: pricing.SuspendedEV}}
	return tf, u, loc
}

func TestBenchSession(t *testing.T) {
	tf, u, loc := benchSession(t)
	r, err := pricing.Price(tf, u, loc)
	require.NoError(t, err)
	// 18:00-23:00 charging by day, 23:00-02:00 by night, then parked: free at night,
	// from 07:00 to 18:00 by day.
	require.Equal(t, []string{"18:00:00-23:00:00", "23:00:00-02:00:00", "02:00:00-07:00:00", "07:00:00-18:00:00"}, periodsOf(r, loc))
	require.Equal(t, int64(8*3600), r.ChargingSeconds)
	require.Equal(t, int64(16*3600), r.ParkingSeconds)
}

// BenchmarkPrice prices the 24-hour session of benchSession.
func BenchmarkPrice(b *testing.B) {
	tf, u, loc := benchSession(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pricing.Price(tf, u, loc); err != nil {
			b.Fatal(err)
		}
	}
}
