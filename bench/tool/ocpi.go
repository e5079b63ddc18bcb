package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	ocpigen "github.com/chargenet/chargenet/gen/ocpi"
	"github.com/chargenet/chargenet/ocpi/ocpitest"
)

// ocpiRegister registers an eMSP without a Locations receiver with chargenet, whose
// versions are at versionsURL, with the registration token tokenA (`chargenet ocpi
// register`), and prints the credentials token chargenet answered with: the token
// wrk's OCPI requests carry.
func ocpiRegister(versionsURL, tokenA string) error {
	sim := ocpitest.New(false)
	defer sim.Close()
	if err := sim.Register(context.Background(), versionsURL, tokenA); err != nil {
		return err
	}
	if v := sim.Violations(); len(v) > 0 {
		return fmt.Errorf("contract violations: %s", strings.Join(v, "; "))
	}
	fmt.Println(sim.Token())
	return nil
}

// ocpiLink prints the next page's URL (the Link) of the Locations page at offset with
// limit: the URL of the page at offset + limit, with its position.
func ocpiLink(locationsURL, token string, offset, limit int) error {
	sim := ocpitest.New(false)
	defer sim.Close()
	u := locationsURL + "?" + url.Values{"offset": {strconv.Itoa(offset)}, "limit": {strconv.Itoa(limit)}}.Encode()
	status, h, body, err := sim.Call(context.Background(), "GET", u, token, nil)
	if err != nil {
		return err
	}
	link := h.Get("Link")
	if status != 200 || !strings.HasPrefix(link, "<") {
		return fmt.Errorf("GET %s: HTTP %d, Link %q: %.300s", u, status, link, body)
	}
	fmt.Println(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`))
	return nil
}

// ocpiLag measures how long a change takes to reach a partner's Locations receiver. It
// registers an eMSP simulator with a receiver (token A from `chargenet ocpi register`),
// then sends rate changes a second for duration over 64 connections: PATCHes of
// connector 1 of the 40 demo EVSEs in turn, each setting that connector's
// maxElectricPower to a value of its own. Two PATCHes of one connector in flight at
// once commit in either order, so a change is placed by the EVSE version its answer's
// ETag names: its lag is the time from its PATCH's answer (committed) to the first push
// that shows the receiver the value of that version or of a later one. After the stream it waits up to drain for the
// pushes to come in, and prints changes, the rate achieved, non-2xx PATCHes, the lag's
// p50, p99 and max in ms, and the changes never seen.
func ocpiLag(base, key, versionsURL, tokenA string, rate int, duration, drain time.Duration) error {
	sim := ocpitest.New(true)
	defer sim.Close()
	if err := sim.Register(context.Background(), versionsURL, tokenA); err != nil {
		return err
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("URL %q: want http://host:port", base)
	}
	type change struct {
		uid, watts int
		version    int64
		ack        time.Time
	}
	var (
		mu      sync.Mutex
		changes []change
		bad     int
		wg      sync.WaitGroup
	)
	// Connector 1 of each EVSE starts at 100 kW plus its uid in W, so that no two
	// EVSEs share a value and every change is a new one.
	next := map[int]int{}
	for i := range 40 {
		next[1001+i] = 100000 + 1001 + i
	}
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	end := start.Add(duration)
	const conns = 64
	for k := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c *rawConn
			defer func() {
				if c != nil {
					_ = c.conn.Close()
				}
			}()
			for n := k; ; n += conns {
				due := start.Add(time.Duration(n) * interval)
				if !due.Before(end) {
					return
				}
				time.Sleep(time.Until(due))
				uid := 1001 + n%40
				mu.Lock()
				next[uid]++
				watts := next[uid]
				mu.Unlock()
				if c == nil {
					if c, err = dialRaw(u.Host); err != nil {
						c = nil
						continue
					}
				}
				body := fmt.Sprintf(`{"maxElectricPower": %d.%03d}`, watts/1000, watts%1000)
				req := fmt.Appendf(nil, "PATCH /v2/evses/%d/connectors/1 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
					"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", uid, u.Host, key, len(body), body)
				status, etag, err := c.doHeader(req, "ETag")
				at := time.Now()
				version, verr := strconv.ParseInt(strings.Trim(etag, `"`), 10, 64)
				if err != nil {
					_ = c.conn.Close()
					c = nil
				}
				mu.Lock()
				if err != nil || status != 200 || verr != nil {
					bad++
				} else {
					changes = append(changes, change{uid: uid, watts: watts, version: version, ack: at})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	// The version each value was committed at, and the highest version of each EVSE.
	versionOf := map[[2]int]int64{}
	highest := map[int]int64{}
	for _, c := range changes {
		versionOf[[2]int{c.uid, c.watts}] = c.version
		highest[c.uid] = max(highest[c.uid], c.version)
	}
	// timelines returns, for each EVSE uid, the versions the pushes showed the receiver
	// (the newest so far at each push), in the order they came.
	timelines := func() map[int][]shown {
		out := map[int][]shown{}
		for uid, tl := range held(sim.Pushes()) {
			var newest int64
			for _, s := range tl {
				if v := versionOf[[2]int{uid, s.watts}]; v > newest {
					newest = v
					out[uid] = append(out[uid], shown{version: v, at: s.at})
				}
			}
		}
		return out
	}
	sim.WaitFor(drain, func() bool {
		seen := timelines()
		for uid, v := range highest {
			if len(seen[uid]) == 0 || seen[uid][len(seen[uid])-1].version < v {
				return false
			}
		}
		return true
	})
	seen := timelines()
	var lags []time.Duration
	missing := 0
	for _, c := range changes {
		tl := seen[c.uid]
		i := slices.IndexFunc(tl, func(s shown) bool { return s.version >= c.version })
		if i < 0 {
			missing++
			continue
		}
		lags = append(lags, max(tl[i].at.Sub(c.ack), 0))
	}
	slices.Sort(lags)
	pct := func(p float64) float64 {
		if len(lags) == 0 {
			return 0
		}
		return float64(lags[min(len(lags)-1, int(p*float64(len(lags))))].Microseconds()) / 1000
	}
	if v := sim.Violations(); len(v) > 0 {
		fmt.Fprintf(os.Stderr, "ocpi-lag: %d contract violations, the first: %s\n", len(v), v[0])
	}
	fmt.Printf("%d\t%.0f\t%d\t%.1f\t%.1f\t%.1f\t%d\n", len(changes), float64(len(changes))/elapsed.Seconds(), bad,
		pct(0.5), pct(0.99), pct(1), missing)
	return nil
}

// shown is a value of connector 1 of an EVSE that a push showed the receiver (or the
// EVSE version it was committed at), and when.
type shown struct {
	watts   int
	version int64
	at      time.Time
}

// held returns, for each EVSE uid, the values of its connector 1 the pushes showed, in
// the order they came (pushes carry the current state, one after the other per
// location).
func held(pushes []ocpitest.Push) map[int][]shown {
	out := map[int][]shown{}
	add := func(uid string, cs []ocpigen.Connector, at time.Time) {
		n, err := strconv.Atoi(uid)
		if err != nil {
			return
		}
		for _, c := range cs {
			if c.Id == "1" && c.MaxElectricPower != nil {
				out[n] = append(out[n], shown{watts: *c.MaxElectricPower, at: at})
			}
		}
	}
	for _, p := range pushes {
		if p.Method != "PUT" {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(p.Path, "/partner/locations/"), "/")
		switch len(parts) {
		case 3:
			var l ocpigen.Location
			if json.Unmarshal(p.Body, &l) == nil && l.Evses != nil {
				for _, e := range *l.Evses {
					add(e.Uid, e.Connectors, p.At)
				}
			}
		case 4:
			var e ocpigen.EVSE
			if json.Unmarshal(p.Body, &e) == nil {
				add(e.Uid, e.Connectors, p.At)
			}
		case 5:
			var c ocpigen.Connector
			if json.Unmarshal(p.Body, &c) == nil {
				add(parts[3], []ocpigen.Connector{c}, p.At)
			}
		}
	}
	return out
}

// ocpiIDs prints "POSITION ID" for each position: the id of the location at that
// zero-based position of the OCPI Locations list once the n generated locations of seed
// are imported, the list being in last_updated order, then by id. bench/scale.sh checks
// the pages it measures against them, without asking the service.
func ocpiIDs(n int, seed uint64, positions []int) error {
	type entry struct {
		updated string // RFC 3339 in UTC, whole seconds: ordered as the times are
		i       int
	}
	list := make([]entry, 0, n)
	err := generate(n, seed, func(loc map[string]any) error {
		list = append(list, entry{loc["lastUpdated"].(string), len(list)})
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(list, func(a, b entry) int {
		if c := strings.Compare(a.updated, b.updated); c != 0 {
			return c
		}
		return a.i - b.i // ID(i) orders as i does
	})
	for _, p := range positions {
		if p < 0 || p >= n {
			return fmt.Errorf("position %d is not within the %d locations", p, n)
		}
		fmt.Printf("%d %s\n", p, ID(list[p].i))
	}
	return nil
}

// ocpiArgs runs the ocpi-* subcommands of tool.
func ocpiArgs(args []string) error {
	switch args[0] {
	case "ocpi-register":
		if len(args) != 3 {
			return fmt.Errorf("usage: tool ocpi-register VERSIONS_URL TOKEN_A")
		}
		return ocpiRegister(args[1], args[2])
	case "ocpi-link":
		if len(args) != 5 {
			return fmt.Errorf("usage: tool ocpi-link LOCATIONS_URL TOKEN OFFSET LIMIT")
		}
		offset, err1 := strconv.Atoi(args[3])
		limit, err2 := strconv.Atoi(args[4])
		if err1 != nil || err2 != nil {
			return fmt.Errorf("OFFSET and LIMIT must be whole numbers")
		}
		return ocpiLink(args[1], args[2], offset, limit)
	case "ocpi-ids":
		if len(args) < 4 {
			return fmt.Errorf("usage: tool ocpi-ids N SEED POSITION [POSITION ...]")
		}
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 0 {
			return fmt.Errorf("count %q must be a whole number", args[1])
		}
		seed, err := strconv.ParseUint(args[2], 10, 64)
		if err != nil {
			return fmt.Errorf("SEED %q: %w", args[2], err)
		}
		var positions []int
		for _, a := range args[3:] {
			p, err := strconv.Atoi(a)
			if err != nil {
				return fmt.Errorf("position %q must be a whole number", a)
			}
			positions = append(positions, p)
		}
		return ocpiIDs(n, seed, positions)
	case "ocpi-lag":
		if len(args) != 8 {
			return fmt.Errorf("usage: tool ocpi-lag URL KEY VERSIONS_URL TOKEN_A RATE DURATION DRAIN")
		}
		rate, err := strconv.Atoi(args[5])
		if err != nil || rate < 1 {
			return fmt.Errorf("RATE %q must be a positive whole number", args[5])
		}
		d, err1 := time.ParseDuration(args[6])
		drain, err2 := time.ParseDuration(args[7])
		if err1 != nil || err2 != nil {
			return fmt.Errorf("DURATION and DRAIN must be durations")
		}
		return ocpiLag(args[1], args[2], args[3], args[4], rate, d, drain)
	}
	return fmt.Errorf("unknown command %q", args[0])
}
