package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPairedRatios checks that each round's ratio divides the figures of that round, in
// round order, and that a round missing either side gives none.
func TestPairedRatios(t *testing.T) {
	samples := []sample{
		{endpoint: "evse", target: "pg_w", round: 2, rps: 900},
		{endpoint: "evse", target: "pg_w_ro", round: 1, rps: 1000},
		{endpoint: "evse", target: "pg_w", round: 1, rps: 800},
		{endpoint: "evse", target: "pg_w_ro", round: 2, rps: 1000},
		{endpoint: "evse", target: "pg_w", round: 3, rps: 700}, // no read-only partner
		{endpoint: "locations", target: "pg_w_ro", round: 3, rps: 50},
		{endpoint: "evse", target: "full_w_ro", round: 3, rps: 2000},
	}
	assert.Equal(t, []float64{0.8, 0.9}, pairedRatios(samples, "evse", "pg_w", "pg_w_ro"))
	assert.Empty(t, pairedRatios(samples, "locations", "pg_w", "pg_w_ro"))
	assert.InDelta(t, 0.85, statOf(pairedRatios(samples, "evse", "pg_w", "pg_w_ro")).med, 1e-9)
}

// TestDepthTable checks that a depth's latency against the first page's is the median of
// the ratios within each round, not the ratio of the medians over rounds.
func TestDepthTable(t *testing.T) {
	// The machine slows down over the run; every round, the deep page costs 1.1 to 1.2
	// times the first one measured beside it.
	samples := []sample{
		{endpoint: "0", target: "pg", round: 1, p50: 1.0},
		{endpoint: "999975", target: "pg", round: 1, p50: 1.1},
		{endpoint: "999975", target: "pg", round: 2, p50: 2.4},
		{endpoint: "0", target: "pg", round: 2, p50: 2.0},
		{endpoint: "0", target: "pg", round: 3, p50: 3.0},
		{endpoint: "999975", target: "pg", round: 3, p50: 3.45},
		{endpoint: "999975", target: "full", round: 3, p50: 9},
	}
	var b strings.Builder
	depthTable(&b, samples, "pg", "71")
	out := b.String()
	assert.Contains(t, out, "| 0 | – | 2.000 | 0.000 | 1.00 (1.00–1.00) |")
	assert.Contains(t, out, "| 999975 | – | 2.400 | 0.000 | 1.15 (1.10–1.20) |")
	assert.Contains(t, out, "median of the rounds' ratios: 1.15 (goal ≤ 1.2); the ratio of the medians: 1.20.")
	assert.Contains(t, out, "Peak RSS of the server: 71 MB")
}

// TestDepthTableBeside checks that a depth measured beside its own first page is held
// to that one: within a round the machine slows down from one pair to the next.
func TestDepthTableBeside(t *testing.T) {
	samples := []sample{
		{endpoint: "0/10000", target: "pg", round: 1, p50: 1.0},
		{endpoint: "10000", target: "pg", round: 1, p50: 1.1},
		{endpoint: "0/999975", target: "pg", round: 1, p50: 2.0},
		{endpoint: "999975", target: "pg", round: 1, p50: 2.1},
		{endpoint: "999975", target: "pg", round: 2, p50: 2.2},
		{endpoint: "0/999975", target: "pg", round: 2, p50: 2.0},
		{endpoint: "10000", target: "pg", round: 2, p50: 1.2},
		{endpoint: "0/10000", target: "pg", round: 2, p50: 1.0},
		{endpoint: "0/10000", target: "full", round: 2, p50: 9},
	}
	var b strings.Builder
	depthTable(&b, samples, "pg", "")
	out := b.String()
	assert.Contains(t, out, "| 0 | – | 1.500 | 0.000 | 1.00 (1.00–1.00) |\n| 10000 | – | 1.150 | 0.000 | 1.15 (1.10–1.20) |\n"+
		"| 999975 | – | 2.150 | 0.000 | 1.08 (1.05–1.10) |")
	assert.Contains(t, out, "median of the rounds' ratios: 1.08 (goal ≤ 1.2); the ratio of the medians: 1.43.")
}

