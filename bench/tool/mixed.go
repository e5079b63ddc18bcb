package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// writers is how many connections the writer sends over.
const writers = 64

// writer is the steady write stream of the mixed workload: rate writes per second for
// duration, alternately a PATCH of connector 1 of one of the 40 demo EVSEs and a status
// notification of connector 1 of one of the 20 demo charge boxes, each drawn at random
// (with reads set, a GET of one of the 40 demo EVSEs instead: the same stream of
// requests without any write, to measure what their arrival alone costs the reads),
// sent at the times a fixed schedule gives over 64 connections, each taking every 64th
// write (a write whose connection still waits for an answer is late, not dropped: the
// connection catches up). It prints what it achieved: writes, rate, non-2xx answers and
// latency.
//
// It speaks HTTP/1.1 itself over kept-alive connections, as wrk does, rather than
// through net/http's client: the writer shares the machine with the server and the
// reads it measures, and the client cost about 270 µs of CPU per write here, a seventh
// of two cores at 1,000 writes/s; this costs a fraction of that. For the same reason it
// runs its goroutines on one thread (GOMAXPROCS 1): they mostly wait, and a second
// thread woken for each answer cost 82–96 µs of CPU per write here instead of 64–66.
func writer(base, key, ingestKey string, rate int, duration time.Duration, reads bool) error {
	if rate <= 0 {
		return fmt.Errorf("rate %d must be positive", rate)
	}
	runtime.GOMAXPROCS(1)
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("URL %q: want http://host:port", base)
	}
	var (
		bad, failed atomic.Int64
		mu          sync.Mutex
		lat         []time.Duration
		wg          sync.WaitGroup
	)
	// Each connection sends every writers-th write of the schedule, at its time or, when
	// the answer to its previous write came later than that, at once.
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	end := start.Add(duration)
	for k := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			defer func() { mu.Lock(); lat = append(lat, mine...); mu.Unlock() }()
			var c *rawConn
			defer func() {
				if c != nil {
					_ = c.conn.Close()
				}
			}()
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			for n := k; ; n += writers {
				due := start.Add(time.Duration(n) * interval)
				if !due.Before(end) {
					return
				}
				if d := time.Until(due); d > 0 {
					timer.Reset(d)
					<-timer.C
				}
				if c == nil {
					nc, err := dialRaw(u.Host)
					if err != nil {
						failed.Add(1)
						continue
					}
					c = nc
				}
				sent := time.Now()
				status, err := c.do(writeRequest(u.Host, key, ingestKey, n, reads))
				if err != nil {
					failed.Add(1)
					_ = c.conn.Close()
					c = nil
					continue
				}
				mine = append(mine, time.Since(sent))
				if status/100 != 2 {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	fmt.Printf("%d\t%.0f\t%d\t%d\t%.3f\t%.3f\n", len(lat), float64(len(lat))/elapsed.Seconds(), bad.Load(), failed.Load(), pct(0.5), pct(0.99))
	return nil
}

// rawConn is one kept-alive HTTP/1.1 connection of the writer.
type rawConn struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialRaw(host string) (*rawConn, error) {
	conn, err := net.DialTimeout("tcp", host, 10*time.Second)
	if err != nil {
		return nil, err
	}
	return &rawConn{conn: conn, r: bufio.NewReaderSize(conn, 4096)}, nil
}

// do sends req and reads the answer (it must have a Content-Length, as the service's
// do), returning its status code.
func (c *rawConn) do(req []byte) (int, error) {
	status, _, err := c.doHeader(req, "")
	return status, err
}

// doHeader is do that also returns the value of the answer's header name (empty when
// name is empty or the answer has none).
func (c *rawConn) doHeader(req []byte, name string) (status int, value string, err error) {
	status, err = c.exchange(req, func(n, v []byte) {
		if name != "" && bytes.EqualFold(n, []byte(name)) {
			value = string(bytes.TrimSpace(v))
		}
	})
	return status, value, err
}

// exchange is do, calling header for every header of the answer.
func (c *rawConn) exchange(req []byte, header func(name, value []byte)) (int, error) {
	if err := c.conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return 0, err
	}
	if _, err := c.conn.Write(req); err != nil {
		return 0, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, fmt.Errorf("status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("status line %q", line)
	}
	length := -1
	for {
		h, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if ok {
			header(name, value)
		}
		if ok && bytes.EqualFold(name, []byte("Content-Length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil {
				return 0, fmt.Errorf("content-length %q", value)
			}
		}
	}
	if length < 0 {
		return 0, fmt.Errorf("an answer without Content-Length")
	}
	if _, err := c.r.Discard(length); err != nil {
		return 0, err
	}
	return status, nil
}

// writeRequest returns write n of the stream for host: even n a PATCH, odd n a status
// notification; with reads, a GET of an EVSE.
func writeRequest(host, key, ingestKey string, n int, reads bool) []byte {
	if reads {
		return fmt.Appendf(nil, "GET /v2/evses/%d HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", 1001+rand.IntN(40), host, key)
	}
	var method, path, auth, body string
	if n%2 == 0 {
		method, path, auth = "PATCH", fmt.Sprintf("/v2/evses/%d/connectors/1", 1001+rand.IntN(40)), key
		body = fmt.Sprintf(`{"maxElectricPower": %d.5}`, 1+n%400)
	} else {
		status := [2]string{"Available", "Charging"}[(n/2)%2]
		method, path, auth = "POST", "/internal/v1/chargeboxes/"+strconv.Itoa(501+rand.IntN(20))+"/status-notifications", ingestKey
		body = `{"connectorId": 1, "errorCode": "NoError", "status": "` + status + `"}`
	}
	return fmt.Appendf(nil, "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\n\r\n%s", method, path, host, auth, len(body), body)
}

// writerArgs parses the arguments of tool writer.
func writerArgs(args []string) error {
	if len(args) != 5 && len(args) != 6 {
		return fmt.Errorf("usage: tool writer URL KEY INGEST_KEY RATE DURATION [writes|reads]")
	}
	reads := false
	if len(args) == 6 {
		switch args[5] {
		case "writes":
		case "reads":
			reads = true
		default:
			return fmt.Errorf("KIND %q: want writes or reads", args[5])
		}
	}
	rate, err := strconv.Atoi(args[3])
	if err != nil {
		return fmt.Errorf("RATE %q: %w", args[3], err)
	}
	d, err := time.ParseDuration(args[4])
	if err != nil {
		return fmt.Errorf("DURATION %q: %w", args[4], err)
	}
	if os.Getenv("BENCH_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "writer: %s at %d/s for %s\n", args[0], rate, d)
	}
	return writer(args[0], args[1], args[2], rate, d, reads)
}
