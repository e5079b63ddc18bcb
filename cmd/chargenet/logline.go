package main

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
)

// quickJSONHandler is slog.JSONHandler with a fast path for the line every request
// writes: a record whose message, keys and string values are plain characters and whose
// values are strings, integers, finite floats or booleans is encoded by hand, byte for
// byte as the JSONHandler encodes it (a test compares the two), without the handler's
// general machinery. Any other record, and every record of a handler derived with
// WithAttrs or WithGroup, is the JSONHandler's.
type quickJSONHandler struct {
	*slog.JSONHandler
	w    io.Writer
	fast bool // false when options change what the JSONHandler writes
}

// newQuickJSONHandler returns the handler writing to w, which must be safe for
// concurrent use (logBuffer is): the fast path writes each line with one Write call.
func newQuickJSONHandler(w io.Writer, opts *slog.HandlerOptions) quickJSONHandler {
	fast := opts == nil || (opts.ReplaceAttr == nil && !opts.AddSource)
	return quickJSONHandler{slog.NewJSONHandler(w, opts), w, fast}
}

var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Handle writes r as one JSON line.
func (h quickJSONHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.fast {
		return h.JSONHandler.Handle(ctx, r)
	}
	buf := lineBuffers.Get().(*[]byte)
	defer lineBuffers.Put(buf)
	line, ok := appendQuickJSON((*buf)[:0], r)
	if !ok {
		return h.JSONHandler.Handle(ctx, r)
	}
	*buf = line
	_, err := h.w.Write(line)
	return err
}

// appendQuickJSON appends r as the JSONHandler would, or reports false when r needs
// what only the JSONHandler does (escaping, other kinds of value, times outside years
// 0–9999).
func appendQuickJSON(b []byte, r slog.Record) ([]byte, bool) {
	if r.Time.IsZero() || r.Time.Year() < 0 || r.Time.Year() >= 10000 || !plain(r.Message) {
		return b, false
	}
	b = append(b, `{"time":"`...)
	b = r.Time.Round(0).AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"`...)
	b = append(b, r.Level.String()...)
	b = append(b, `","msg":"`...)
	b = append(b, r.Message...)
	b = append(b, '"')
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		if !plain(a.Key) || a.Key == "" {
			ok = false
			return false
		}
		b = append(b, `,"`...)
		b = append(b, a.Key...)
		b = append(b, `":`...)
		switch v := a.Value; v.Kind() {
		case slog.KindString:
			s := v.String()
			if !plain(s) {
				ok = false
				return false
			}
			b = append(b, '"')
			b = append(b, s...)
			b = append(b, '"')
		case slog.KindInt64:
			b = strconv.AppendInt(b, v.Int64(), 10)
		case slog.KindUint64:
			b = strconv.AppendUint(b, v.Uint64(), 10)
		case slog.KindBool:
			b = strconv.AppendBool(b, v.Bool())
		case slog.KindFloat64:
			if b, ok = appendJSONFloat(b, v.Float64()); !ok {
				return false
			}
		default:
			ok = false
			return false
		}
		return true
	})
	return append(b, "}\n"...), ok
}

// plain reports whether s needs no escaping in any JSON encoder: printable ASCII other
// than the quote, the backslash and the characters HTML-safe encoders escape.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return false
		}
	}
	return true
}

var plainByte = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONFloat appends f as encoding/json encodes a float64 (which the JSONHandler
// calls for floats); false for NaN and infinities, which JSON cannot hold.
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 → e-9, as encoding/json writes it
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
