package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// box is one simulated charge box: a raw WebSocket that sends OCPP 1.6 frames. It has
// at most one CALL in flight (callMu), as OCPP-J requires.
type box struct {
	id     int64
	ws     *websocket.Conn
	callMu sync.Mutex
	got    chan reply // the answer to the CALL in flight
	n      int        // notifications sent, to alternate the status
	last   time.Time  // the last timestamp sent: each is newer
}

// reply is a frame the server sent and when it was read.
type reply struct {
	frame []byte
	at    time.Time
}

func (b *box) readLoop() {
	for {
		_, data, err := b.ws.ReadMessage()
		if err != nil {
			close(b.got)
			return
		}
		if len(data) > 1 && data[1] == '2' { // a CALL of the server: not in this benchmark
			continue
		}
		select {
		case b.got <- reply{data, time.Now()}:
		default:
		}
	}
}

// call sends frame and waits for the answer; it returns the time it took.
func (b *box) call(frame string) (time.Duration, error) {
	for len(b.got) > 0 { // a late answer of an earlier call
		<-b.got
	}
	start := time.Now()
	if err := b.ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		return 0, err
	}
	select {
	case r, ok := <-b.got:
		if !ok {
			return 0, errors.New("connection closed")
		}
		if !bytes.HasPrefix(r.frame, []byte("[3,")) {
			return 0, fmt.Errorf("answer %s", r.frame)
		}
		return r.at.Sub(start), nil
	case <-time.After(30 * time.Second):
		return 0, errors.New("no answer in 30 s")
	}
}

// nextStatus returns the next notification's status and timestamp: the status
// alternates, so that each notification changes the EVSE and makes an event, and the
// timestamp is newer than the last.
func (b *box) nextStatus() (string, time.Time) {
	b.n++
	at := time.Now().UTC().Truncate(time.Microsecond)
	if !at.After(b.last) {
		at = b.last.Add(time.Microsecond)
	}
	b.last = at
	if b.n%2 == 1 {
		return "Charging", at
	}
	return "Available", at
}

// sent keeps when each notification was sent, by "box reportedAt", for the event log
// follower.
type sent struct {
	mu sync.Mutex
	at map[string]time.Time
}

func key(box int64, at time.Time) string {
	return strconv.FormatInt(box, 10) + " " + strconv.FormatInt(at.UnixMicro(), 10)
}

func (s *sent) put(k string, t time.Time) { s.mu.Lock(); s.at[k] = t; s.mu.Unlock() }
func (s *sent) take(k string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.at[k]
	delete(s.at, k)
	return t, ok
}

// notify sends one StatusNotification of b's connector 1 and records when.
func (b *box) notify(rec *sent) (time.Duration, error) {
	status, at := b.nextStatus()
	frame := fmt.Sprintf(`[2,"s%d","StatusNotification",{"connectorId":1,"errorCode":"NoError","status":%q,"timestamp":%q}]`,
		b.n, status, at.Format(time.RFC3339Nano))
	if rec != nil {
		rec.put(key(b.id, at), time.Now())
	}
	return b.call(frame)
}

// post sends b's next notification over the HTTP ingestion endpoint and records when.
func (b *box) post(hc *http.Client, api, ingestKey string, rec *sent) (time.Duration, error) {
	status, at := b.nextStatus()
	body := fmt.Sprintf(`{"connectorId":1,"errorCode":"NoError","status":%q,"timestamp":%q}`, status, at.Format(time.RFC3339Nano))
	req, _ := http.NewRequest(http.MethodPost, api+"/internal/v1/chargeboxes/"+strconv.FormatInt(b.id, 10)+"/status-notifications",
		strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+ingestKey)
	req.Header.Set("Content-Type", "application/json")
	if rec != nil {
		rec.put(key(b.id, at), time.Now())
	}
	t0 := time.Now()
	res, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %d", res.StatusCode)
	}
	return time.Since(t0), nil
}

// options of measure.
type options struct {
	ws, api, ingestKey, apiKey, password, label string
	boxes                                       int
	first                                       int64
	pid                                         int
	rate                                        int
	rateFor, heartbeat, tputFor, settle         time.Duration
	conns, rounds                               int
}

