package reliability

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDatabaseOutage stops PostgreSQL under load: the API answers 503 with a message,
// promptly (no hang) and without crashing, and /readyz fails; once PostgreSQL is back,
// the same process serves again without a restart.
func TestDatabaseOutage(t *testing.T) {
	cluster := proctest.StartCluster(t)
	srv := serve(t, cluster.URL, "--db-connect-timeout", "2s")
	a := newAPI(srv.Base, true)

	var (
		phase    atomic.Int32 // 0 up, 1 down, 2 back
		slowest  [3]atomic.Int64
		statuses [3]histogram
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	for c := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := phase.Load()
				start := time.Now()
				var res *response
				var err error
				if (c+i)%2 == 0 {
					res, err = a.do(http.MethodGet, fmt.Sprintf("/v2/evses/%d", 1001+c), "")
				} else {
					res, err = a.do(http.MethodPatch, fmt.Sprintf("/v2/evses/%d/connectors/1", 1001+c), patchBody("maxVoltage", float64(100+i%1000)))
				}
				elapsed := time.Since(start).Nanoseconds()
				for {
					old := slowest[p].Load()
					if elapsed <= old || slowest[p].CompareAndSwap(old, elapsed) {
						break
					}
				}
				if err != nil {
					statuses[p].add(0)
					assert.NoError(t, err, "phase %d", p)
					continue
				}
				statuses[p].add(res.status)
				if res.status == http.StatusServiceUnavailable {
					var e struct{ Code, Message string }
					require.NoError(t, json.Unmarshal(res.body, &e))
					assert.Equal(t, "unavailable", e.Code)
					assert.NotEmpty(t, e.Message)
				} else if p != 1 {
					assert.Equal(t, http.StatusOK, res.status, "phase %d: %s", p, res.body)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	time.Sleep(500 * time.Millisecond)

	phase.Store(1)
	cluster.Stop(t)
	// The service answers 503 and says it is not ready.
	require.Eventually(t, func() bool {
		res, err := a.do(http.MethodGet, "/v2/evses/1001", "")
		return err == nil && res.status == http.StatusServiceUnavailable
	}, 10*time.Second, 50*time.Millisecond, "503 while PostgreSQL is down")
	res, err := a.do(http.MethodGet, "/readyz", "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, res.status, "/readyz fails during the outage")
	time.Sleep(time.Second)
	assert.True(t, srv.Running(), "the process survives the outage")

	cluster.Start(t)
	back := time.Now()
	phase.Store(2)
	require.Eventually(t, func() bool {
		r, err := a.do(http.MethodGet, "/readyz", "")
		if err != nil || r.status != http.StatusOK {
			return false
		}
		r, err = a.do(http.MethodGet, "/v2/evses/1001", "")
		return err == nil && r.status == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond, "recovers without a restart")
	recovery := time.Since(back)
	// Requests after recovery succeed again (the load goes on a little longer).
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()

	assert.Positive(t, statuses[1].n[http.StatusServiceUnavailable], "503s during the outage")
	assert.Zero(t, statuses[1].n[http.StatusInternalServerError], "no 500 during the outage")
	assert.Less(t, time.Duration(slowest[1].Load()), 6*time.Second, "no request hangs during the outage")
	assert.NotContains(t, srv.Log(), key, "the log never holds a key")
	t.Logf("outage: up %s | down %s (slowest answer %s) | back %s; recovered %s after PostgreSQL restarted, same process",
		&statuses[0], &statuses[1], time.Duration(slowest[1].Load()).Round(time.Millisecond), &statuses[2],
		recovery.Round(time.Millisecond))
}

// TestSlowloris opens a connection that sends its headers one byte per second: the
// server closes it after the read-header timeout (1 s here, 5 s by default), and serves
// other clients meanwhile.
func TestSlowloris(t *testing.T) {
	srv := serve(t, sqliteBackend().database(t), "--read-header-timeout", "1s")
	conn, err := net.Dial("tcp", srv.Addr)
	require.NoError(t, err)
	defer conn.Close()
	start := time.Now()
	closed := make(chan time.Duration, 1)
	go func() {
		// Reading returns when the server answers or closes the connection.
		_, _ = bufio.NewReader(conn).ReadString('\n')
		closed <- time.Since(start)
	}()
	line := "GET /v1/locations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key + "\r\nX-Slow: "
	sent := 0
	var cutAfter time.Duration
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
loop:
	for ; sent < len(line); sent++ {
		if _, err := conn.Write([]byte{line[sent]}); err != nil {
			break
		}
		// Meanwhile a normal client is served.
		res, err := newAPI(srv.Base, false).do(http.MethodGet, "/v1/locations?limit=1", "")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, res.status)
		select {
		case cutAfter = <-closed:
			break loop
		case <-ticker.C:
		case <-time.After(10 * time.Second):
			t.Fatal("the slow connection is still open after 10 s")
		}
	}
	if cutAfter == 0 {
		cutAfter = <-closed
	}
	assert.Less(t, cutAfter, 4*time.Second, "cut off soon after the 1 s read-header timeout")
	assert.Less(t, sent, len(line), "cut off before it finished its headers")
	t.Logf("slowloris: a client sending 1 byte/s was cut off after %s and %d bytes (read-header timeout 1s)",
		cutAfter.Round(10*time.Millisecond), sent+1)
}
