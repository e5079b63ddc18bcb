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

// ocpiWriteSamples returns two rounds of the rows of bench/ocpi.sh (and bench/run.sh) under
// writes on target: the REST page at 1000 req/s under writes and the OCPI page with EVSEs
// at evses[round-1], each beside reads alone at 1250 req/s, and the writer's figures.
func ocpiWriteSamples(target string, evses [2]float64) ([]sample, []writeSample) {
	var samples []sample
	var ws []writeSample
	for round := 1; round <= 2; round++ {
		samples = append(samples,
			sample{endpoint: "locations", target: target + "_ro", round: round, rps: 1250, p50: 1, p99: 4},
			sample{endpoint: "locations", target: target, round: round, rps: 1000, p50: 1.5, p99: 8},
			sample{endpoint: "ocpi_evses", target: target + "_ro", round: round, rps: 1250, p50: 2, p99: 5},
			sample{endpoint: "ocpi_evses", target: target, round: round, rps: evses[round-1], p50: 3, p99: 12})
		ws = append(ws,
			writeSample{endpoint: "locations", target: target, rate: 990, p99: 30, bad: 1},
			writeSample{endpoint: "ocpi_evses", target: target, rate: 980, p99: 40, failed: 2})
	}
	return samples, ws
}

// TestOCPIUnderWrites checks the OCPI rows under writes: each against its own reads alone
// round by round, the writer's figures beside it, and the OCPI page's goal held against the
// REST page under the same writes, by the median of the rounds' ratios, on SQLite only.
func TestOCPIUnderWrites(t *testing.T) {
	quiet := []sample{
		{endpoint: "locations", target: "full", round: 1, rps: 2000},
		{endpoint: "ocpi_evses", target: "full", round: 1, rps: 1800},
		{endpoint: "ocpi_page", target: "full", round: 1, rps: 1900},
	}
	tests := []struct {
		name   string
		sqlite [2]float64 // OCPI page with EVSEs under writes, rounds 1 and 2; none when zero
		pg     [2]float64
		want   []string
		absent []string
	}{
		{
			name:   "SQLite met",
			sqlite: [2]float64{900, 800},
			want: []string{
				"Under writes: the REST page and the OCPI page of 100 with EVSEs again, while `bench/tool writer` sends 1000 writes/s",
				"| SQLite | REST `GET /v1/locations?limit=25` | 1250 (1250–1250) | 1000 (1000–1000) | 1.50 / 8.00 | 80 %, 80 % | 80 % | 990 | 30.00 | 2 |",
				"| SQLite | OCPI page of 100 with EVSEs | 1250 (1250–1250) | 850 (800–900) | 3.00 / 12.00 | 72 %, 64 % | 68 % | 980 | 40.00 | 4 |",
				"| OCPI page of 100 with EVSEs under 1000 writes/s ≥ 80 % of the REST locations page under them, SQLite | 85 % (80–90 %) | met |",
				"| OCPI page of 100 with EVSEs ≥ 80 % of the REST locations page rate, SQLite | 90 % (90–90 %) | met |",
			},
			absent: []string{"| PostgreSQL |", "for comparison"},
		},
		{
			name:   "SQLite missed",
			sqlite: [2]float64{800, 700},
			want: []string{
				"| OCPI page of 100 with EVSEs under 1000 writes/s ≥ 80 % of the REST locations page under them, SQLite | 75 % (70–80 %) | missed |",
			},
		},
		{
			name:   "SQLite and PostgreSQL",
			sqlite: [2]float64{900, 800},
			pg:     [2]float64{600, 600},
			want: []string{
				"| SQLite | OCPI page of 100 with EVSEs | 1250 (1250–1250) | 850 (800–900) |",
				"| PostgreSQL | REST `GET /v1/locations?limit=25` | 1250 (1250–1250) | 1000 (1000–1000) | 1.50 / 8.00 | 80 %, 80 % | 80 % | 990 | 30.00 | 2 |",
				"| PostgreSQL | OCPI page of 100 with EVSEs | 1250 (1250–1250) | 600 (600–600) | 3.00 / 12.00 | 48 %, 48 % | 48 % | 980 | 40.00 | 4 |",
				"| OCPI page of 100 with EVSEs under 1000 writes/s ≥ 80 % of the REST locations page under them, SQLite | 85 % (80–90 %) | met |",
				"| for comparison, no goal: OCPI page of 100 with EVSEs / REST locations page, both under 1000 writes/s, PostgreSQL | 60 % (60–60 %) | – |",
			},
		},
		{
			name:   "quiet only",
			want:   []string{"| OCPI page of 100 with EVSEs ≥ 80 % of the REST locations page rate, SQLite | 90 % (90–90 %) | met |"},
			absent: []string{"Under writes", "under them", "| SQLite | REST"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := append([]sample(nil), quiet...)
			var ws []writeSample
			for _, st := range []struct {
				target string
				evses  [2]float64
			}{{"full_w", tt.sqlite}, {"pg_w", tt.pg}} {
				if st.evses[0] > 0 {
					s, w := ocpiWriteSamples(st.target, st.evses)
					samples, ws = append(samples, s...), append(ws, w...)
				}
			}
			var b strings.Builder
			ocpiReport(&b, samples, ws, "2000", "1000")
			for _, w := range tt.want {
				assert.Contains(t, b.String(), w)
			}
			for _, a := range tt.absent {
				assert.NotContains(t, b.String(), a)
			}
		})
	}
}

