package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Markers of the OCPP section in bench/results.md.
const (
	sectionStart = "<!-- ocpp: written by bench/ocpp.sh -->"
	sectionEnd   = "<!-- /ocpp -->"
)

// results are the "name<TAB>value" lines of one measurement.
type results map[string]string

func readResults(path string) (results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	r := results{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "\t"); ok {
			r[k] = v
		}
	}
	return r, sc.Err()
}

func (r results) num(k string) float64 {
	v, _ := strconv.ParseFloat(strings.Fields(r[k] + " 0")[0], 64)
	return v
}

// report writes the OCPP section of the results file from one or two measurements
// (SQLite, then PostgreSQL), replacing the section there or appending it.
func report(args []string) error {
	if len(args) < 2 || len(args) > 3 {
		return fmt.Errorf("usage: ocpp report RESULTS.md SQLITE.tsv [POSTGRES.tsv]")
	}
	var runs []results
	for _, p := range args[1:] {
		r, err := readResults(p)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	section := render(runs)
	old, err := os.ReadFile(args[0])
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc := string(old)
	if i := strings.Index(doc, sectionStart); i >= 0 {
		j := strings.Index(doc, sectionEnd)
		if j < i {
			return fmt.Errorf("%s: %q without %q", args[0], sectionStart, sectionEnd)
		}
		doc = doc[:i] + section + doc[j+len(sectionEnd):]
	} else {
		doc = strings.TrimRight(doc, "\n") + "\n\n" + section + "\n"
	}
	fmt.Print(section + "\n")
	return os.WriteFile(args[0], []byte(doc), 0o644)
}

// met renders a goal's verdict.
func met(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

func render(runs []results) string {
	var b strings.Builder
	first := runs[0]
	fmt.Fprintf(&b, "%s\n## OCPP charge boxes (`bench/ocpp.sh`)\n\n", sectionStart)
	fmt.Fprintf(&b, "Measured %s on %s, go %s. Load average (1, 5, 15 min) at the start of each run: %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), first["cpu"], strings.TrimPrefix(goVersion(), "go"), loads(runs))
	fmt.Fprintf(&b, "`bench/ocpp` holds %s charge boxes open on one `chargenet serve --ocpp-addr` (raw WebSockets, OCPP 1.6, "+
		"Basic auth), each booted and then heartbeating every 60 s, on the same 2 cores as the server. The server's RSS is read "+
		"from /proc before any box connects and 10 s after the last one booted. Then %s StatusNotifications per second for 20 s, "+
		"each from a box drawn at random, while a partner follows the event log (`GET /emsp/v1/events` with `resume_cursor`, "+
		"polled back to back), then the same stream through the HTTP ingestion endpoint, to tell what the store path costs; then closed-loop rounds at %s concurrent senders spread over all the boxes, alternately over "+
		"OCPP and over `POST /internal/v1/chargeboxes/{id}/status-notifications` (keep-alive HTTP), 3 rounds of 10 s each, "+
		"medians. Every notification alternates the status, so that each one makes an event.\n\n",
		first["boxes"], first["rate_target"], first["tput_conns"])
	b.WriteString("| goal | " + header(runs) + " |\n|---|" + strings.Repeat("---|", len(runs)) + "\n")
	row := func(goal string, cell func(r results) string) {
		b.WriteString("| " + goal + " |")
		for _, r := range runs {
			b.WriteString(" " + cell(r) + " |")
		}
		b.WriteString("\n")
	}
	row("RSS per idle connection ≤ 48 KB: (RSS with the boxes − RSS with none) / boxes", func(r results) string {
		per := r.num("rss_per_box_kb") * 1024 / 1000 // KiB to KB
		return fmt.Sprintf("%.1f KB (%.0f → %.0f MiB) %s", per, r.num("rss_none_kb")/1024, r.num("rss_boxes_kb")/1024, met(per <= 48))
	})
	row("every box connected within 30 s", func(r results) string {
		s := r.num("connect_s")
		ok := s <= 30 && r["connected"] == r["boxes"] && r.num("connect_failures") == 0
		return fmt.Sprintf("%s of %s in %.1f s (booted in %.1f s) %s", r["connected"], r["boxes"], s, r.num("boot_s"), met(ok))
	})
	row("1,000 StatusNotifications/s: p99 send → CALLRESULT < 50 ms", func(r results) string {
		return fmt.Sprintf("%s/s achieved, %s errors; p50 %s ms, p99 %s ms, max %s ms %s", r["rate_achieved"], r["rate_errors"],
			r["ack_p50_ms"], r["ack_p99_ms"], r["ack_max_ms"], met(r.num("ack_p99_ms") < 50 && r.num("rate_achieved") >= 0.98*r.num("rate_target")))
	})
	row("p99 send → its event in the log < 250 ms", func(r results) string {
		return fmt.Sprintf("%s events matched, %s missing; p50 %s ms, p99 %s ms, max %s ms %s", r["events_seen"], r["events_missing"],
			r["event_p50_ms"], r["event_p99_ms"], r["event_max_ms"], met(r.num("event_p99_ms") < 250 && r.num("events_missing") == 0))
	})
	row("for comparison: the same stream through the HTTP ingestion endpoint (no goal)", func(r results) string {
		return fmt.Sprintf("%s/s; answer p50 %s ms, p99 %s ms; event p50 %s ms, p99 %s ms, %s missing", r["http_rate_achieved"],
			r["http_ack_p50_ms"], r["http_ack_p99_ms"], r["http_event_p50_ms"], r["http_event_p99_ms"], r["http_events_missing"])
	})
	row(fmt.Sprintf("throughput over OCPP ≥ 80 %% of the HTTP ingestion, %s senders", first["tput_conns"]), func(r results) string {
		ratio := 0.0
		if h := r.num("tput_http"); h > 0 {
			ratio = r.num("tput_ocpp") / h
		}
		return fmt.Sprintf("%s/s vs %s/s: %.0f %% %s", r["tput_ocpp"], r["tput_http"], 100*ratio, met(ratio >= 0.8))
	})
	row("peak RSS of the server", func(r results) string { return fmt.Sprintf("%.0f MiB", r.num("rss_peak_kb")/1024) })
	b.WriteString("\nThroughput rounds (notifications/s, p50 ms, p99 ms):\n\n")
	for _, r := range runs {
		var rounds []string
		for i := 1; ; i++ {
			o, okO := r[fmt.Sprintf("tput_ocpp_round%d", i)]
			h, okH := r[fmt.Sprintf("tput_http_round%d", i)]
			if !okO && !okH {
				break
			}
			rounds = append(rounds, fmt.Sprintf("round %d: OCPP %s, HTTP %s", i, o, h))
		}
		fmt.Fprintf(&b, "- %s: %s. Heartbeats answered during the run: %s (%s errors).\n", r["label"], strings.Join(rounds, "; "),
			r["heartbeats"], r["heartbeat_errors"])
	}
	b.WriteString(sectionEnd)
	return b.String()
}

func header(runs []results) string {
	var h []string
	for _, r := range runs {
		h = append(h, map[string]string{"sqlite": "SQLite", "postgres": "PostgreSQL"}[r["label"]])
	}
	return strings.Join(h, " | ")
}

func loads(runs []results) string {
	var l []string
	for _, r := range runs {
		l = append(l, fmt.Sprintf("%s %s (end %s)", header([]results{r}), r["load_start"], r["load_end"]))
	}
	return strings.Join(l, "; ")
}

func goVersion() string { return runtime.Version() }
