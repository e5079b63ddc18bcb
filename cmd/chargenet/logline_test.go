package main

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQuickJSONHandlerMatchesJSONHandler logs the same records through quickJSONHandler
// and slog.JSONHandler: the bytes must be equal, whether the fast path took the record
// or handed it on.
func TestQuickJSONHandlerMatchesJSONHandler(t *testing.T) {
	at := time.Date(2026, 11, 23, 11, 30, 0, 123456789, time.UTC)
	request := []slog.Attr{
		slog.String("request_id", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"), slog.String("method", "GET"),
		slog.String("path", "/v2/evses/1002"), slog.Int("status", 200), slog.Int64("bytes", 912),
		slog.Float64("latency_ms", 0.137),
	}
	cases := []struct {
		name  string
		time  time.Time
		level slog.Level
		msg   string
		attrs []slog.Attr
		fast  bool // the fast path encodes it
	}{
		{"request line", at, slog.LevelInfo, "request", request, true},
		{"local time zone", at.In(time.FixedZone("CET", 3600)), slog.LevelInfo, "request", request, true},
		{"whole second", at.Truncate(time.Second), slog.LevelInfo, "request", request, true},
		{"monotonic clock reading", time.Now(), slog.LevelInfo, "request", request, true},
		{"no attributes", at, slog.LevelWarn, "unavailable", nil, true},
		{"level above error", at, slog.LevelError + 2, "x", nil, true},
		{"every simple kind", at, slog.LevelInfo, "kinds", []slog.Attr{slog.Int("neg", -42), slog.Uint64("u", math.MaxUint64),
			slog.Bool("t", true), slog.Bool("f", false), slog.String("empty", "")}, true},
		{"floats", at, slog.LevelInfo, "floats", []slog.Attr{slog.Float64("zero", 0), slog.Float64("small", 1e-7),
			slog.Float64("tiny", 1.5e-300), slog.Float64("big", 1e21), slog.Float64("neg", -2.5), slog.Float64("ms", 1234.567),
			slog.Float64("edge", 1e-6), slog.Float64("large", 123456789012345678)}, true},
		{"quote in a value", at, slog.LevelInfo, "request", []slog.Attr{slog.String("path", `/v1/"x"`)}, false},
		{"HTML characters", at, slog.LevelInfo, "request", []slog.Attr{slog.String("path", "/a?b=<c>&d")}, false},
		{"non-ASCII", at, slog.LevelInfo, "grüße", nil, false},
		{"control character", at, slog.LevelInfo, "request", []slog.Attr{slog.String("path", "/a\nb")}, false},
		{"NaN", at, slog.LevelInfo, "request", []slog.Attr{slog.Float64("x", math.NaN())}, false},
		{"infinity", at, slog.LevelInfo, "request", []slog.Attr{slog.Float64("x", math.Inf(1))}, false},
		{"duration", at, slog.LevelInfo, "request", []slog.Attr{slog.Duration("d", time.Second)}, false},
		{"group", at, slog.LevelInfo, "request", []slog.Attr{slog.Group("g", slog.Int("a", 1))}, false},
		{"any value", at, slog.LevelInfo, "request", []slog.Attr{slog.Any("m", map[string]int{"a": 1})}, false},
		{"empty key", at, slog.LevelInfo, "request", []slog.Attr{slog.Int("", 1)}, false},
		{"zero time", time.Time{}, slog.LevelInfo, "request", request, false},
		{"year 10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), slog.LevelInfo, "request", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := slog.NewRecord(c.time, c.level, c.msg, 0)
			r.AddAttrs(c.attrs...)
			var want, got bytes.Buffer
			require.NoError(t, slog.NewJSONHandler(&want, nil).Handle(context.Background(), r))
			require.NoError(t, newQuickJSONHandler(&got, nil).Handle(context.Background(), r))
			assert.Equal(t, want.String(), got.String())
			_, fast := appendQuickJSON(nil, r)
			assert.Equal(t, c.fast, fast, "whether the fast path takes the record")
		})
	}
}

// TestQuickJSONHandlerOptions checks that levels filter, derived handlers keep what they
// were given, and options that change the output turn the fast path off.
func TestQuickJSONHandlerOptions(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(newQuickJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	log.Info("hidden")
	assert.Empty(t, out.String(), "below the level nothing is written")
	log.With("app", "chargenet").Warn("shown")
	assert.Contains(t, out.String(), `"msg":"shown","app":"chargenet"`, "a derived logger keeps its attributes")

	out.Reset()
	replace := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == "status" {
			a.Value = slog.StringValue("replaced")
		}
		return a
	}
	slog.New(newQuickJSONHandler(&out, &slog.HandlerOptions{ReplaceAttr: replace})).Info("request", "status", 200)
	assert.Contains(t, out.String(), `"status":"replaced"`, "ReplaceAttr is honoured")
}

func BenchmarkRequestLogLine(b *testing.B) {
	attrs := []slog.Attr{
		slog.String("request_id", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"), slog.String("method", "GET"),
		slog.String("path", "/v2/evses/1002"), slog.Int("status", 200), slog.Int64("bytes", 912),
		slog.Float64("latency_ms", 0.137),
	}
	for _, h := range []struct {
		name    string
		handler slog.Handler
	}{
		{"slog.JSONHandler", slog.NewJSONHandler(discard{}, nil)},
		{"quickJSONHandler", newQuickJSONHandler(discard{}, nil)},
	} {
		b.Run(h.name, func(b *testing.B) {
			log := slog.New(h.handler)
			b.ReportAllocs()
			for b.Loop() {
				log.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
