package pricing_test

import (
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/pricing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// periodsOf lists a result's periods as "start-end" in loc, for checks of where they cut.
func periodsOf(r *pricing.Result, loc *time.Location) []string {
	var out []string
	for _, p := range r.Periods {
		out = append(out, p.StartDateTime.In(loc).Format("15:04:05")+"-"+p.EndDateTime.In(loc).Format("15:04:05"))
	}
	return out
}

// Restrictions on the time of day are on the local wall clock, across DST: the night of
// 30 March 2025 in Berlin has no 02:00-03:00, that of 26 October 2025 has it twice.
func TestTimeOfDayAcrossDST(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	night := tariff("night",
		element(&chargenet.TariffRestrictions{StartTime: "00:00", EndTime: "06:00"}, chargingTime("1.00", "", 1)),
		element(nil, chargingTime("2.00", "", 1)))
	twice := tariff("twice",
		element(&chargenet.TariffRestrictions{StartTime: "02:30", EndTime: "03:00"}, chargingTime("6.00", "", 1)),
		element(nil, chargingTime("0.00", "", 1)))
	tests := []struct {
		name    string
		tariff  *chargenet.Tariff
		start   string
		real    time.Duration // from 01:00 local to 07:00 local
		total   string
		periods []string
	}{
		// 01:00-06:00 local is 4 real hours at 1.00, 06:00-07:00 one at 2.00.
		{"spring forward", night, "2025-03-30 01:00:00", 5 * time.Hour, "6.00", []string{"01:00:00-06:00:00", "06:00:00-07:00:00"}},
		// 01:00-06:00 local is 6 real hours.
		{"fall back", night, "2025-10-26 01:00:00", 7 * time.Hour, "8.00", []string{"01:00:00-06:00:00", "06:00:00-07:00:00"}},
		// 02:30-03:00 happens twice: one hour at 6.00.
		{"fall back, a window that happens twice", twice, "2025-10-26 01:00:00", 7 * time.Hour, "6.00",
			[]string{"01:00:00-02:30:00", "02:30:00-02:00:00", "02:00:00-02:30:00", "02:30:00-03:00:00", "03:00:00-07:00:00"}},
		// 02:30 never happens in spring: the window is empty.
		{"spring forward, a window that never happens", twice, "2025-03-30 01:00:00", 5 * time.Hour, "0.00", []string{"01:00:00-07:00:00"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := local(t, berlin, tc.start)
			u := newSession(start).charge(tc.real, 10000, "", "").usage()
			require.Equal(t, "07:00", u.End.In(berlin).Format("15:04"))
			r, err := pricing.Price(tc.tariff, u, berlin)
			require.NoError(t, err)
			assert.Equal(t, tc.total, r.TotalCost.ExclVat.StringFixed(2))
			assert.Equal(t, tc.periods, periodsOf(r, berlin))
		})
	}
}

// A window whose end is before its start wraps past midnight; restrictions on the day
// of the week hold for the local day of each instant.
func TestTimeOfDayWrapsAndDays(t *testing.T) {
	ams := mustLoad(t, "Europe/Amsterdam")
	tf := tariff("x",
		element(&chargenet.TariffRestrictions{StartTime: "22:00", EndTime: "06:00", DayOfWeek: []string{"FRIDAY", "SATURDAY"}}, energy("0.10", "", 1)),
		element(nil, energy("0.30", "", 1)))
	// Friday 21:00 to Saturday 07:00, 1 kWh an hour: 21-22 at 0.30, 22-06 at 0.10 (across
	// midnight, Friday then Saturday), 06-07 at 0.30.
	start := local(t, ams, "2026-01-09 21:00:00")
	require.Equal(t, time.Friday, start.Weekday())
	r, err := pricing.Price(tf, newSession(start).charge(10*time.Hour, 10000, "", "").usage(), ams)
	require.NoError(t, err)
	assert.Equal(t, []string{"21:00:00-22:00:00", "22:00:00-06:00:00", "06:00:00-07:00:00"}, periodsOf(r, ams))
	assert.Equal(t, []string{"ENERGY 1000->1000 0.3", "ENERGY 8000->8000 0.8", "ENERGY 1000->1000 0.3"}, costs(r))

	// Thursday 23:00 to Friday 01:00: Thursday is not listed, Friday from midnight is.
	start = local(t, ams, "2026-01-08 23:00:00")
	r, err = pricing.Price(tf, newSession(start).charge(2*time.Hour, 2000, "", "").usage(), ams)
	require.NoError(t, err)
	assert.Equal(t, []string{"ENERGY 1000->1000 0.3", "ENERGY 1000->1000 0.1"}, costs(r))
}

// Dates bound the local day, the end date exclusive.
func TestDates(t *testing.T) {
	ams := mustLoad(t, "Europe/Amsterdam")
	tf := tariff("x",
		element(&chargenet.TariffRestrictions{StartDate: "2026-01-10", EndDate: "2026-01-11"}, energy("0.10", "", 1)),
		element(nil, energy("0.30", "", 1)))
	r, err := pricing.Price(tf, newSession(local(t, ams, "2026-01-09 23:00:00")).charge(26*time.Hour, 26000, "", "").usage(), ams)
	require.NoError(t, err)
	assert.Equal(t, []string{"ENERGY 1000->1000 0.3", "ENERGY 24000->24000 2.4", "ENERGY 1000->1000 0.3"}, costs(r))
}

// Energy thresholds cut a period where the energy so far reaches them, exactly.
func TestEnergyThresholds(t *testing.T) {
	start := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	tf := tariff("x",
		element(&chargenet.TariffRestrictions{MaxKWh: pdec("1")}, energy("0.00", "", 1)),
		element(&chargenet.TariffRestrictions{MinKWh: pdec("1"), MaxKWh: pdec("10.5")}, energy("0.20", "", 1)),
		element(nil, energy("0.30", "", 1)))
	// 20 kWh in an hour: 1 kWh after 180 s, 10.5 kWh after 1,890 s.
	r, err := pricing.Price(tf, newSession(start).charge(time.Hour, 20000, "", "").usage(), time.UTC)
	require.NoError(t, err)
	assert.Equal(t, []string{"10:00:00-10:03:00", "10:03:00-10:31:30", "10:31:30-11:00:00"}, periodsOf(r, time.UTC))
	assert.Equal(t, []string{"ENERGY 1000->1000 0", "ENERGY 9500->9500 1.9", "ENERGY 9500->9500 2.85"}, costs(r))

	// 7 Wh a second, readings every 11 s: 1,000 Wh is reached during the 143rd second,
	// the last of the span from 132 s (924 Wh) to 143 s (1,001 Wh). The period ends
	// there with exactly 1,000 Wh; the 1 Wh beyond goes into the next span.
	s := newSession(start)
	for range 60 {
		s.charge(11*time.Second, 77, "", "")
	}
	r, err = pricing.Price(tf, s.usage(), time.UTC)
	require.NoError(t, err)
	assert.Equal(t, []string{"10:00:00-10:02:23", "10:02:23-10:11:00"}, periodsOf(r, time.UTC))
	assert.Equal(t, int64(1000), r.Periods[0].EnergyWh)
}

// States decide what time is: Charging is TIME, SuspendedEV is PARKING_TIME, and
// SuspendedEVSE is neither. The energy between two readings flows only while Charging.
func TestStates(t *testing.T) {
	start := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	tf := tariff("x", element(nil, chargingTime("6.00", "", 1), parkingTime("12.00", "", 1), energy("0.30", "", 1)))
	u := &pricing.Usage{
		Start: start, End: start.Add(100 * time.Minute),
		// One register delta for the whole session: 6 kWh.
		Readings: []pricing.Reading{{At: start, EnergyWh: ptr(int64(0))}, {At: start.Add(100 * time.Minute), EnergyWh: ptr(int64(6000))}},
		States: []pricing.State{
			{At: start.Add(-time.Second), Kind: pricing.Connected},
			{At: start.Add(5 * time.Minute), Kind: pricing.Charging},
			{At: start.Add(35 * time.Minute), Kind: pricing.SuspendedEVSE},
			{At: start.Add(55 * time.Minute), Kind: pricing.Charging},
			{At: start.Add(85 * time.Minute), Kind: pricing.SuspendedEV},
		},
	}
	r, err := pricing.Price(tf, u, time.UTC)
	require.NoError(t, err)
	assert.Equal(t, []string{"10:00:00-10:05:00", "10:05:00-10:35:00", "10:35:00-10:55:00", "10:55:00-11:25:00", "11:25:00-11:40:00"}, periodsOf(r, time.UTC))
	assert.Equal(t, []string{
		"ENERGY 3000->3000 0.9", "TIME 1800->1800 3",
		"ENERGY 3000->3000 0.9", "TIME 1800->1800 3",
		"PARKING_TIME 900->900 3",
	}, costs(r))
	assert.Equal(t, int64(3600), r.ChargingSeconds)
	assert.Equal(t, int64(900), r.ParkingSeconds)
	assert.Equal(t, "1.666667", r.TotalTime.String())
	assert.Equal(t, "0.25", r.TotalParkingTime.String())
	assert.Equal(t, "10.80", r.TotalCost.ExclVat.StringFixed(2))
}

// Without states, readings decide: energy flowing is TIME; no energy after some has
// flowed (a pause, or the end) is PARKING_TIME; no energy before any has flowed is
// neither.
func TestReadingsOnly(t *testing.T) {
	start := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	tf := tariff("x", element(nil, chargingTime("6.00", "", 1), parkingTime("12.00", "", 1)))
	at := func(m int) time.Time { return start.Add(time.Duration(m) * time.Minute) }
	reg := func(m int, wh int64) pricing.Reading {
		return pricing.Reading{At: at(m), EnergyWh: ptr(wh), PowerW: pdec("0")}
	}
	u := &pricing.Usage{Start: start, End: at(60), Readings: []pricing.Reading{
		reg(0, 0), reg(5, 0), reg(20, 1500), reg(30, 1500), reg(40, 2500), reg(60, 2500),
	}}
	r, err := pricing.Price(tf, u, time.UTC)
	require.NoError(t, err)
	assert.Equal(t, []string{"10:00:00-10:05:00", "10:05:00-10:20:00", "10:20:00-10:30:00", "10:30:00-10:40:00", "10:40:00-11:00:00"}, periodsOf(r, time.UTC))
	assert.Equal(t, []string{"TIME 900->900 1.5", "PARKING_TIME 600->600 2", "TIME 600->600 1", "PARKING_TIME 1200->1200 4"}, costs(r))
}

// A current restriction holds only when a current is known: without one, the element
// does not apply.
func TestUnknownCurrent(t *testing.T) {
	monday := time.Date(2019, 6, 3, 9, 30, 0, 0, time.UTC)
	r, err := pricing.Price(complexTariff(), newSession(monday).charge(time.Hour, 11000, "", "").usage(), time.UTC)
	require.NoError(t, err)
	assert.Nil(t, r.TotalTimeCost)
	assert.Equal(t, "2.50/2.88", priceString(&r.TotalCost, 2))
}

// VAT: a component without VAT makes the totals incl. VAT unknown, unless its amount is 0.
func TestVAT(t *testing.T) {
	start := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	u := newSession(start).charge(time.Hour, 10000, "", "").park(time.Hour).usage()
	tests := []struct {
		name                          string
		tariff                        *chargenet.Tariff
		total, fixed, energy, parking string
	}{
		{"all known", tariff("x", element(nil, flat("1", "21"), energy("0.30", "21", 1), parkingTime("2", "9", 1))),
			"6.00/7.02", "1.00/1.21", "3.00/3.63", "2.00/2.18"},
		{"energy unknown", tariff("x", element(nil, flat("1", "21"), energy("0.30", "", 1), parkingTime("2", "9", 1))),
			"6.00/-", "1.00/1.21", "3.00/-", "2.00/2.18"},
		{"unknown but free", tariff("x", element(nil, flat("1", "21"), energy("0.30", "21", 1), parkingTime("0", "", 1))),
			"4.00/4.84", "1.00/1.21", "3.00/3.63", "0.00/0.00"},
		{"0 %", tariff("x", element(nil, flat("1", "0"), energy("0.30", "0", 1), parkingTime("2", "0", 1))),
			"6.00/6.00", "1.00/1.00", "3.00/3.00", "2.00/2.00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := pricing.Price(tc.tariff, u, time.UTC)
			require.NoError(t, err)
			assert.Equal(t, tc.total, priceString(&r.TotalCost, 2))
			assert.Equal(t, tc.fixed, priceString(r.TotalFixedCost, 2))
			assert.Equal(t, tc.energy, priceString(r.TotalEnergyCost, 2))
			assert.Equal(t, tc.parking, priceString(r.TotalParkingCost, 2))
		})
	}
}