// measure runs the benchmark and prints its figures:
//
//  1. RSS of the server with no box, then with every box connected and booted, idle
//     but heartbeating, after a settling time: the memory of an idle connection;
//  2. the time until every box is connected, and until every box is booted;
//  3. a stream of status notifications at a fixed rate, each from a box drawn at random
//     (one not busy), while a follower reads the event log: send to CALLRESULT, and
//     send to the notification's event in the log; then the same stream over the HTTP
//     ingestion endpoint, for comparison;
//  4. closed-loop throughput at a concurrency, over OCPP and over the HTTP ingestion
//     endpoint, spread over the same boxes, in alternating rounds.
func measure(args []string) error {
	var o options
	fs := flag.NewFlagSet("ocpp run", flag.ContinueOnError)
	fs.StringVar(&o.ws, "ws", "", "ws://HOST:PORT/ocpp/")
	fs.StringVar(&o.api, "api", "", "http://HOST:PORT")
	fs.StringVar(&o.ingestKey, "ingest-key", "", "API key of scope ingest")
	fs.StringVar(&o.apiKey, "api-key", "", "API key of scope partner")
	fs.StringVar(&o.password, "password", "", "the boxes' password")
	fs.StringVar(&o.label, "label", "sqlite", "the store, for the report")
	fs.IntVar(&o.boxes, "boxes", 10000, "charge boxes to connect")
	fs.Int64Var(&o.first, "first", 10001, "the first box's id")
	fs.IntVar(&o.pid, "pid", 0, "the server's process id (its RSS)")
	fs.IntVar(&o.rate, "rate", 1000, "status notifications per second in the rate phase")
	fs.DurationVar(&o.rateFor, "rate-for", 20*time.Second, "length of the rate phase")
	fs.DurationVar(&o.heartbeat, "heartbeat", 60*time.Second, "each box's heartbeat interval")
	fs.DurationVar(&o.tputFor, "tput-for", 10*time.Second, "length of a throughput round")
	fs.DurationVar(&o.settle, "settle", 10*time.Second, "wait after connecting before reading the RSS")
	fs.IntVar(&o.conns, "conns", 32, "concurrency of the throughput rounds")
	fs.IntVar(&o.rounds, "rounds", 3, "throughput rounds of each kind")
	if err := fs.Parse(args); err != nil {
		return err
	}
	out := func(name string, v any) { fmt.Printf("%s\t%v\n", name, v) }
	out("label", o.label)
	out("boxes", o.boxes)
	out("cpu", cpuModel())
	out("load_start", loadAvg())

	runtime.GC()
	time.Sleep(time.Second)
	rss0 := rssKB(o.pid)
	out("rss_none_kb", rss0)

	// 2. Connect and boot every box, 200 at a time.
	boxes := make([]*box, o.boxes)
	start := time.Now()
	var connected, booted atomic.Int64
	var lastConnect, lastBoot atomic.Int64
	var failed atomic.Int64
	sem := make(chan struct{}, 200)
	var wg sync.WaitGroup
	for i := range o.boxes {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			id := o.first + int64(i)
			b, err := dial(o.ws, id, o.password)
			if err != nil {
				failed.Add(1)
				fmt.Fprintf(os.Stderr, "box %d: %v\n", id, err)
				return
			}
			connected.Add(1)
			lastConnect.Store(int64(time.Since(start)))
			b.callMu.Lock()
			_, err = b.call(fmt.Sprintf(`[2,"b","BootNotification",{"chargePointVendor":"bench","chargePointModel":"box %d"}]`, id))
			b.callMu.Unlock()
			if err != nil {
				failed.Add(1)
				fmt.Fprintf(os.Stderr, "box %d boot: %v\n", id, err)
				return
			}
			booted.Add(1)
			lastBoot.Store(int64(time.Since(start)))
			boxes[i] = b
		}()
	}
	wg.Wait()
	live := slices.DeleteFunc(slices.Clone(boxes), func(b *box) bool { return b == nil })
	out("connected", connected.Load())
	out("booted", booted.Load())
	out("connect_failures", failed.Load())
	out("connect_s", fmt.Sprintf("%.2f", time.Duration(lastConnect.Load()).Seconds()))
	out("boot_s", fmt.Sprintf("%.2f", time.Duration(lastBoot.Load()).Seconds()))
	if len(live) == 0 {
		return errors.New("no box connected")
	}

	stopBeat := make(chan struct{})
	var beats, beatErrs atomic.Int64
	go heartbeats(live, o.heartbeat, stopBeat, &beats, &beatErrs)
	time.Sleep(o.settle)
	rss1 := rssKB(o.pid)
	out("rss_boxes_kb", rss1)
	out("rss_per_box_kb", fmt.Sprintf("%.1f", float64(rss1-rss0)/float64(len(live))))

	// 3. The rate phase, with the event log followed: over OCPP, then the same over the
	// HTTP ingestion endpoint (what the store path alone costs at this rate).
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 30 * time.Second}
	for _, via := range []string{"ocpp", "http"} {
		prefix := ""
		if via == "http" {
			prefix = "http_"
		}
		rec := &sent{at: map[string]time.Time{}}
		send := func(b *box) (time.Duration, error) { return b.notify(rec) }
		if via == "http" {
			send = func(b *box) (time.Duration, error) { return b.post(hc, o.api, o.ingestKey, rec) }
		}
		follower := startFollower(o.api, o.apiKey, time.Now().Add(-time.Second), rec)
		lat, errs, achieved := ratePhase(live, o.rate, o.rateFor, send)
		time.Sleep(2 * time.Second) // the last events reach the log
		eventLat, unmatched := follower.stop()
		if via == "ocpp" {
			out("rate_target", o.rate)
		}
		out(prefix+"rate_achieved", fmt.Sprintf("%.0f", achieved))
		out(prefix+"rate_sent", len(lat)+errs)
		out(prefix+"rate_errors", errs)
		p := percentiles(lat)
		out(prefix+"ack_p50_ms", ms(p[0]))
		out(prefix+"ack_p99_ms", ms(p[1]))
		out(prefix+"ack_max_ms", ms(p[2]))
		ep := percentiles(eventLat)
		out(prefix+"events_seen", len(eventLat))
		out(prefix+"events_missing", len(lat)-len(eventLat))
		out(prefix+"events_unmatched", unmatched)
		out(prefix+"event_p50_ms", ms(ep[0]))
		out(prefix+"event_p99_ms", ms(ep[1]))
		out(prefix+"event_max_ms", ms(ep[2]))
		if via == "ocpp" {
			out("rss_after_rate_kb", rssKB(o.pid))
		}
		if len(lat) == 0 {
			return fmt.Errorf("%s: every one of %d notifications failed: is the inventory imported?", via, errs)
		}
	}

	// 4. Throughput, OCPP and HTTP alternating.
	var ocppRates, httpRates []float64
	for r := range o.rounds {
		kinds := []string{"ocpp", "http"}
		if r%2 == 1 {
			kinds = []string{"http", "ocpp"}
		}
		for _, k := range kinds {
			var rate float64
			var p []time.Duration
			if k == "ocpp" {
				rate, p = throughputOCPP(live, o.conns, o.tputFor)
				ocppRates = append(ocppRates, rate)
			} else {
				rate, p = throughputHTTP(live, o.api, o.ingestKey, o.conns, o.tputFor)
				httpRates = append(httpRates, rate)
			}
			q := percentiles(p)
			out(fmt.Sprintf("tput_%s_round%d", k, r+1), fmt.Sprintf("%.0f %s %s", rate, ms(q[0]), ms(q[1])))
		}
	}
	out("tput_ocpp", fmt.Sprintf("%.0f", median(ocppRates)))
	out("tput_http", fmt.Sprintf("%.0f", median(httpRates)))
	out("tput_conns", o.conns)
	close(stopBeat)
	out("heartbeats", beats.Load())
	out("heartbeat_errors", beatErrs.Load())
	out("rss_peak_kb", peakKB(o.pid))
	out("load_end", loadAvg())
	for _, b := range live {
		_ = b.ws.Close()
	}
	return nil
}

