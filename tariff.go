package chargenet

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"
)

// Tariff is what charging costs at a connector, modelled on the OCPI 2.2.1 Tariff so that
// the OCPI Tariffs and CDRs modules map it field by field. Its elements are looked up per
// dimension: for each of ENERGY, TIME, PARKING_TIME and FLAT, the first element with a
// component of that dimension whose restrictions all hold prices it (see package pricing).
type Tariff struct {
	ID       string
	Currency string     // ISO 4217 alphabetic code
	Type     TariffType // empty: the tariff applies to every session
	AltText  []DisplayText
	// MinPrice and MaxPrice bound the total cost of a session, excl. and incl. VAT each on
	// its own; nil when there is no bound.
	MinPrice *Price
	MaxPrice *Price
	// StartDateTime and EndDateTime bound when a session may start under this tariff; nil
	// when open.
	StartDateTime *time.Time
	EndDateTime   *time.Time
	Elements      []TariffElement
	LastUpdated   time.Time
	Version       int64
	DeletedAt     *time.Time // nil while the tariff exists
}

// TariffType tells which sessions a tariff is meant for (OCPI TariffType).
type TariffType string

// The OCPI 2.2.1 tariff types.
const (
	TariffAdHocPayment TariffType = "AD_HOC_PAYMENT"
	TariffProfileCheap TariffType = "PROFILE_CHEAP"
	TariffProfileFast  TariffType = "PROFILE_FAST"
	TariffProfileGreen TariffType = "PROFILE_GREEN"
	TariffRegular      TariffType = "REGULAR"
)

// Valid reports whether t is empty or one of the OCPI tariff types.
func (t TariffType) Valid() bool {
	switch t {
	case "", TariffAdHocPayment, TariffProfileCheap, TariffProfileFast, TariffProfileGreen, TariffRegular:
		return true
	}
	return false
}

// DisplayText is a text in one language (OCPI DisplayText).
type DisplayText struct {
	Language string // ISO 639-1, lower case
	Text     string
}

// Price is an amount of money excl. VAT, and incl. VAT when that is known (OCPI Price).
type Price struct {
	ExclVat decimal.Decimal
	InclVat *decimal.Decimal // nil when the VAT is not known
}

// TariffElement is a group of price components that apply under the same restrictions.
type TariffElement struct {
	PriceComponents []PriceComponent
	Restrictions    *TariffRestrictions // nil: always applies
}

// DimensionType is what a price component prices (OCPI TariffDimensionType).
type DimensionType string

// The dimensions a tariff prices.
const (
	DimensionEnergy      DimensionType = "ENERGY"       // per kWh; step size in Wh
	DimensionFlat        DimensionType = "FLAT"         // once per session
	DimensionParkingTime DimensionType = "PARKING_TIME" // per hour; step size in seconds
	DimensionTime        DimensionType = "TIME"         // per hour charging; step size in seconds
)

// Valid reports whether d is one of the four tariff dimensions.
func (d DimensionType) Valid() bool {
	switch d {
	case DimensionEnergy, DimensionFlat, DimensionParkingTime, DimensionTime:
		return true
	}
	return false
}

// PriceComponent prices one dimension (OCPI PriceComponent).
type PriceComponent struct {
	Type DimensionType
	// Price is excl. VAT: per kWh (ENERGY), per hour (TIME, PARKING_TIME) or per session (FLAT).
	Price decimal.Decimal
	// VAT is a percentage. Nil means that the VAT is not known, which is not 0 %.
	VAT *decimal.Decimal
	// StepSize is the block the dimension is billed in: Wh for ENERGY, seconds for TIME and
	// PARKING_TIME; 0 and 1 bill exactly. Ignored for FLAT.
	StepSize int
}

// TariffRestrictions are the conditions under which an element applies; every one that is
// set must hold (OCPI TariffRestrictions, without reservation). Zero values (empty strings,
// nil pointers, an empty DayOfWeek) are unset.
type TariffRestrictions struct {
	// StartTime and EndTime ("HH:MM", local time of the location) bound the time of day:
	// from StartTime, until EndTime (exclusive). An EndTime before StartTime wraps past
	// midnight; EndTime "00:00" is the end of the day.
	StartTime string
	EndTime   string
	// StartDate and EndDate ("YYYY-MM-DD", local) bound the day: from StartDate, until
	// EndDate (exclusive).
	StartDate string
	EndDate   string
	// MinKWh and MaxKWh bound the energy charged so far in the session (min inclusive,
	// max exclusive).
	MinKWh *decimal.Decimal
	MaxKWh *decimal.Decimal
	// MinCurrent and MaxCurrent (A, sum over phases) and MinPower and MaxPower (kW) bound
	// the instantaneous values (min inclusive, max exclusive).
	MinCurrent *decimal.Decimal
	MaxCurrent *decimal.Decimal
	MinPower   *decimal.Decimal
	MaxPower   *decimal.Decimal
	// MinDuration and MaxDuration (seconds) bound the session's duration so far (min
	// inclusive, max exclusive).
	MinDuration *int
	MaxDuration *int
	// DayOfWeek lists the local days ("MONDAY" … "SUNDAY") the element applies on.
	DayOfWeek []string
}