// Totals are rounded once, half up, to the currency's minor units, from the exact sum.
func TestRounding(t *testing.T) {
	start := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	// Six periods of 1,000 s at 0.003 per hour: each 0.000833…, together exactly 0.005.
	var els []chargenet.TariffElement
	for i := 1; i <= 5; i++ {
		els = append(els, element(&chargenet.TariffRestrictions{MaxDuration: ptr(1000 * i)}, chargingTime("0.003", "", 1)))
	}
	els = append(els, element(nil, chargingTime("0.003", "", 1)))
	tf := tariff("x", els...)
	r, err := pricing.Price(tf, newSession(start).charge(6000*time.Second, 1000, "", "").usage(), time.UTC)
	require.NoError(t, err)
	require.Len(t, r.Periods, 6)
	assert.Equal(t, "0.01", r.TotalCost.ExclVat.StringFixed(2))

	for _, tc := range []struct {
		currency, price, want string
	}{
		{"EUR", "0.125", "0.13"}, // 0.125 per kWh, 1 kWh
		{"EUR", "0.124999", "0.12"},
		{"JPY", "12.5", "13"},
		{"KWD", "0.0125", "0.013"},
		{"CLF", "0.00005", "0.0001"},
	} {
		tf := tariff("x", element(nil, energy(tc.price, "", 1)))
		tf.Currency = tc.currency
		r, err := pricing.Price(tf, newSession(start).charge(time.Hour, 1000, "", "").usage(), time.UTC)
		require.NoError(t, err)
		assert.Equal(t, tc.want, r.TotalCost.ExclVat.String(), tc.currency)
		assert.Equal(t, tc.currency, r.Currency)
	}
}

