package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// writeSample is the writer's figures beside one wrk run of the mixed workload.
type writeSample struct {
	endpoint, target  string
	rate, bad, failed float64
	p99               float64
}

func readWrites(path string) ([]writeSample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []writeSample
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// endpoint, target, round, writes, rate, non-2xx, failed, p50, p99
		c := strings.Split(sc.Text(), "\t")
		if len(c) < 9 {
			return nil, fmt.Errorf("%s: malformed line %q", path, sc.Text())
		}
		w := writeSample{endpoint: c[0], target: c[1]}
		for i, p := range []*float64{&w.rate, &w.bad, &w.failed} {
			if *p, err = strconv.ParseFloat(c[4+i], 64); err != nil {
				return nil, fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
			}
		}
		if w.p99, err = strconv.ParseFloat(c[8], 64); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
		}
		out = append(out, w)
	}
	return out, sc.Err()
}

func cpuServerOf(s sample) float64 { return s.cpuServer }
func cpuPGOf(s sample) float64     { return s.cpuPG }

// cpu returns the median CPU µs per request of field over the samples, "–" if none.
func cpu(samples []sample, endpoint, target string, field func(sample) float64) string {
	st := collect(samples, endpoint, target, field)
	if st.med == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", st.med)
}

// mark returns "met" or "missed" for a figure and its goal.
func mark(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

// scaleOutReport prints the PostgreSQL tables and the mixed workload of bench/run.sh.
func scaleOutReport(w io.Writer, raw, writes, conns, writeRate string) error {
	samples, err := readRaw(raw)
	if err != nil {
		return err
	}
	ws, err := readWrites(writes)
	if err != nil {
		return err
	}
	rpsOf := func(s sample) float64 { return s.rps }
	p50Of := func(s sample) float64 { return s.p50 }
	p99Of := func(s sample) float64 { return s.p99 }
	med := func(endpoint, target string) float64 { return collect(samples, endpoint, target, rpsOf).med }

	pgN := med("pgbench_N", "pgbench")
	fmt.Fprintf(w, "\n## PostgreSQL\n\n`chargenet serve --database postgres://...` on a throw-away PostgreSQL cluster on the same machine "+
		"(`scripts/pg-test-cluster.sh`: fsync and synchronous_commit on), with the same inventory, default flags. *Two replicas*: "+
		"two `chargenet serve` processes on that database, wrk with %s connections split across both. *pgbench* on the same cluster "+
		"(`pgbench -i -s 1`, then `-S` select-only and `-N` simple update, `-c %s -j 2 -M prepared`, as long as each wrk run, "+
		"interleaved with them): the database's own ceiling on this machine. *SQLite cache off*: the second SQLite server above.\n\n",
		conns, conns)
	fmt.Fprintln(w, "| request | PostgreSQL req/s | p50 / p99 ms | CPU µs/req (server + PostgreSQL) | two replicas req/s | SQLite req/s (cache on / off) | SQLite CPU µs/req (cache on / off) | ratio | goal |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	type row struct {
		label, endpoint string
		base            float64 // the denominator of the ratio
		baseLabel       string
		goal            float64
		p99Goal         float64
	}
	rows := []row{
		{"GET EVSE", "evse", med("evse", "uncached"), "of SQLite cache off", 0.60, 0},
		{"GET EVSE, 40 EVSEs at random", "evse_spread", med("evse_spread", "uncached"), "of SQLite cache off", 0, 0},
		{"GET locations, first page", "locations", med("locations", "uncached"), "of SQLite cache off", 0.60, 0},
		{"GET locations, deep page", "locations_deep", med("locations_deep", "uncached"), "of SQLite cache off", 0.60, 0},
		{"PATCH, every request on one row", "patch", pgN, "of pgbench -N", 0.40, 20},
		{"PATCH spread over the 40 EVSEs", "patch_spread", pgN, "of pgbench -N", 0.60, 20},
		{"status notifications, 20 charge boxes", "status", pgN, "of pgbench -N", 0, 0},
	}
	for _, r := range rows {
		pg := collect(samples, r.endpoint, "pg", rpsOf)
		ratio := pg.med / r.base
		goal := "–"
		if r.goal > 0 {
			p99 := collect(samples, r.endpoint, "pg", p99Of).med
			ok := ratio >= r.goal
			goal = fmt.Sprintf("≥ %.0f %%", 100*r.goal)
			if r.p99Goal > 0 {
				goal += fmt.Sprintf(", p99 < %.0f ms", r.p99Goal)
				ok = ok && p99 < r.p99Goal
			}
			goal += " (" + mark(ok) + ")"
		}
		two := collect(samples, r.endpoint, "pg2", rpsOf)
		fmt.Fprintf(w, "| %s | %s | %s / %s | %s + %s | %s | %s / %s | %s / %s | %.0f %% %s | %s |\n", r.label, pg.rps(),
			collect(samples, r.endpoint, "pg", p50Of).ms(), collect(samples, r.endpoint, "pg", p99Of).ms(),
			cpu(samples, r.endpoint, "pg", cpuServerOf), cpu(samples, r.endpoint, "pg", cpuPGOf), two.rps(),
			collect(samples, r.endpoint, "full", rpsOf).rps(), collect(samples, r.endpoint, "uncached", rpsOf).rps(),
			cpu(samples, r.endpoint, "full", cpuServerOf), cpu(samples, r.endpoint, "uncached", cpuServerOf),
			100*ratio, r.baseLabel, goal)
	}
	fmt.Fprintf(w, "| pgbench -S (select only) | %s tps | | | | | | | |\n", collect(samples, "pgbench_S", "pgbench", rpsOf).rps())
	fmt.Fprintf(w, "| pgbench -N (simple update) | %s tps | | | | | | | |\n", collect(samples, "pgbench_N", "pgbench", rpsOf).rps())
	fmt.Fprintf(w, "\nDeep page / first page on PostgreSQL, p50 latency: %.2f.\n",
		collect(samples, "locations_deep", "pg", p50Of).med/collect(samples, "locations", "pg", p50Of).med)

	fmt.Fprintf(w, "\n## Reads under writes (mixed workload)\n\nThe same reads while `bench/tool writer` sends a steady stream of "+
		"%s writes/s to the same server (alternately a PATCH of connector 1 of one of the 40 demo EVSEs and a status notification "+
		"of one of the 20 charge boxes, drawn at random). Each round measures the reads alone around the reads under writes, "+
		"half of the time right before and half right after them, and takes the mean of the two halves, so that a steady "+
		"change of the machine's speed cancels; the goal is judged on the median of these per-round ratios. *Ratio of medians*: the median req/s under writes over the median "+
		"req/s alone. *Beside GETs*: the same measure with the writer sending as many GETs of EVSEs instead, on the same "+
		"schedule: what the arrival of that many requests from another process costs the reads, without any write.", writeRate)
	if slices.ContainsFunc(samples, func(s sample) bool { return s.endpoint == "ocpi_evses" && strings.HasSuffix(s.target, "_w") }) {
		fmt.Fprint(w, " *OCPI page of 100 with EVSEs*: the OCPI page of the OCPI section, with the partner's token; held to no "+
			"goal here: its goal, against the REST page under the same writes, is in the OCPI section.")
	}
	fmt.Fprint(w, "\n\n")
	fmt.Fprintln(w, "| store | request | read-only req/s | under writes req/s | under writes / read-only, per round | median | goal | ratio of medians | writes/s achieved | write p99 ms | write errors |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, st := range []struct {
		label, rw string
		goal      bool // false: a reference row, held to no goal
	}{
		{"SQLite, read cache on", "full_w", true},
		{"SQLite, read cache on, beside GETs", "full_r", false},
		{"SQLite, read cache off", "uncached_w", true},
		{"PostgreSQL", "pg_w", true},
	} {
		for _, ep := range []struct {
			label, endpoint string
			goal            bool
		}{
			{"GET EVSE", "evse", true},
			{"GET locations, first page", "locations", true},
			{"OCPI page of 100 with EVSEs", "ocpi_evses", false},
		} {
			if !slices.ContainsFunc(samples, is(ep.endpoint, st.rw)) {
				continue // not measured in this run
			}
			ro, rw := collect(samples, ep.endpoint, st.rw+"_ro", rpsOf), collect(samples, ep.endpoint, st.rw, rpsOf)
			ratios := pairedRatios(samples, ep.endpoint, st.rw, st.rw+"_ro")
			paired := statOf(ratios).med
			wr := writerOf(ws, ep.endpoint, st.rw)
			goal := "–"
			if st.goal && ep.goal {
				goal = "≥ 85 % (" + mark(len(ratios) > 0 && paired >= 0.85) + ")"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.0f %% | %s | %.0f %% | %.0f | %.2f | %.0f |\n", st.label, ep.label,
				ro.rps(), rw.rps(), perRound(ratios), 100*paired, goal, 100*rw.med/ro.med, wr.rate, wr.p99, wr.errors)
		}
	}
	return nil
}

// writerFigures is what the writer achieved beside the reads of one row of the mixed
// workload: the medians over the rounds of its rate and its p99 latency in ms, and its
// non-2xx answers and failed writes summed.
type writerFigures struct{ rate, p99, errors float64 }

// writerOf returns the writer's figures beside endpoint under target (zero when none).
func writerOf(ws []writeSample, endpoint, target string) writerFigures {
	var rates, p99s []float64
	errs := 0.0
	for _, x := range ws {
		if x.endpoint == endpoint && x.target == target {
			rates, p99s = append(rates, x.rate), append(p99s, x.p99)
			errs += x.bad + x.failed
		}
	}
	return writerFigures{statOf(rates).med, statOf(p99s).med, errs}
}

// perRound returns ratios as percentages, in round order: "88 %, 97 %".
func perRound(ratios []float64) string {
	each := make([]string, len(ratios))
	for i, x := range ratios {
		each[i] = fmt.Sprintf("%.0f %%", 100*x)
	}
	return strings.Join(each, ", ")
}
