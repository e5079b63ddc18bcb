package chargenet_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func decPtr(s string) *decimal.Decimal {
	d := decimal.RequireFromString(s)
	return &d
}

// validTariff sets every field, each to a valid value.
func validTariff() *chargenet.Tariff {
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	return &chargenet.Tariff{
		ID: "T-1", Currency: "EUR", Type: chargenet.TariffRegular,
		AltText:       []chargenet.DisplayText{{Language: "en", Text: "0.39/kWh by day"}, {Language: "nl", Text: "0,39/kWh overdag"}},
		MinPrice:      &chargenet.Price{ExclVat: decimal.RequireFromString("0.50"), InclVat: decPtr("0.60")},
		MaxPrice:      &chargenet.Price{ExclVat: decimal.RequireFromString("50"), InclVat: decPtr("60")},
		StartDateTime: &from, EndDateTime: &to,
		Elements: []chargenet.TariffElement{
			{PriceComponents: []chargenet.PriceComponent{{Type: chargenet.DimensionFlat, Price: decimal.RequireFromString("0.50"), VAT: decPtr("20"), StepSize: 1}}},
			{
				PriceComponents: []chargenet.PriceComponent{
					{Type: chargenet.DimensionEnergy, Price: decimal.RequireFromString("0.39"), VAT: decPtr("20"), StepSize: 1},
					{Type: chargenet.DimensionTime, Price: decimal.RequireFromString("1.20"), StepSize: 60},
					{Type: chargenet.DimensionParkingTime, Price: decimal.RequireFromString("2.4"), VAT: decPtr("7.5"), StepSize: 300},
				},
				Restrictions: &chargenet.TariffRestrictions{
					StartTime: "07:00", EndTime: "23:00", StartDate: "2026-01-01", EndDate: "2026-12-31",
					MinKWh: decPtr("0"), MaxKWh: decPtr("100.5"), MinCurrent: decPtr("6"), MaxCurrent: decPtr("32"),
					MinPower: decPtr("3.7"), MaxPower: decPtr("22"), MinDuration: ptr(0), MaxDuration: ptr(86400),
					DayOfWeek: []string{"MONDAY", "FRIDAY"},
				},
			},
			{
				PriceComponents: []chargenet.PriceComponent{{Type: chargenet.DimensionEnergy, Price: decimal.RequireFromString("0.29"), VAT: decPtr("0"), StepSize: 0}},
				Restrictions:    &chargenet.TariffRestrictions{StartTime: "23:00", EndTime: "07:00"},
			},
		},
	}
}