// Limits of a tariff, checked by Validate.
const (
	// MaxTariffElements is the most elements a tariff may have: enough for a price per
	// hour of each day of a week and more, and a bound on the work of pricing a session.
	MaxTariffElements = 100
	// MaxPriceComponents is the most components an element may have: one per dimension.
	MaxPriceComponents = 4
	// MaxAltTexts is the most alternative texts a tariff may have.
	MaxAltTexts = 32
	// MaxStepSize is the largest step size (Wh or seconds).
	MaxStepSize = 1_000_000_000
)

var (
	tariffIDRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,36}$`)
	languageRe = regexp.MustCompile(`^[a-z]{2}$`)
	timeOfDay  = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)
	dateRe     = regexp.MustCompile(`^[12][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$`)
	// maxAmount bounds every price and every restriction value: far above any real one,
	// and small enough that no arithmetic on it can grow without limit.
	maxAmount = decimal.New(1, 9)
	hundred   = decimal.NewFromInt(100)
)

// Days of the week as OCPI names them, in time.Weekday order.
var weekdays = [7]string{"SUNDAY", "MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY"}

// Weekday returns the time.Weekday of an OCPI DayOfWeek name, and whether it is one.
func Weekday(name string) (time.Weekday, bool) {
	for i, n := range weekdays {
		if n == name {
			return time.Weekday(i), true
		}
	}
	return 0, false
}

// Validate checks the tariff: its id, currency (an active ISO 4217 code with minor units),
// type, texts, price bounds, validity period and every element against the limits above.
// It returns an ErrInvalid *Error (code invalid_body) whose Param names the first
// offending field, as in "elements[2].priceComponents[0].vat", and whose message starts
// with it. LastUpdated, Version and DeletedAt are kept by the store and not checked.
func (t *Tariff) Validate() error {
	if err := t.validate(); err != nil {
		err.Message = err.Param + ": " + err.Message
		return err
	}
	return nil
}

func (t *Tariff) validate() *Error {
	if !tariffIDRe.MatchString(t.ID) {
		return invalid("id", "%q must be 1 to 36 letters, digits, '-' or '_'", t.ID)
	}
	minor, ok := CurrencyMinorUnits(t.Currency)
	if !ok {
		return invalid("currency", "%q is not an active ISO 4217 currency code", t.Currency)
	}
	if !t.Type.Valid() {
		return invalid("type", "%q must be one of AD_HOC_PAYMENT, PROFILE_CHEAP, PROFILE_FAST, PROFILE_GREEN, REGULAR", t.Type)
	}
	if len(t.AltText) > MaxAltTexts {
		return invalid("altText", "%d texts; at most %d are allowed", len(t.AltText), MaxAltTexts)
	}
	for i, d := range t.AltText {
		switch {
		case !languageRe.MatchString(d.Language):
			return invalid(fmt.Sprintf("altText[%d].language", i), "%q must be an ISO 639-1 code in lower case", d.Language)
		case d.Text == "" || len(d.Text) > 512:
			return invalid(fmt.Sprintf("altText[%d].text", i), "must be 1 to 512 characters")
		}
	}
	for _, p := range []struct {
		name  string
		price *Price
	}{{"minPrice", t.MinPrice}, {"maxPrice", t.MaxPrice}} {
		if err := validPrice(p.name, p.price, minor); err != nil {
			return err
		}
	}
	if t.MinPrice != nil && t.MaxPrice != nil {
		if t.MinPrice.ExclVat.GreaterThan(t.MaxPrice.ExclVat) {
			return invalid("minPrice.exclVat", "%s is above maxPrice.exclVat %s", t.MinPrice.ExclVat, t.MaxPrice.ExclVat)
		}
		if t.MinPrice.InclVat != nil && t.MaxPrice.InclVat != nil && t.MinPrice.InclVat.GreaterThan(*t.MaxPrice.InclVat) {
			return invalid("minPrice.inclVat", "%s is above maxPrice.inclVat %s", t.MinPrice.InclVat, t.MaxPrice.InclVat)
		}
	}
	if t.StartDateTime != nil && t.EndDateTime != nil && !t.StartDateTime.Before(*t.EndDateTime) {
		return invalid("startDateTime", "%s must be before endDateTime %s",
			t.StartDateTime.UTC().Format(time.RFC3339), t.EndDateTime.UTC().Format(time.RFC3339))
	}
	switch {
	case len(t.Elements) == 0:
		return invalid("elements", "a tariff needs at least one element")
	case len(t.Elements) > MaxTariffElements:
		return invalid("elements", "a tariff has at most %d elements, not %d", MaxTariffElements, len(t.Elements))
	}
	for i := range t.Elements {
		if err := t.Elements[i].validate(); err != nil {
			err.Param = fmt.Sprintf("elements[%d].", i) + err.Param
			return err
		}
	}
	return nil
}

// validPrice checks a price bound: amounts in the currency's minor units, incl. VAT not
// below excl. VAT.
func validPrice(name string, p *Price, minor int) *Error {
	if p == nil {
		return nil
	}
	if err := validAmount(name+".exclVat", p.ExclVat, int32(minor)); err != nil {
		return err
	}
	if p.InclVat == nil {
		return nil
	}
	if err := validAmount(name+".inclVat", *p.InclVat, int32(minor)); err != nil {
		return err
	}
	if p.InclVat.LessThan(p.ExclVat) {
		return invalid(name+".inclVat", "%s is below exclVat %s", p.InclVat, p.ExclVat)
	}
	return nil
}

// validAmount checks that v is 0 or more, below maxAmount, with at most places decimal places.
func validAmount(param string, v decimal.Decimal, places int32) *Error {
	switch {
	case v.IsNegative():
		return invalid(param, "%s must not be negative", v)
	case v.GreaterThanOrEqual(maxAmount):
		return invalid(param, "%s must be below %s", v, maxAmount)
	case !v.Equal(v.Truncate(places)):
		return invalid(param, "%s has more than %d decimal places", v, places)
	}
	return nil
}

func (e *TariffElement) validate() *Error {
	switch {
	case len(e.PriceComponents) == 0:
		return invalid("priceComponents", "an element needs at least one price component")
	case len(e.PriceComponents) > MaxPriceComponents:
		return invalid("priceComponents", "an element has at most %d price components (one per dimension), not %d",
			MaxPriceComponents, len(e.PriceComponents))
	}
	var seen [MaxPriceComponents]DimensionType
	for i := range e.PriceComponents {
		c := &e.PriceComponents[i]
		p := fmt.Sprintf("priceComponents[%d].", i)
		if !c.Type.Valid() {
			return invalid(p+"type", "%q must be one of ENERGY, FLAT, PARKING_TIME, TIME", c.Type)
		}
		for _, s := range seen[:i] {
			if s == c.Type {
				return invalid(p+"type", "the element already has a %s component; only one per dimension can apply", c.Type)
			}
		}
		seen[i] = c.Type
		if err := validAmount(p+"price", c.Price, 6); err != nil {
			return err
		}
		if c.VAT != nil {
			if c.VAT.IsNegative() || c.VAT.GreaterThan(hundred) {
				return invalid(p+"vat", "%s must be a percentage from 0 to 100", c.VAT)
			}
			if !c.VAT.Equal(c.VAT.Truncate(4)) {
				return invalid(p+"vat", "%s has more than 4 decimal places", c.VAT)
			}
		}
		if c.StepSize < 0 || c.StepSize > MaxStepSize {
			return invalid(p+"stepSize", "%d must be from 0 to %d", c.StepSize, MaxStepSize)
		}
	}
	if e.Restrictions != nil {
		if err := e.Restrictions.validate(); err != nil {
			err.Param = "restrictions." + err.Param
			return err
		}
	}
	return nil
}

func (r *TariffRestrictions) validate() *Error {
	for _, f := range []struct{ name, v string }{{"startTime", r.StartTime}, {"endTime", r.EndTime}} {
		if f.v != "" && !timeOfDay.MatchString(f.v) {
			return invalid(f.name, "%q must be a time of day HH:MM from 00:00 to 23:59", f.v)
		}
	}
	for _, f := range []struct{ name, v string }{{"startDate", r.StartDate}, {"endDate", r.EndDate}} {
		if f.v == "" {
			continue
		}
		if _, err := time.Parse(time.DateOnly, f.v); err != nil || !dateRe.MatchString(f.v) {
			return invalid(f.name, "%q must be a date YYYY-MM-DD", f.v)
		}
	}
	if r.StartDate != "" && r.EndDate != "" && r.StartDate > r.EndDate {
		return invalid("startDate", "%s is after endDate %s", r.StartDate, r.EndDate)
	}
	for _, p := range []struct {
		name     string
		min, max *decimal.Decimal
	}{{"Kwh", r.MinKWh, r.MaxKWh}, {"Current", r.MinCurrent, r.MaxCurrent}, {"Power", r.MinPower, r.MaxPower}} {
		for _, v := range []struct {
			name string
			v    *decimal.Decimal
		}{{"min" + p.name, p.min}, {"max" + p.name, p.max}} {
			if v.v != nil {
				if err := validAmount(v.name, *v.v, 3); err != nil {
					return err
				}
			}
		}
		if p.min != nil && p.max != nil && p.min.GreaterThan(*p.max) {
			return invalid("min"+p.name, "%s is above max%s %s", p.min, p.name, p.max)
		}
	}
	for _, d := range []struct {
		name string
		v    *int
	}{{"minDuration", r.MinDuration}, {"maxDuration", r.MaxDuration}} {
		if d.v != nil && (*d.v < 0 || *d.v > maxDuration) {
			return invalid(d.name, "%d must be from 0 to %d seconds", *d.v, maxDuration)
		}
	}
	if r.MinDuration != nil && r.MaxDuration != nil && *r.MinDuration > *r.MaxDuration {
		return invalid("minDuration", "%d is above maxDuration %d", *r.MinDuration, *r.MaxDuration)
	}
	if len(r.DayOfWeek) > 7 {
		return invalid("dayOfWeek", "%d days listed; a week has 7", len(r.DayOfWeek))
	}
	for i, d := range r.DayOfWeek {
		if _, ok := Weekday(d); !ok {
			return invalid(fmt.Sprintf("dayOfWeek[%d]", i), "%q is not a day of the week (MONDAY … SUNDAY)", d)
		}
		for _, prev := range r.DayOfWeek[:i] {
			if prev == d {
				return invalid(fmt.Sprintf("dayOfWeek[%d]", i), "%s appears twice", d)
			}
		}
	}
	return nil
}

// maxDuration bounds min/maxDuration (seconds): about 68 years.
const maxDuration = 1<<31 - 1

func invalid(param, format string, args ...any) *Error {
	return Errorf(ErrInvalid, CodeInvalidBody, param, format, args...)
}

// iso4217 lists the active ISO 4217 currency codes, each followed by its minor units (the
// digits after the decimal point), as published on 2026-01-01. Codes without minor units
// (precious metals, units of account such as XDR, XTS, XXX) are left out: nothing can be
// priced in them.
const iso4217 = `AED2 AFN2 ALL2 AMD2 AOA2 ARS2 AUD2 AWG2 AZN2 BAM2 BBD2 BDT2 BHD3 BIF0 BMD2 BND2 BOB2
BOV2 BRL2 BSD2 BTN2 BWP2 BYN2 BZD2 CAD2 CDF2 CHE2 CHF2 CHW2 CLF4 CLP0 CNY2 COP2 COU2
CRC2 CUP2 CVE2 CZK2 DJF0 DKK2 DOP2 DZD2 EGP2 ERN2 ETB2 EUR2 FJD2 FKP2 GBP2 GEL2 GHS2
GIP2 GMD2 GNF0 GTQ2 GYD2 HKD2 HNL2 HTG2 HUF2 IDR2 ILS2 INR2 IQD3 IRR2 ISK0 JMD2 JOD3
JPY0 KES2 KGS2 KHR2 KMF0 KPW2 KRW0 KWD3 KYD2 KZT2 LAK2 LBP2 LKR2 LRD2 LSL2 LYD3 MAD2
MDL2 MGA2 MKD2 MMK2 MNT2 MOP2 MRU2 MUR2 MVR2 MWK2 MXN2 MXV2 MYR2 MZN2 NAD2 NGN2 NIO2
NOK2 NPR2 NZD2 OMR3 PAB2 PEN2 PGK2 PHP2 PKR2 PLN2 PYG0 QAR2 RON2 RSD2 RUB2 RWF0 SAR2
SBD2 SCR2 SDG2 SEK2 SGD2 SHP2 SLE2 SOS2 SRD2 SSP2 STN2 SVC2 SYP2 SZL2 THB2 TJS2 TMT2
TND3 TOP2 TRY2 TTD2 TWD2 TZS2 UAH2 UGX0 USD2 USN2 UYI0 UYU2 UYW4 UZS2 VED2 VES2 VND0
VUV0 WST2 XAD2 XAF0 XCD2 XCG2 XOF0 XPF0 YER2 ZAR2 ZMW2 ZWG2`

var currencies = sync.OnceValue(func() map[string]int {
	fields := strings.Fields(iso4217)
	m := make(map[string]int, len(fields))
	for _, f := range fields {
		m[f[:3]] = int(f[3] - '0')
	}
	return m
})

// CurrencyMinorUnits returns the minor units of an active ISO 4217 currency (2 for EUR,
// 0 for JPY, 3 for KWD): the decimal places a total is rounded to. ok is false for any
// other code.
func CurrencyMinorUnits(code string) (minor int, ok bool) {
	minor, ok = currencies()[code]
	return minor, ok
}