// Min and max price hold the total excl. and incl. VAT each on its own, and leave an
// unknown incl. VAT unknown.
func TestMinMaxPrice(t *testing.T) {
	start := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		vat      string
		min, max *chargenet.Price
		wh       int64
		total    string
	}{
		{"below min", "10", &chargenet.Price{ExclVat: dec("1"), InclVat: pdec("1.10")}, nil, 1000, "1.00/1.10"},
		{"min excl only", "10", &chargenet.Price{ExclVat: dec("1")}, nil, 1000, "1.00/0.33"},
		{"above max", "10", nil, &chargenet.Price{ExclVat: dec("5"), InclVat: pdec("5.50")}, 20000, "5.00/5.50"},
		{"max, incl reached first", "25", nil, &chargenet.Price{ExclVat: dec("5"), InclVat: pdec("5.50")}, 16000, "4.80/5.50"},
		{"unknown VAT stays unknown", "", nil, &chargenet.Price{ExclVat: dec("5"), InclVat: pdec("5.50")}, 20000, "5.00/-"},
		{"within", "10", &chargenet.Price{ExclVat: dec("1")}, &chargenet.Price{ExclVat: dec("5")}, 10000, "3.00/3.30"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tf := tariff("x", element(nil, energy("0.30", tc.vat, 1)))
			tf.MinPrice, tf.MaxPrice = tc.min, tc.max
			r, err := pricing.Price(tf, newSession(start).charge(time.Hour, tc.wh, "", "").usage(), time.UTC)
			require.NoError(t, err)
			assert.Equal(t, tc.total, priceString(&r.TotalCost, 2))
		})
	}
}