// dial connects charge box id over OCPP 1.6 with Basic auth.
func dial(base string, id int64, password string) (*box, error) {
	d := websocket.Dialer{Subprotocols: []string{"ocpp1.6"}, HandshakeTimeout: 30 * time.Second, ReadBufferSize: 512, WriteBufferSize: 512}
	user := strconv.FormatInt(id, 10)
	h := http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}}
	ws, res, err := d.Dial(base+user, h)
	if err != nil {
		if res != nil {
			return nil, fmt.Errorf("%w (HTTP %d)", err, res.StatusCode)
		}
		return nil, err
	}
	b := &box{id: id, ws: ws, got: make(chan reply, 1)}
	go b.readLoop()
	return b, nil
}

// heartbeats sends each box a Heartbeat every interval, spread evenly, skipping a box
// busy with another call.
func heartbeats(boxes []*box, interval time.Duration, stop <-chan struct{}, n, errs *atomic.Int64) {
	const step = 100 * time.Millisecond
	per := max(1, len(boxes)*int(step)/int(interval))
	t := time.NewTicker(step)
	defer t.Stop()
	next := 0
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for range per {
			b := boxes[next%len(boxes)]
			next++
			if !b.callMu.TryLock() {
				continue
			}
			go func() {
				defer b.callMu.Unlock()
				if _, err := b.call(`[2,"h","Heartbeat",{}]`); err != nil {
					errs.Add(1)
					return
				}
				n.Add(1)
			}()
		}
	}
}