// TestOCPIOnlyReportWrites checks that tool ocpi-report reads the writer's figures from
// their file when given one, and prints no rows under writes when given none.
func TestOCPIOnlyReportWrites(t *testing.T) {
	dir := t.TempDir()
	raw, writes := filepath.Join(dir, "raw.tsv"), filepath.Join(dir, "writes.tsv")
	var r, wr strings.Builder
	for round := 1; round <= 2; round++ {
		for _, ep := range []string{"locations", "ocpi_evses"} {
			fmt.Fprintf(&r, "%s\tfull\t%d\t2000\t1\t2\t0\t0\t0\n", ep, round)
			fmt.Fprintf(&r, "%s\tfull_w_ro\t%d\t1000\t1\t2\t0\t0\t0\n", ep, round)
			fmt.Fprintf(&r, "%s\tfull_w\t%d\t800\t1.25\t6.5\t0\t0\t0\n", ep, round)
			fmt.Fprintf(&wr, "%s\tfull_w\t%d\t2000\t%d\t0\t0\t5\t20\n", ep, round, 996+round)
		}
	}
	require.NoError(t, os.WriteFile(raw, []byte(r.String()), 0o600))
	require.NoError(t, os.WriteFile(writes, []byte(wr.String()), 0o600))
	tests := []struct {
		name, writes string
		want, absent []string
	}{
		{
			name:   "with the writer's figures",
			writes: writes,
			want: []string{
				"| SQLite | OCPI page of 100 with EVSEs | 1000 (1000–1000) | 800 (800–800) | 1.25 / 6.50 | 80 %, 80 % | 80 % | 998 | 20.00 | 0 |",
				"under 500 writes/s ≥ 80 % of the REST locations page under them, SQLite | 100 % (100–100 %) | met |",
			},
		},
		{
			name:   "without",
			want:   []string{"| SQLite | OCPI page of 100 with EVSEs | 1000 (1000–1000) | 800 (800–800) | 1.25 / 6.50 | 80 %, 80 % | 80 % | 0 | 0.00 | 0 |"},
			absent: []string{"| 998 |"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			require.NoError(t, ocpiOnlyReport(&out, raw, "32", "1s", "2", "2000", tt.writes, "500"))
			assert.Contains(t, out.String(), "# OCPI results (`make bench-ocpi`)")
			for _, w := range tt.want {
				assert.Contains(t, out.String(), w)
			}
			for _, a := range tt.absent {
				assert.NotContains(t, out.String(), a)
			}
		})
	}
	var out strings.Builder
	assert.Error(t, ocpiOnlyReport(&out, raw, "32", "1s", "2", "2000", filepath.Join(dir, "missing.tsv"), "500"))
}

// TestMixedTableOCPI checks that the mixed workload shows the OCPI page under writes on the
// stores that measured it, held to no goal there, beside the REST rows held to 85 %.
func TestMixedTableOCPI(t *testing.T) {
	dir := t.TempDir()
	raw, writes := filepath.Join(dir, "raw.tsv"), filepath.Join(dir, "writes.tsv")
	var r, wr strings.Builder
	for round := 1; round <= 3; round++ {
		for _, row := range []struct {
			endpoint, target string
			rw               int
		}{
			{"evse", "full_w", 900}, {"locations", "full_w", 900}, {"ocpi_evses", "full_w", 500},
			{"evse", "uncached_w", 900}, {"locations", "uncached_w", 900},
			{"evse", "pg_w", 900}, {"locations", "pg_w", 900}, {"ocpi_evses", "pg_w", 600},
		} {
			fmt.Fprintf(&r, "%s\t%s_ro\t%d\t1000\t1\t2\t0\t0\t0\n", row.endpoint, row.target, round)
			fmt.Fprintf(&r, "%s\t%s\t%d\t%d\t1\t2\t0\t0\t0\n", row.endpoint, row.target, round, row.rw)
			fmt.Fprintf(&wr, "%s\t%s\t%d\t5000\t997\t0\t0\t5\t20\n", row.endpoint, row.target, round)
		}
	}
	require.NoError(t, os.WriteFile(raw, []byte(r.String()), 0o600))
	require.NoError(t, os.WriteFile(writes, []byte(wr.String()), 0o600))
	var out strings.Builder
	require.NoError(t, scaleOutReport(&out, raw, writes, "32", "1000"))
	tests := []struct {
		name, row string
		present   bool
	}{
		{"REST page held to 85 %", "| SQLite, read cache on | GET locations, first page | 1000 (1000–1000) | 900 (900–900) | 90 %, 90 %, 90 % | 90 % | ≥ 85 % (met) |", true},
		{"OCPI page, SQLite, no goal", "| SQLite, read cache on | OCPI page of 100 with EVSEs | 1000 (1000–1000) | 500 (500–500) | 50 %, 50 %, 50 % | 50 % | – | 50 % | 997 | 20.00 | 0 |", true},
		{"OCPI page, PostgreSQL, no goal", "| PostgreSQL | OCPI page of 100 with EVSEs | 1000 (1000–1000) | 600 (600–600) | 60 %, 60 %, 60 % | 60 % | – |", true},
		{"no OCPI row where it was not measured", "| SQLite, read cache off | OCPI page of 100 with EVSEs |", false},
		{"no row of reads beside GETs not measured", "beside GETs | GET EVSE |", false},
		{"the OCPI row explained", "*OCPI page of 100 with EVSEs*: the OCPI page of the OCPI section", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.present {
				assert.Contains(t, out.String(), tt.row)
			} else {
				assert.NotContains(t, out.String(), tt.row)
			}
		})
	}
}