// FLAT is charged once, by the first element with a FLAT component whose restrictions
// hold, in the period where they first hold.
func TestFlat(t *testing.T) {
	start := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	tf := tariff("x",
		element(&chargenet.TariffRestrictions{MinDuration: ptr(3600)}, flat("5.00", "20"), energy("0.40", "20", 1)),
		element(nil, energy("0.20", "20", 1)))
	r, err := pricing.Price(tf, newSession(start).charge(2*time.Hour, 2000, "", "").usage(), time.UTC)
	require.NoError(t, err)
	assert.Equal(t, []string{"ENERGY 1000->1000 0.2", "FLAT 1->1 5", "ENERGY 1000->1000 0.4"}, costs(r))
	assert.Equal(t, "5.00/6.00", priceString(r.TotalFixedCost, 2))

	// A session of no duration still has one period, and its FLAT.
	r, err = pricing.Price(tariff("x", element(nil, flat("0.50", "20"))), &pricing.Usage{Start: start, End: start}, time.UTC)
	require.NoError(t, err)
	require.Len(t, r.Periods, 1)
	assert.Equal(t, start, r.Periods[0].StartDateTime)
	assert.Equal(t, start, r.Periods[0].EndDateTime)
	assert.Equal(t, "0.50/0.60", priceString(&r.TotalCost, 2))
	assert.Equal(t, "0", r.TotalTime.String())
}