func TestTariffValidate(t *testing.T) {
	require.NoError(t, validTariff().Validate())
	restr := func(f func(r *chargenet.TariffRestrictions)) func(*chargenet.Tariff) {
		return func(t *chargenet.Tariff) { f(t.Elements[1].Restrictions) }
	}
	comp := func(e, c int, f func(c *chargenet.PriceComponent)) func(*chargenet.Tariff) {
		return func(t *chargenet.Tariff) { f(&t.Elements[e].PriceComponents[c]) }
	}
	tests := []struct {
		name   string
		change func(*chargenet.Tariff)
		param  string
	}{
		{"no id", func(t *chargenet.Tariff) { t.ID = "" }, "id"},
		{"id too long", func(t *chargenet.Tariff) { t.ID = strings.Repeat("x", 37) }, "id"},
		{"unknown currency", func(t *chargenet.Tariff) { t.Currency = "EURO" }, "currency"},
		{"lower-case currency", func(t *chargenet.Tariff) { t.Currency = "eur" }, "currency"},
		{"currency without minor units", func(t *chargenet.Tariff) { t.Currency = "XAU" }, "currency"},
		{"unknown type", func(t *chargenet.Tariff) { t.Type = "CHEAP" }, "type"},
		{"language", func(t *chargenet.Tariff) { t.AltText[1].Language = "NL" }, "altText[1].language"},
		{"empty text", func(t *chargenet.Tariff) { t.AltText[0].Text = "" }, "altText[0].text"},
		{"too many texts", func(t *chargenet.Tariff) {
			t.AltText = make([]chargenet.DisplayText, chargenet.MaxAltTexts+1)
		}, "altText"},
		{"negative min price", func(t *chargenet.Tariff) { t.MinPrice.ExclVat = decimal.RequireFromString("-0.01") }, "minPrice.exclVat"},
		{"min price below a cent", func(t *chargenet.Tariff) { t.MinPrice.ExclVat = decimal.RequireFromString("0.555") }, "minPrice.exclVat"},
		{"incl below excl", func(t *chargenet.Tariff) { t.MaxPrice.InclVat = decPtr("49.99") }, "maxPrice.inclVat"},
		{"min above max", func(t *chargenet.Tariff) {
			t.MinPrice.ExclVat, t.MinPrice.InclVat = decimal.RequireFromString("51"), decPtr("55")
		}, "minPrice.exclVat"},
		{"min incl above max incl", func(t *chargenet.Tariff) { t.MinPrice.InclVat = decPtr("60.01") }, "minPrice.inclVat"},
		{"start after end", func(t *chargenet.Tariff) { t.StartDateTime, t.EndDateTime = t.EndDateTime, t.StartDateTime }, "startDateTime"},
		{"start at end", func(t *chargenet.Tariff) { t.EndDateTime = t.StartDateTime }, "startDateTime"},
		{"no elements", func(t *chargenet.Tariff) { t.Elements = nil }, "elements"},
		{"too many elements", func(t *chargenet.Tariff) {
			t.Elements = make([]chargenet.TariffElement, chargenet.MaxTariffElements+1)
			for i := range t.Elements {
				t.Elements[i] = validTariff().Elements[0]
			}
		}, "elements"},
		// Refused by their number before any is looked at: each is invalid on its own.
		{"10,000 elements", func(t *chargenet.Tariff) { t.Elements = make([]chargenet.TariffElement, 10000) }, "elements"},
		{"element without components", func(t *chargenet.Tariff) { t.Elements[2].PriceComponents = nil }, "elements[2].priceComponents"},
		{"too many components", func(t *chargenet.Tariff) {
			e := &t.Elements[1]
			e.PriceComponents = append(e.PriceComponents, e.PriceComponents[0], e.PriceComponents[0])
		}, "elements[1].priceComponents"},
		{"two components of a dimension", func(t *chargenet.Tariff) {
			e := &t.Elements[1]
			e.PriceComponents = append(e.PriceComponents, e.PriceComponents[1])
		}, "elements[1].priceComponents[3].type"},
		{"unknown dimension", comp(1, 2, func(c *chargenet.PriceComponent) { c.Type = "RESERVATION" }), "elements[1].priceComponents[2].type"},
		{"negative price", comp(2, 0, func(c *chargenet.PriceComponent) { c.Price = decimal.RequireFromString("-0.29") }), "elements[2].priceComponents[0].price"},
		{"price with 7 places", comp(2, 0, func(c *chargenet.PriceComponent) { c.Price = decimal.RequireFromString("0.2900001") }), "elements[2].priceComponents[0].price"},
		{"huge price", comp(2, 0, func(c *chargenet.PriceComponent) { c.Price = decimal.New(1, 400) }), "elements[2].priceComponents[0].price"},
		{"vat over 100", comp(1, 0, func(c *chargenet.PriceComponent) { c.VAT = decPtr("100.5") }), "elements[1].priceComponents[0].vat"},
		{"negative vat", comp(2, 0, func(c *chargenet.PriceComponent) { c.VAT = decPtr("-1") }), "elements[2].priceComponents[0].vat"},
		{"vat with 5 places", comp(1, 2, func(c *chargenet.PriceComponent) { c.VAT = decPtr("7.00001") }), "elements[1].priceComponents[2].vat"},
		{"negative step size", comp(1, 1, func(c *chargenet.PriceComponent) { c.StepSize = -1 }), "elements[1].priceComponents[1].stepSize"},
		{"huge step size", comp(1, 1, func(c *chargenet.PriceComponent) { c.StepSize = chargenet.MaxStepSize + 1 }), "elements[1].priceComponents[1].stepSize"},
		{"start time 25:00", restr(func(r *chargenet.TariffRestrictions) { r.StartTime = "25:00" }), "elements[1].restrictions.startTime"},
		{"end time 7:00", restr(func(r *chargenet.TariffRestrictions) { r.EndTime = "7:00" }), "elements[1].restrictions.endTime"},
		{"end time 24:00", restr(func(r *chargenet.TariffRestrictions) { r.EndTime = "24:00" }), "elements[1].restrictions.endTime"},
		{"no 30 February", restr(func(r *chargenet.TariffRestrictions) { r.StartDate = "2026-02-30" }), "elements[1].restrictions.startDate"},
		{"short year", restr(func(r *chargenet.TariffRestrictions) { r.EndDate = "26-12-31" }), "elements[1].restrictions.endDate"},
		{"start date after end date", restr(func(r *chargenet.TariffRestrictions) { r.StartDate = "2027-01-01" }), "elements[1].restrictions.startDate"},
		{"min kWh above max", restr(func(r *chargenet.TariffRestrictions) { r.MinKWh = decPtr("100.501") }), "elements[1].restrictions.minKwh"},
		{"kWh below a Wh", restr(func(r *chargenet.TariffRestrictions) { r.MaxKWh = decPtr("100.5005") }), "elements[1].restrictions.maxKwh"},
		{"negative kWh", restr(func(r *chargenet.TariffRestrictions) { r.MinKWh = decPtr("-1") }), "elements[1].restrictions.minKwh"},
		{"min current above max", restr(func(r *chargenet.TariffRestrictions) { r.MinCurrent = decPtr("33") }), "elements[1].restrictions.minCurrent"},
		{"min power above max", restr(func(r *chargenet.TariffRestrictions) { r.MaxPower = decPtr("3") }), "elements[1].restrictions.minPower"},
		{"negative duration", restr(func(r *chargenet.TariffRestrictions) { r.MinDuration = ptr(-1) }), "elements[1].restrictions.minDuration"},
		{"min duration above max", restr(func(r *chargenet.TariffRestrictions) { r.MinDuration = ptr(86401) }), "elements[1].restrictions.minDuration"},
		{"unknown day", restr(func(r *chargenet.TariffRestrictions) { r.DayOfWeek = []string{"MONDAY", "Monday"} }), "elements[1].restrictions.dayOfWeek[1]"},
		{"day twice", restr(func(r *chargenet.TariffRestrictions) { r.DayOfWeek = []string{"FRIDAY", "MONDAY", "FRIDAY"} }), "elements[1].restrictions.dayOfWeek[2]"},
		{"eight days", restr(func(r *chargenet.TariffRestrictions) { r.DayOfWeek = make([]string, 8) }), "elements[1].restrictions.dayOfWeek"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tf := validTariff()
			tc.change(tf)
			err := tf.Validate()
			require.Error(t, err)
			assert.True(t, errors.Is(err, chargenet.ErrInvalid))
			var de *chargenet.Error
			require.ErrorAs(t, err, &de)
			assert.Equal(t, chargenet.CodeInvalidBody, de.Code)
			assert.Equal(t, tc.param, de.Param)
			assert.True(t, strings.HasPrefix(de.Message, tc.param+": "), de.Message)
		})
	}
}

