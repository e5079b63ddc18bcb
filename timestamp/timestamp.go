// Package timestamp is the form of the times the contract's answers show: RFC 3339 in
// UTC with exactly six fractional digits ("2026-11-01T10:00:00.000000Z"), so that one
// precision is sent everywhere and the strings sort as the times do. The generated
// types use Time for those fields (x-go-type in openapi/openapi.yaml).
package timestamp

import (
	"encoding/json"
	"time"
)

// Layout is the layout of Format: RFC 3339 in UTC with six fractional digits.
const Layout = "2006-01-02T15:04:05.000000Z"

// Time is a time.Time that encodes to JSON as Format does and decodes from any RFC 3339
// time.
type Time struct{ time.Time }

// New returns t as a Time.
func New(t time.Time) Time { return Time{t} }

// Ptr returns t as a *Time, nil when t is nil.
func Ptr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	return &Time{*t}
}

// Format returns t in UTC, truncated to the microsecond, with six fractional digits.
func Format(t time.Time) string { return t.UTC().Format(Layout) }

// MarshalJSON returns t as a JSON string in the form of Format.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(Layout)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, Layout)
	return append(b, '"'), nil
}

// UnmarshalJSON sets t from a JSON string holding an RFC 3339 time, with or without
// fractional digits, in any offset. It returns the error of time.Time.UnmarshalJSON.
func (t *Time) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &t.Time) }
