package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sample is one wrk run: endpoint, target, round, req/s, p50 and p99 latency in ms,
// and when measured the CPU time per request of the server and of PostgreSQL in µs.
type sample struct {
	endpoint, target string
	round            int
	rps, p50, p99    float64
	cpuServer, cpuPG float64
}

func readRaw(path string) ([]sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []sample
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		if len(c) < 6 {
			return nil, fmt.Errorf("%s: malformed line %q", path, sc.Text())
		}
		s := sample{endpoint: c[0], target: c[1]}
		if s.round, err = strconv.Atoi(c[2]); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
		}
		for i, p := range []*float64{&s.rps, &s.p50, &s.p99} {
			if *p, err = strconv.ParseFloat(c[3+i], 64); err != nil {
				return nil, fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
			}
		}
		if len(c) >= 9 {
			for i, p := range []*float64{&s.cpuServer, &s.cpuPG} {
				if *p, err = strconv.ParseFloat(c[7+i], 64); err != nil {
					return nil, fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
				}
			}
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// stat is the median of some values with their minimum and maximum.
type stat struct{ med, min, max float64 }

func statOf(v []float64) stat {
	if len(v) == 0 {
		return stat{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{med, s[0], s[len(s)-1]}
}

func (s stat) rps() string {
	if s.med == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f (%.0f–%.0f)", s.med, s.min, s.max)
}

func (s stat) ms() string {
	if s.med == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", s.med)
}

// collect returns the medians of field over the samples of endpoint and target.
func collect(samples []sample, endpoint, target string, field func(sample) float64) stat {
	return collectIf(samples, is(endpoint, target), field)
}

// collectIf is collect over the samples match matches.
func collectIf(samples []sample, match func(sample) bool, field func(sample) float64) stat {
	var v []float64
	for _, s := range samples {
		if match(s) {
			v = append(v, field(s))
		}
	}
	return statOf(v)
}

// pairedRatios returns the ratios of the req/s of target a to target b of endpoint, one
// for each round that measured both, in round order.
func pairedRatios(samples []sample, endpoint, a, b string) []float64 {
	return roundRatios(samples, is(endpoint, a), is(endpoint, b), func(s sample) float64 { return s.rps })
}

// isFirst matches the first-page samples of a depth table of target (depth "0", or
// "0/D": measured beside depth D).
func isFirst(target string) func(sample) bool {
	return func(s sample) bool {
		return s.target == target && (s.endpoint == "0" || strings.HasPrefix(s.endpoint, "0/"))
	}
}

// is matches the samples of endpoint and target.
func is(endpoint, target string) func(sample) bool {
	return func(s sample) bool { return s.endpoint == endpoint && s.target == target }
}

// roundRatios returns field of the sample num matches over field of the sample den
// matches, one ratio for each round that has both, in round order: figures measured
// next to each other in one round, so that the machine's drift over a run cancels.
func roundRatios(samples []sample, num, den func(sample) bool, field func(sample) float64) []float64 {
	n, d := map[int]float64{}, map[int]float64{}
	for _, s := range samples {
		switch {
		case num(s):
			n[s.round] = field(s)
		case den(s):
			d[s.round] = field(s)
		}
	}
	var rounds []int
	for r := range n {
		if d[r] > 0 {
			rounds = append(rounds, r)
		}
	}
	slices.Sort(rounds)
	out := make([]float64, len(rounds))
	for i, r := range rounds {
		out[i] = n[r] / d[r]
	}
	return out
}

func machine(w io.Writer) {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	goVersion := runtime.Version()
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		goVersion = strings.TrimSpace(string(out))
	}
	fmt.Fprintf(w, "Measured %s on %s, %d cores, %s, %s/%s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"),
		cpu, runtime.NumCPU(), goVersion, runtime.GOOS, runtime.GOARCH)
}

type target struct {
	label, endpoint string
	prism           bool
	goal            float64 // share of the ceiling the full stack must reach
}

// report prints bench/run.sh's results tables from its wrk runs in raw and, when writes
// is not empty, the writer's figures of its mixed workload (at writeRate writes/s) in
// writes.
func report(w io.Writer, raw, rss, conns, duration, rounds, deep, writes, writeRate string) error {
	samples, err := readRaw(raw)
	if err != nil {
		return err
	}
	var ws []writeSample
	if writes != "" {
		if ws, err = readWrites(writes); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "# Benchmark results (`make bench`)\n\n")
	machine(w)
	fmt.Fprintf(w, "wrk on loopback, 2 threads, %s connections, %s rounds of %s per endpoint and target, interleaved; "+
		"medians with the range over the rounds. *Ceiling*: a bare Echo handler answering the same bytes "+
		"(`bench/ceiling`). *Full*: `chargenet serve` on SQLite with authentication, request validation, the store and "+
		"request logging. *Prism*: `prism mock` on the same contract. The deep page starts at position %s "+
		"of %s+120 locations.\n\n", conns, rounds, duration, deep, deep)
	fmt.Fprintln(w, "| endpoint | full req/s | ceiling req/s | Prism req/s | full p50 / p99 ms | ceiling p50 / p99 ms | full / ceiling | goal | full / Prism |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	targets := []target{
		{"GET event types", "event_types", true, 0.70},
		{"GET locations, first page", "locations", true, 0.55},
		{"GET locations, deep page", "locations_deep", true, 0.55},
		{"GET EVSE", "evse", true, 0.55},
		{"PATCH connector", "patch", false, 0.40},
	}
	rpsOf := func(s sample) float64 { return s.rps }
	p50Of := func(s sample) float64 { return s.p50 }
	p99Of := func(s sample) float64 { return s.p99 }
	for _, t := range targets {
		full := collect(samples, t.endpoint, "full", rpsOf)
		ceil := collect(samples, t.endpoint, "ceiling", rpsOf)
		prism := collect(samples, t.endpoint, "prism", rpsOf)
		vsPrism := "–"
		if t.prism && prism.med > 0 {
			vsPrism = fmt.Sprintf("%.1f×", full.med/prism.med)
		}
		ratio := full.med / ceil.med
		mark := "met"
		if ratio < t.goal {
			mark = "missed"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s / %s | %s / %s | %.0f %% | ≥ %.0f %% (%s) | %s |\n", t.label,
			full.rps(), ceil.rps(), prism.rps(),
			collect(samples, t.endpoint, "full", p50Of).ms(), collect(samples, t.endpoint, "full", p99Of).ms(),
			collect(samples, t.endpoint, "ceiling", p50Of).ms(), collect(samples, t.endpoint, "ceiling", p99Of).ms(),
			100*ratio, 100*t.goal, mark, vsPrism)
	}
	deepP50 := collect(samples, "locations_deep", "full", p50Of).med
	firstP50 := collect(samples, "locations", "full", p50Of).med
	fmt.Fprintf(w, "\nDeep page / first page, full stack, p50 latency: %.2f (goal ≤ 1.2). "+
		"PATCH p99 at %s connections: %.2f ms (goal < 10 ms). Peak RSS of the server: %s MB (goal < 150 MB).\n",
		deepP50/firstP50, conns, collect(samples, "patch", "full", p99Of).med, rss)

	fmt.Fprintf(w, "\nThe same reads from a second `chargenet serve` on the same database with its read cache off "+
		"(`--read-cache-mb 0`): every request reads SQLite.\n\n")
	fmt.Fprintln(w, "| endpoint | uncached req/s | uncached p50 / p99 ms | uncached / ceiling | uncached / Prism |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, t := range targets {
		if !t.prism || t.endpoint == "event_types" {
			continue
		}
		un := collect(samples, t.endpoint, "uncached", rpsOf)
		fmt.Fprintf(w, "| %s | %s | %s / %s | %.0f %% | %.1f× |\n", t.label, un.rps(),
			collect(samples, t.endpoint, "uncached", p50Of).ms(), collect(samples, t.endpoint, "uncached", p99Of).ms(),
			100*un.med/collect(samples, t.endpoint, "ceiling", rpsOf).med, un.med/collect(samples, t.endpoint, "prism", rpsOf).med)
	}
	fmt.Fprintf(w, "\nDeep page / first page, uncached, p50 latency: %.2f.\n",
		collect(samples, "locations_deep", "uncached", p50Of).med/collect(samples, "locations", "uncached", p50Of).med)

	ocpiReport(w, samples, ws, deep, writeRate)

	fmt.Fprintf(w, "\nMetrics on and off: a third `chargenet serve` on the same database with `--admin-addr` "+
		"(Prometheus metrics recorded for every request, /metrics scraped every second), run back to back with the "+
		"full stack (metrics off, the default) in each round, in alternating order. Limit: reads with metrics on "+
		"within 5 %% of metrics off.\n\n")
	fmt.Fprintln(w, "| endpoint | metrics off req/s | metrics on req/s | on / off | off p50 / p99 ms | on p50 / p99 ms | limit |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, t := range targets {
		off := collect(samples, t.endpoint, "full", rpsOf)
		on := collect(samples, t.endpoint, "metrics", rpsOf)
		limit := "–"
		if t.endpoint != "patch" {
			limit = "≥ 95 % (met)"
			if on.med < 0.95*off.med {
				limit = "≥ 95 % (missed)"
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.1f %% | %s / %s | %s / %s | %s |\n", t.label, off.rps(), on.rps(), 100*on.med/off.med,
			collect(samples, t.endpoint, "full", p50Of).ms(), collect(samples, t.endpoint, "full", p99Of).ms(),
			collect(samples, t.endpoint, "metrics", p50Of).ms(), collect(samples, t.endpoint, "metrics", p99Of).ms(), limit)
	}
	return nil
}

func scaleReport(w io.Writer, raw, rss, importTime, dbSize, n string) error {
	samples, err := readRaw(raw)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# Scale results (`make bench-scale`)\n\n")
	machine(w)
	fmt.Fprintf(w, "%s generated locations (seed 42) imported with `chargenet import` into an empty SQLite database in %s "+
		"(decode, schema and rule checks, one transaction); database size %s. Then `chargenet serve` on it with its "+
		"read cache off (`--read-cache-mb 0`, so that every request is a keyset read of the database): a 25-item "+
		"page of `GET /v1/locations` at each depth, with wrk (8 connections), medians over the rounds. Each round measures "+
		"every depth right beside the first page (the first page first in odd rounds, second in even ones), the depths in "+
		"the opposite order in every other round; a depth against the first page is the median over the rounds of its "+
		"ratio to the first page measured beside it (lowest–highest in brackets).\n\n", n, importTime, dbSize)
	depthTable(w, samples, "full", rss)
	changeTable(w, samples, "full-changes")
	ocpiDepthTable(w, samples, "full-ocpi")
	return nil
}

// changeTable prints, when bench/scale.sh measured them, the pages of the location
// change list (updated_since before every item) at each depth.
func changeTable(w io.Writer, samples []sample, target string) {
	if !slices.ContainsFunc(samples, func(s sample) bool { return s.target == target }) {
		return
	}
	fmt.Fprintf(w, "\nThe change list, `GET /v1/locations?updated_since=%s&limit=25`: every location (all changed "+
		"after that time), in change order; the pages after the first reached through the service's own cursors, found by "+
		"walking the list once.\n\n", changeSince)
	depthTable(w, samples, target, "")
}

// changeSince is the updated_since of the change-list rows of bench/scale.sh: before every
// generated location's lastUpdated.
const changeSince = "2025-01-01T00:00:00Z"

// scaleReportPG prints the PostgreSQL part of bench/scale.sh's results.
func scaleReportPG(w io.Writer, raw, rss, importTime, dbSize, n, vacuum string) error {
	samples, err := readRaw(raw)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n## PostgreSQL\n\nThe same %s locations imported into an empty PostgreSQL database (a throw-away cluster on "+
		"the same machine, `scripts/pg-test-cluster.sh`) in %s (COPY, one transaction, each location's JSON stored beside it); "+
		"database size %s. Then `VACUUM (ANALYZE)`, in %s: what autovacuum starts by itself within a minute of such an "+
		"import and would otherwise run beside the first rounds. Then `chargenet serve` on it, the same pages, "+
		"interleaved with the SQLite rounds.\n\n", n, importTime, dbSize, vacuum)
	depthTable(w, samples, "pg", rss)
	changeTable(w, samples, "pg-changes")
	ocpiDepthTable(w, samples, "pg-ocpi")
	return nil
}

// depthTable prints the page latency at each depth of target (see depthRows) and the
// deepest page's against the first page's, held to 1.2.
func depthTable(w io.Writer, samples []sample, target, rss string) {
	depths, ratios := depthRows(w, samples, target)
	if len(depths) == 0 {
		return
	}
	p50Of := func(s sample) float64 { return s.p50 }
	deepest := depths[len(depths)-1]
	first := collectIf(samples, isFirst(target), p50Of).med
	last := collect(samples, deepest, target, p50Of).med
	fmt.Fprintf(w, "\nDeepest / first page, p50 latency, the median of the rounds' ratios: %.2f (goal ≤ 1.2); "+
		"the ratio of the medians: %.2f.", ratios[deepest].med, last/first)
	if rss != "" {
		fmt.Fprintf(w, " Peak RSS of the server: %s MB (goal < 150 MB).", rss)
	}
	fmt.Fprintln(w)
}

// depthRows prints the table of the page latency at each depth of target and returns
// the depths in order (none when target was not measured) with each one's p50 against
// the first page's. bench/scale.sh measures each depth D right beside the first page,
// recorded as depth "0/D"; a depth's latency against the first page's is the median over
// the rounds of its ratio to the first page measured beside it (to the round's depth 0
// when there is none). The first page's row takes every measurement of it.
func depthRows(w io.Writer, samples []sample, target string) ([]string, map[string]stat) {
	fmt.Fprintln(w, "| depth | req/s | p50 ms | p99 ms | p50 / depth 0 (rounds) |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	depths := []string{"0"}
	for _, s := range samples {
		if d, _, _ := strings.Cut(s.endpoint, "/"); s.target == target && !slices.Contains(depths, d) {
			depths = append(depths, d)
		}
	}
	if len(depths) == 1 && !slices.ContainsFunc(samples, isFirst(target)) {
		return nil, nil
	}
	slices.SortFunc(depths, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	p50Of := func(s sample) float64 { return s.p50 }
	ratios := map[string]stat{}
	for _, d := range depths {
		of := is(d, target)
		if d == "0" {
			of = isFirst(target)
		}
		rps := collectIf(samples, of, func(s sample) float64 { return s.rps })
		p50 := collectIf(samples, of, p50Of)
		p99 := collectIf(samples, of, func(s sample) float64 { return s.p99 })
		r := stat{1, 1, 1}
		if d != "0" {
			beside := is("0/"+d, target)
			if !slices.ContainsFunc(samples, beside) {
				beside = is("0", target)
			}
			r = statOf(roundRatios(samples, of, beside, p50Of))
		}
		ratios[d] = r
		fmt.Fprintf(w, "| %s | %s | %.3f | %.3f | %.2f (%.2f–%.2f) |\n", d, rps.rps(), p50.med, p99.med, r.med, r.min, r.max)
	}
	return depths, ratios
}

// ocpiGoalDepth is the depth at which following the OCPI Locations list's Link must cost
// at most ocpiGoal times the first page (p50).
const (
	ocpiGoalDepth = "100000"
	ocpiGoal      = 1.5
)

// ocpiDepthTable prints, when bench/scale.sh measured them, the OCPI Locations pages of
// 100 of target at each depth, each after the first reached through the Link the service
// handed out, and the page at ocpiGoalDepth against the first page, held to ocpiGoal.
func ocpiDepthTable(w io.Writer, samples []sample, target string) {
	if !slices.ContainsFunc(samples, func(s sample) bool { return s.target == target }) {
		return
	}
	fmt.Fprintf(w, "\nOCPI 2.2.1 Locations, `GET /ocpi/2.2.1/locations?limit=100` (the same server, answering OCPI as "+
		"`--ocpi-country-code NL --ocpi-party-id CNE`), with the credentials token of a partner registered through the "+
		"handshake: pages of 100 in `last_updated` order, each with `X-Total-Count` (the count of every location, read "+
		"with each page); the page at each depth reached through the `Link` of the page before it, whose opaque "+
		"`position` names the last location before it.\n\n")
	depths, ratios := depthRows(w, samples, target)
	if len(depths) == 0 {
		return
	}
	p50Of := func(s sample) float64 { return s.p50 }
	first := collectIf(samples, isFirst(target), p50Of).med
	line := func(d string) string {
		r := ratios[d]
		return fmt.Sprintf("%.2f (%.2f–%.2f); the ratio of the medians: %.2f", r.med, r.min, r.max,
			collect(samples, d, target, p50Of).med/first)
	}
	if r, ok := ratios[ocpiGoalDepth]; ok {
		mark := "met"
		if r.med > ocpiGoal {
			mark = "missed"
		}
		fmt.Fprintf(w, "\nPage at %s by `Link` / first page, `X-Total-Count` included, p50 latency, the median of the rounds' "+
			"ratios: %s (goal ≤ %.1f: %s).", ocpiGoalDepth, line(ocpiGoalDepth), ocpiGoal, mark)
	} else {
		fmt.Fprintf(w, "\nPage at %s by `Link` / first page, p50 latency (goal ≤ %.1f): not measured, the list is shorter.",
			ocpiGoalDepth, ocpiGoal)
	}
	if d := depths[len(depths)-1]; d != ocpiGoalDepth && d != "0" {
		fmt.Fprintf(w, " Deepest (%s) / first page, the median of the rounds' ratios: %s.", d, line(d))
	}
	fmt.Fprintln(w)
}

// ocpiReport prints the OCPI rows of bench/run.sh, when it measured them: the Locations
// pages against the REST locations page, quietly and (see ocpiUnderWrites) beside the
// writer's writeRate writes/s, whose figures ws holds; the page at depth against the
// first, and the push lag.
func ocpiReport(w io.Writer, samples []sample, ws []writeSample, deep, writeRate string) {
	if !slices.ContainsFunc(samples, func(s sample) bool { return strings.HasPrefix(s.endpoint, "ocpi_") }) {
		return
	}
	rpsOf := func(s sample) float64 { return s.rps }
	p50Of := func(s sample) float64 { return s.p50 }
	p99Of := func(s sample) float64 { return s.p99 }
	fmt.Fprintf(w, "\n## OCPI\n\nThe OCPI 2.2.1 Locations module of the servers (`--ocpi-country-code NL "+
		"--ocpi-party-id CNE`), with the credentials token of a partner registered through the handshake: a page of 100 "+
		"Locations from the start (the oldest 100 generated locations, no EVSEs), the last page of 100 from the demo "+
		"locations' `date_from` (80 without EVSEs, then the 20 with their 40 EVSEs, which every change moves to the end "+
		"of the list), and the page at position %s reached through the `Link` "+
		"of the page before it (with its position), each with `X-Total-Count`. *SQLite*: the full stack (the store's "+
		"read cache keeps encoded pages and counts until a location or EVSE changes)", deep)
	targets := []struct{ label, target string }{{"SQLite", "full"}}
	if slices.ContainsFunc(samples, is("ocpi_page", "uncached")) {
		fmt.Fprint(w, "; *uncached*: read cache off, every page and count read from SQLite")
		targets = append(targets, struct{ label, target string }{"uncached", "uncached"})
	}
	if slices.ContainsFunc(samples, is("ocpi_page", "pg")) {
		fmt.Fprint(w, "; *PostgreSQL*: one replica, nothing kept")
		targets = append(targets, struct{ label, target string }{"PostgreSQL", "pg"})
	}
	fmt.Fprint(w, ".\n\n| request |")
	for _, t := range targets {
		fmt.Fprintf(w, " %s req/s | p50 / p99 ms |", t.label)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|---|", len(targets)))
	for _, r := range []struct{ label, endpoint string }{
		{"REST `GET /v1/locations?limit=25`", "locations"},
		{"OCPI page of 100 from the start", "ocpi_page"},
		{"OCPI page of 100 with EVSEs", "ocpi_evses"},
		{"OCPI page at " + deep + " by `Link`", "ocpi_deep"},
	} {
		fmt.Fprintf(w, "| %s |", r.label)
		for _, t := range targets {
			fmt.Fprintf(w, " %s | %s / %s |", collect(samples, r.endpoint, t.target, rpsOf).rps(),
				collect(samples, r.endpoint, t.target, p50Of).ms(), collect(samples, r.endpoint, t.target, p99Of).ms())
		}
		fmt.Fprintln(w)
	}
	written := ocpiUnderWrites(w, samples, ws, writeRate)
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	fmt.Fprintln(w, "\n| goal | figure (median of the rounds' ratios, lowest–highest) | |\n|---|---|---|")
	for _, g := range []struct{ label, endpoint string }{
		{"OCPI page of 100 with EVSEs ≥ 80 % of the REST locations page rate, SQLite", "ocpi_evses"},
		{"OCPI page of 100 from the start ≥ 80 % of the REST locations page rate, SQLite", "ocpi_page"},
	} {
		r := statOf(roundRatios(samples, is(g.endpoint, "full"), is("locations", "full"), rpsOf))
		fmt.Fprintf(w, "| %s | %.0f %% (%.0f–%.0f %%) | %s |\n", g.label, 100*r.med, 100*r.min, 100*r.max, met(r.med >= 0.8))
	}
	for _, t := range written {
		r := statOf(roundRatios(samples, is("ocpi_evses", t.target), is("locations", t.target), rpsOf))
		label := fmt.Sprintf("OCPI page of 100 with EVSEs under %s writes/s ≥ 80 %% of the REST locations page under them, %s", writeRate, t.label)
		verdict := met(r.med >= 0.8)
		if t.target != "full_w" {
			label = fmt.Sprintf("for comparison, no goal: OCPI page of 100 with EVSEs / REST locations page, both under %s writes/s, %s", writeRate, t.label)
			verdict = "–"
		}
		fmt.Fprintf(w, "| %s | %.0f %% (%.0f–%.0f %%) | %s |\n", label, 100*r.med, 100*r.min, 100*r.max, verdict)
	}
	for _, t := range []struct{ label, target string }{{"SQLite", "full"}, {"SQLite uncached", "uncached"}, {"PostgreSQL", "pg"}} {
		r := statOf(roundRatios(samples, is("ocpi_deep", t.target), is("ocpi_page", t.target), p50Of))
		if r.med == 0 {
			continue // not measured in this run
		}
		fmt.Fprintf(w, "| page at %s by `Link` / first page, p50, %s: ≤ 1.5 | %.2f (%.2f–%.2f) | %s |\n", deep, t.label,
			r.med, r.min, r.max, met(r.med <= 1.5))
	}
	for _, t := range []struct{ label, target string }{{"SQLite", "full"}, {"PostgreSQL", "pg"}} {
		rate := collect(samples, "ocpi_lag", t.target, rpsOf)
		p99 := collect(samples, "ocpi_lag", t.target, p99Of)
		if rate.med == 0 {
			continue
		}
		fmt.Fprintf(w, "| push lag p99 < 1 s at 1,000 changes/s, %s | %.0f ms (%.0f–%.0f) at %.0f changes/s, p50 %.0f ms | %s |\n",
			t.label, p99.med, p99.min, p99.max, rate.med, collect(samples, "ocpi_lag", t.target, p50Of).med, met(p99.med < 1000 && rate.med >= 950))
	}
}

// ocpiOnlyReport prints the results of bench/ocpi.sh: the OCPI rows of the full stack on
// SQLite alone, measured in one run beside the REST locations page, from its wrk runs in
// raw and, when writes is not empty, the writer's figures (at writeRate writes/s) of its
// rows under writes in writes.
func ocpiOnlyReport(w io.Writer, raw, conns, duration, rounds, deep, writes, writeRate string) error {
	samples, err := readRaw(raw)
	if err != nil {
		return err
	}
	var ws []writeSample
	if writes != "" {
		if ws, err = readWrites(writes); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "# OCPI results (`make bench-ocpi`)\n\n")
	machine(w)
	fmt.Fprintf(w, "The OCPI figures alone, in one run of `bench/ocpi.sh`: one `chargenet serve` on SQLite (demo inventory "+
		"plus %s generated locations), wrk on loopback, 2 threads, %s connections, %s rounds of %s per request, "+
		"interleaved; the push lag after them (`tool ocpi-lag`).\n", deep, conns, rounds, duration)
	ocpiReport(w, samples, ws, deep, writeRate)
	return nil
}

// ocpiStore is a store of the OCPI rows under writes: its label and the target of its
// reads beside the writer (their reads alone have the target with "_ro" after it).
type ocpiStore struct{ label, target string }

// ocpiUnderWrites prints, when they were measured, the table of the REST locations page
// and the OCPI page of 100 with EVSEs while the writer sends writeRate writes/s to the
// same server, each against the same reads alone right before and after it, with what the
// writer achieved (ws); it returns the stores it printed. On SQLite each commit drops the
// OCPI pages the read cache keeps, so that under writes they are assembled again:
// the load a server answers while charge boxes report.
func ocpiUnderWrites(w io.Writer, samples []sample, ws []writeSample, writeRate string) []ocpiStore {
	var stores []ocpiStore
	for _, st := range []ocpiStore{{"SQLite", "full_w"}, {"PostgreSQL", "pg_w"}} {
		if slices.ContainsFunc(samples, is("ocpi_evses", st.target)) {
			stores = append(stores, st)
		}
	}
	if len(stores) == 0 {
		return nil
	}
	rpsOf := func(s sample) float64 { return s.rps }
	p50Of := func(s sample) float64 { return s.p50 }
	p99Of := func(s sample) float64 { return s.p99 }
	fmt.Fprintf(w, "\nUnder writes: the REST page and the OCPI page of 100 with EVSEs again, while `bench/tool writer` sends "+
		"%s writes/s to the same server (alternately a PATCH of connector 1 of one of the 40 demo EVSEs and a status "+
		"notification of one of the 20 charge boxes, drawn at random), as charge boxes report. On SQLite every commit drops "+
		"the OCPI pages and counts the read cache keeps, so that under writes the OCPI page is assembled again, its changed Locations read and encoded. "+
		"Each round measures the same reads alone around them, half right before and half right after, and takes the "+
		"mean of the two halves; a ratio is the median of the rounds' ratios.\n\n", writeRate)
	fmt.Fprintln(w, "| store | request | alone req/s | under writes req/s | under writes p50 / p99 ms | under writes / alone, per round | median | writes/s achieved | write p99 ms | write errors |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, st := range stores {
		for _, r := range []struct{ label, endpoint string }{
			{"REST `GET /v1/locations?limit=25`", "locations"},
			{"OCPI page of 100 with EVSEs", "ocpi_evses"},
		} {
			ratios := pairedRatios(samples, r.endpoint, st.target, st.target+"_ro")
			wr := writerOf(ws, r.endpoint, st.target)
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s / %s | %s | %.0f %% | %.0f | %.2f | %.0f |\n", st.label, r.label,
				collect(samples, r.endpoint, st.target+"_ro", rpsOf).rps(), collect(samples, r.endpoint, st.target, rpsOf).rps(),
				collect(samples, r.endpoint, st.target, p50Of).ms(), collect(samples, r.endpoint, st.target, p99Of).ms(),
				perRound(ratios), 100*statOf(ratios).med, wr.rate, wr.p99, wr.errors)
		}
	}
	return stores
}