// Values OCPI allows that are easy to refuse by mistake.
func TestTariffValidateAccepts(t *testing.T) {
	tests := []struct {
		name   string
		change func(*chargenet.Tariff)
	}{
		{"no optional fields", func(t *chargenet.Tariff) {
			*t = chargenet.Tariff{ID: "1", Currency: "JPY", Elements: []chargenet.TariffElement{
				{PriceComponents: []chargenet.PriceComponent{{Type: chargenet.DimensionFlat, Price: decimal.Zero}}},
			}}
		}},
		{"end time 00:00", func(t *chargenet.Tariff) { t.Elements[1].Restrictions.EndTime = "00:00" }},
		{"start time equal to end time", func(t *chargenet.Tariff) { t.Elements[1].Restrictions.EndTime = "07:00" }},
		{"min equal to max", func(t *chargenet.Tariff) { t.Elements[1].Restrictions.MinKWh = decPtr("100.5") }},
		{"trailing zeros", func(t *chargenet.Tariff) {
			t.Elements[1].PriceComponents[0].Price = decimal.RequireFromString("0.3900000000")
			t.MinPrice.ExclVat = decimal.RequireFromString("0.5000")
		}},
		{"three-decimal currency", func(t *chargenet.Tariff) {
			t.Currency = "KWD"
			t.MinPrice.ExclVat = decimal.RequireFromString("0.125")
		}},
		{"100 % VAT", func(t *chargenet.Tariff) { t.Elements[0].PriceComponents[0].VAT = decPtr("100") }},
		{"max elements", func(t *chargenet.Tariff) {
			for len(t.Elements) < chargenet.MaxTariffElements {
				t.Elements = append(t.Elements, t.Elements[2])
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tf := validTariff()
			tc.change(tf)
			assert.NoError(t, tf.Validate())
		})
	}
}

func TestCurrencyMinorUnits(t *testing.T) {
	for code, want := range map[string]int{"EUR": 2, "USD": 2, "CHF": 2, "GBP": 2, "JPY": 0, "KRW": 0, "KWD": 3, "BHD": 3, "CLF": 4, "UYW": 4} {
		got, ok := chargenet.CurrencyMinorUnits(code)
		assert.True(t, ok, code)
		assert.Equal(t, want, got, code)
	}
	for _, code := range []string{"", "eur", "EURO", "XAU", "XDR", "XTS", "XXX", "DEM"} {
		_, ok := chargenet.CurrencyMinorUnits(code)
		assert.False(t, ok, code)
	}
}

func TestWeekday(t *testing.T) {
	d, ok := chargenet.Weekday("MONDAY")
	assert.True(t, ok)
	assert.Equal(t, time.Monday, d)
	d, ok = chargenet.Weekday("SUNDAY")
	assert.True(t, ok)
	assert.Equal(t, time.Sunday, d)
	_, ok = chargenet.Weekday("Monday")
	assert.False(t, ok)
}