// TestMixedTableBesideGETs checks that the reads beside the writer's GETs get their own
// rows, held to no goal, while the reads beside its writes are held to 85 %.
func TestMixedTableBesideGETs(t *testing.T) {
	dir := t.TempDir()
	raw, writes := filepath.Join(dir, "raw.tsv"), filepath.Join(dir, "writes.tsv")
	var r, wr strings.Builder
	for round := 1; round <= 3; round++ {
		for _, ep := range []string{"evse", "locations"} {
			fmt.Fprintf(&r, "%s\tfull_w_ro\t%d\t1000\t1\t2\t0\t0\t0\n", ep, round)
			fmt.Fprintf(&r, "%s\tfull_w\t%d\t800\t1\t2\t0\t0\t0\n", ep, round)
			fmt.Fprintf(&r, "%s\tfull_r_ro\t%d\t1000\t1\t2\t0\t0\t0\n", ep, round)
			fmt.Fprintf(&r, "%s\tfull_r\t%d\t900\t1\t2\t0\t0\t0\n", ep, round)
			fmt.Fprintf(&wr, "%s\tfull_w\t%d\t5000\t998\t0\t0\t5\t20\n", ep, round)
			fmt.Fprintf(&wr, "%s\tfull_r\t%d\t5000\t999\t0\t0\t1\t3\n", ep, round)
		}
	}
	require.NoError(t, os.WriteFile(raw, []byte(r.String()), 0o600))
	require.NoError(t, os.WriteFile(writes, []byte(wr.String()), 0o600))
	var out strings.Builder
	require.NoError(t, scaleOutReport(&out, raw, writes, "32", "1000"))
	assert.Contains(t, out.String(), "| SQLite, read cache on | GET EVSE | 1000 (1000–1000) | 800 (800–800) | 80 %, 80 %, 80 % | 80 % | ≥ 85 % (missed) | 80 % | 998 | 20.00 | 0 |")
	assert.Contains(t, out.String(), "| SQLite, read cache on, beside GETs | GET EVSE | 1000 (1000–1000) | 900 (900–900) | 90 %, 90 %, 90 % | 90 % | – | 90 % | 999 | 3.00 | 0 |")
	assert.Contains(t, out.String(), "| SQLite, read cache on, beside GETs | GET locations, first page |")
}

// TestOCPIDepthTable checks that the OCPI goal is held at depth 100,000, not at the
// deepest page, by the median of the rounds' ratios, and says so when the list was too
// short to reach it.
func TestOCPIDepthTable(t *testing.T) {
	tests := []struct {
		name   string
		deep   float64 // p50 of depth 100000 in rounds 1 and 2, beside a first page of 10 ms
		want   []string
		absent []string
	}{
		{
			name: "met",
			deep: 14,
			want: []string{
				"| 100000 | – | 14.000 | 0.000 | 1.40 (1.40–1.40) |",
				"Page at 100000 by `Link` / first page, `X-Total-Count` included, p50 latency, the median of the rounds' " +
					"ratios: 1.40 (1.40–1.40); the ratio of the medians: 1.40 (goal ≤ 1.5: met).",
				" Deepest (999900) / first page, the median of the rounds' ratios: 2.00 (2.00–2.00)",
			},
		},
		{
			name: "missed",
			deep: 16,
			want: []string{"ratios: 1.60 (1.60–1.60); the ratio of the medians: 1.60 (goal ≤ 1.5: missed)."},
		},
		{
			name:   "too short",
			want:   []string{"Page at 100000 by `Link` / first page, p50 latency (goal ≤ 1.5): not measured, the list is shorter."},
			absent: []string{"| 100000 |"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var samples []sample
			for round := 1; round <= 2; round++ {
				samples = append(samples,
					sample{endpoint: "0/999900", target: "pg-ocpi", round: round, p50: 10},
					sample{endpoint: "999900", target: "pg-ocpi", round: round, p50: 20},
					sample{endpoint: "999900", target: "pg", round: round, p50: 1}) // another table
				if tt.deep > 0 {
					samples = append(samples,
						sample{endpoint: "0/100000", target: "pg-ocpi", round: round, p50: 10},
						sample{endpoint: "100000", target: "pg-ocpi", round: round, p50: tt.deep})
				}
			}
			var b strings.Builder
			ocpiDepthTable(&b, samples, "pg-ocpi")
			for _, w := range tt.want {
				assert.Contains(t, b.String(), w)
			}
			for _, a := range tt.absent {
				assert.NotContains(t, b.String(), a)
			}
		})
	}
}