// A period reports MAX_POWER and MAX_CURRENT from the readings in force during it.
func TestPeriodDimensions(t *testing.T) {
	start := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	tf := tariff("x", element(nil, energy("0.30", "", 1), parkingTime("1", "", 1)))
	u := newSession(start).charge(30*time.Minute, 5000, "11000", "16").charge(30*time.Minute, 3500, "7000", "10.5").park(30 * time.Minute).usage()
	r, err := pricing.Price(tf, u, time.UTC)
	require.NoError(t, err)
	require.Len(t, r.Periods, 2)
	assert.Equal(t, []string{"ENERGY 8.5", "TIME 1", "MAX_POWER 11", "MAX_CURRENT 16"}, dimensions(r.Periods[0]))
	assert.Equal(t, []string{"ENERGY 0", "PARKING_TIME 0.5", "MAX_POWER 0", "MAX_CURRENT 10.5"}, dimensions(r.Periods[1]))
}

func TestPriceErrors(t *testing.T) {
	start := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	good := func() *pricing.Usage { return newSession(start).charge(time.Hour, 1000, "", "").usage() }
	tf := func() *chargenet.Tariff { return tariff("x", element(nil, energy("0.30", "", 1))) }
	tests := []struct {
		name   string
		tariff func() *chargenet.Tariff
		usage  func() *pricing.Usage
		loc    *time.Location
		param  string
	}{
		{"invalid tariff", func() *chargenet.Tariff { t := tf(); t.Currency = "EURO"; return t }, good, time.UTC, "currency"},
		{"no time zone", tf, good, nil, "timeZone"},
		{"before the tariff", func() *chargenet.Tariff { t := tf(); t.StartDateTime = ptr(start.Add(time.Second)); return t }, good, time.UTC, "start"},
		{"at the tariff's end", func() *chargenet.Tariff { t := tf(); t.EndDateTime = ptr(start); return t }, good, time.UTC, "start"},
		{"end before start", tf, func() *pricing.Usage { u := good(); u.End = start.Add(-time.Second); return u }, time.UTC, "end"},
		{"too long", tf, func() *pricing.Usage {
			u := good()
			u.End = start.Add(pricing.MaxSessionDuration + time.Second)
			return u
		}, time.UTC, "end"},
		{"readings out of order", tf, func() *pricing.Usage {
			u := good()
			u.Readings[1].At = start.Add(-time.Minute)
			return u
		}, time.UTC, "readings[1].at"},
		{"register goes down", tf, func() *pricing.Usage {
			u := good()
			u.Readings = append(u.Readings, pricing.Reading{At: u.End, EnergyWh: ptr(int64(999))})
			return u
		}, time.UTC, "readings[2].energyWh"},
		{"negative register", tf, func() *pricing.Usage { u := good(); u.Readings[0].EnergyWh = ptr(int64(-1)); return u }, time.UTC, "readings[0].energyWh"},
		{"negative power", tf, func() *pricing.Usage { u := good(); u.Readings[0].PowerW = pdec("-1"); return u }, time.UTC, "readings[0].powerW"},
		{"current with too many places", tf, func() *pricing.Usage { u := good(); u.Readings[1].CurrentA = pdec("1e-7"); return u }, time.UTC, "readings[1].currentA"},
		{"unknown state", tf, func() *pricing.Usage { u := good(); u.States[0].Kind = 9; return u }, time.UTC, "states[0].kind"},
		{"states out of order", tf, func() *pricing.Usage {
			u := good()
			u.States = append(u.States, pricing.State{At: start.Add(-time.Minute), Kind: pricing.Charging})
			return u
		}, time.UTC, "states[1].at"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pricing.Price(tc.tariff(), tc.usage(), tc.loc)
			require.ErrorIs(t, err, chargenet.ErrInvalid)
			var de *chargenet.Error
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tc.param, de.Param)
			assert.Equal(t, chargenet.CodeInvalidBody, de.Code)
			assert.Contains(t, de.Message, tc.param+": ")
		})
	}
}