// ratePhase sends rate notifications per second for d, each from a random box not
// busy; it returns the send-to-CALLRESULT latencies, the errors, and the rate achieved.
func ratePhase(boxes []*box, rate int, d time.Duration, send func(*box) (time.Duration, error)) ([]time.Duration, int, float64) {
	var mu sync.Mutex
	var lat []time.Duration
	var errs atomic.Int64
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	total := int(d / interval)
	for i := range total {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		var b *box
		for range 20 {
			c := boxes[rand.IntN(len(boxes))]
			if c.callMu.TryLock() {
				b = c
				break
			}
		}
		if b == nil {
			errs.Add(1)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer b.callMu.Unlock()
			l, err := send(b)
			if err != nil {
				errs.Add(1)
				return
			}
			mu.Lock()
			lat = append(lat, l)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lat, int(errs.Load()), float64(len(lat)) / time.Since(start).Seconds()
}

// follower reads the event log continuously and matches each evse.status.changed event
// to the notification that caused it.
type follower struct {
	done    chan struct{}
	stopped chan struct{}
	lat     []time.Duration
	other   int
}

func startFollower(api, apiKey string, since time.Time, rec *sent) *follower {
	f := &follower{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(f.stopped)
		hc := &http.Client{Timeout: 10 * time.Second}
		q := "/emsp/v1/events?type=evse.status.changed&limit=100&since=" + since.UTC().Format(time.RFC3339)
		cursor := ""
		for {
			select {
			case <-f.done:
				return
			default:
			}
			req, _ := http.NewRequest(http.MethodGet, api+q+cursor, nil)
			req.Header.Set("Authorization", "Bearer "+apiKey)
			res, err := hc.Do(req)
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			body, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			read := time.Now()
			var page struct {
				Data []struct {
					Data struct {
						ChargeboxID int64     `json:"chargeboxId"`
						ReportedAt  time.Time `json:"reportedAt"`
						Source      string    `json:"source"`
					} `json:"data"`
				} `json:"data"`
				Pagination struct {
					Resume string `json:"resume_cursor"`
				} `json:"pagination"`
			}
			if res.StatusCode != http.StatusOK || json.Unmarshal(body, &page) != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			for _, e := range page.Data {
				if at, ok := rec.take(key(e.Data.ChargeboxID, e.Data.ReportedAt)); ok {
					f.lat = append(f.lat, read.Sub(at))
				} else {
					f.other++
				}
			}
			if page.Pagination.Resume != "" {
				cursor = "&cursor=" + page.Pagination.Resume
			}
			if len(page.Data) < 100 {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	return f
}

func (f *follower) stop() ([]time.Duration, int) {
	close(f.done)
	<-f.stopped
	return f.lat, f.other
}

// throughputOCPP runs conns closed-loop senders for d, sender w using boxes w, w+conns,
// ... in turn, and returns notifications per second and their latencies.
func throughputOCPP(boxes []*box, conns int, d time.Duration) (float64, []time.Duration) {
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	start := time.Now()
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for i := w; time.Now().Before(end); i += conns {
				b := boxes[i%len(boxes)]
				if !b.callMu.TryLock() {
					continue
				}
				l, err := b.notify(nil)
				b.callMu.Unlock()
				if err == nil {
					mine = append(mine, l)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return float64(len(lat)) / time.Since(start).Seconds(), lat
}

// throughputHTTP is throughputOCPP over POST
// /internal/v1/chargeboxes/{id}/status-notifications, conns keep-alive connections.
func throughputHTTP(boxes []*box, api, ingestKey string, conns int, d time.Duration) (float64, []time.Duration) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = conns
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	start := time.Now()
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for i := w; time.Now().Before(end); i += conns {
				b := boxes[i%len(boxes)]
				if !b.callMu.TryLock() {
					continue
				}
				status, at := b.nextStatus()
				body := fmt.Sprintf(`{"connectorId":1,"errorCode":"NoError","status":%q,"timestamp":%q}`, status, at.Format(time.RFC3339Nano))
				req, _ := http.NewRequest(http.MethodPost, api+"/internal/v1/chargeboxes/"+strconv.FormatInt(b.id, 10)+"/status-notifications",
					strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+ingestKey)
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				res, err := hc.Do(req)
				b.callMu.Unlock()
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				if res.StatusCode == http.StatusOK {
					mine = append(mine, time.Since(t0))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return float64(len(lat)) / time.Since(start).Seconds(), lat
}

// percentiles returns the p50, p99 and maximum of ds.
func percentiles(ds []time.Duration) [3]time.Duration {
	if len(ds) == 0 {
		return [3]time.Duration{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return [3]time.Duration{at(0.5), at(0.99), s[len(s)-1]}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

// rssKB returns the resident set of process pid in KiB (0 without a pid).
func rssKB(pid int) int64 { return procStatus(pid, "VmRSS:") }

// peakKB returns the peak resident set of process pid in KiB.
func peakKB(pid int) int64 { return procStatus(pid, "VmHWM:") }

func procStatus(pid int, field string) int64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field) {
			f := strings.Fields(line)
			if len(f) >= 2 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				return n
			}
		}
	}
	return 0
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "model name") {
			if _, v, ok := strings.Cut(line, ":"); ok {
				return fmt.Sprintf("%s, %d cores", strings.TrimSpace(v), runtime.NumCPU())
			}
		}
	}
	return runtime.GOARCH
}
