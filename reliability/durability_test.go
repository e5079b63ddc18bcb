package reliability

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writer PATCHes maxElectricPower of connector 1 of its own EVSE with increasing values,
// one request at a time, until it is told to stop or a request fails.
type writer struct {
	uid      int64
	acked    int
	last     float64 // the value of the last acknowledged PATCH (0: none)
	inflight float64 // the value of the request that failed (0: none)
	err      error   // the failure
}

// runWriters runs n writers on EVSEs 1001.. until stop is closed or each one's request
// fails, and returns them when all have ended. Round r writes values in
// [r*700+1, r*700+700), so that rounds never repeat a value.
func runWriters(t *testing.T, a *api, n, round int, stop <-chan struct{}) []*writer {
	t.Helper()
	ws := make([]*writer, n)
	var wg sync.WaitGroup
	for i := range ws {
		w := &writer{uid: int64(1001 + i)}
		ws[i] = w
		wg.Go(func() {
			for seq := 0; seq < 69000; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				value := float64(round*700+1) + float64(seq)/100
				res, err := a.do(http.MethodPatch, fmt.Sprintf("/v2/evses/%d/connectors/1", w.uid), patchBody("maxElectricPower", value))
				if err == nil && res.status != http.StatusOK {
					err = fmt.Errorf("status %d: %s", res.status, res.body)
				}
				if err != nil {
					w.inflight, w.err = value, err
					return
				}
				w.last, w.acked = value, w.acked+1
			}
		})
	}
	wg.Wait()
	return ws
}

// TestCrashDurability kills the server with SIGKILL while PATCHes run at full speed,
// restarts it on the same database and checks that every acknowledged PATCH is there:
// each EVSE holds its writer's last acknowledged value, or the value of the request that
// was in flight at the kill (committed but not answered). Five rounds per backend.
func TestCrashDurability(t *testing.T) {
	const writers = 8
	rounds := 5
	if long() {
		rounds = 20
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			db := b.database(t)
			verified, inflightCommitted := 0, 0
			for round := range rounds {
				srv := serve(t, db)
				a := newAPI(srv.Base, true)
				a.check = false // a response cut by the kill is not the server's answer
				killAfter := time.Duration(200+rand.IntN(400)) * time.Millisecond
				go func() {
					time.Sleep(killAfter)
					srv.Kill()
				}()
				ws := runWriters(t, a, writers, round, nil)
				<-srv.Done()

				srv = serve(t, db)
				check := newAPI(srv.Base, true)
				for _, w := range ws {
					require.Error(t, w.err, "the writer of %d ended without a failure", w.uid)
					e, _ := check.getEVSE(t, w.uid)
					got := e.field(1, "maxElectricPower")
					if w.acked == 0 {
						continue // nothing acknowledged this round (possible right after start)
					}
					assert.Contains(t, []float64{w.last, w.inflight}, got,
						"round %d, EVSE %d: last acknowledged %v, in flight %v", round, w.uid, w.last, w.inflight)
					verified += w.acked
					if got == w.inflight {
						inflightCommitted++
					}
				}
				require.NoError(t, srv.Stop(10*time.Second))
			}
			assert.Positive(t, verified, "some PATCHes were acknowledged before the kills")
			t.Logf("%s: %d kill -9 rounds, %d acknowledged PATCHes verified present (%d unanswered ones committed)",
				b.name, rounds, verified, inflightCommitted)
		})
	}
}

// TestGracefulShutdown sends SIGTERM while PATCHes run at full speed (each on a new
// connection): requests in flight complete, new ones are refused, the process exits 0
// within the drain timeout, and after a restart every acknowledged PATCH is there.
//
// A connection still in the kernel's accept queue when the listener closes was never
// read by the server; the kernel resets it, which the client sees as EOF or a reset. The
// test accepts that failure only because it also proves that such a request was not
// applied: every EVSE holds exactly its writer's last acknowledged value.
func TestGracefulShutdown(t *testing.T) {
	const writers = 8
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			db := b.database(t)
			srv := serve(t, db, "--shutdown-timeout", "5s")
			a := newAPI(srv.Base, false)
			// A slow request: its body arrives half before SIGTERM, half 300 ms after.
			pr, pw := io.Pipe()
			signalled := make(chan struct{})
			slow := make(chan error, 1)
			go func() {
				req, _ := http.NewRequest(http.MethodPatch, srv.Base+"/v2/evses/1010/connectors/1", pr)
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				res, err := a.hc.Do(req)
				if err == nil {
					_ = res.Body.Close()
					if res.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", res.StatusCode)
					}
				}
				slow <- err
			}()
			go func() {
				_, _ = pw.Write([]byte(`{"maxVoltage": `))
				<-signalled
				time.Sleep(300 * time.Millisecond)
				_, _ = pw.Write([]byte(`777}`))
				_ = pw.Close()
			}()

			stopErr := make(chan error, 1)
			var took time.Duration
			go func() {
				time.Sleep(500 * time.Millisecond)
				start := time.Now()
				close(signalled)
				err := srv.Stop(10 * time.Second)
				took = time.Since(start)
				stopErr <- err
			}()
			ws := runWriters(t, a, writers, 0, nil)
			require.NoError(t, <-stopErr, "exit status 0\n%s", srv.Log())
			assert.NoError(t, <-slow, "the request in flight at SIGTERM completes")
			assert.Less(t, took, 5*time.Second, "within the drain timeout")
			assert.GreaterOrEqual(t, took, 300*time.Millisecond, "the drain waited for the slow request")

			srv = serve(t, db)
			check := newAPI(srv.Base, true)
			acked, refused := 0, 0
			for _, w := range ws {
				if errors.Is(w.err, syscall.ECONNREFUSED) {
					refused++
				} else {
					assert.True(t, errors.Is(w.err, io.EOF) || errors.Is(w.err, syscall.ECONNRESET),
						"EVSE %d: after SIGTERM only refused or never-read connections, got %v", w.uid, w.err)
				}
				e, _ := check.getEVSE(t, w.uid)
				assert.Equal(t, w.last, e.field(1, "maxElectricPower"), "EVSE %d holds its last acknowledged value", w.uid)
				acked += w.acked
			}
			assert.Positive(t, acked)
			slowEVSE, _ := check.getEVSE(t, 1010)
			assert.Equal(t, 777.0, slowEVSE.field(1, "maxVoltage"), "the slow request's write is kept")
			t.Logf("%s: SIGTERM under load of %d writers: exit 0 after %s, %d acknowledged PATCHes all present; "+
				"the writers' next requests: %d refused, %d reset unread in the accept queue",
				b.name, writers, took.Round(time.Millisecond), acked, refused, writers-refused)
		})
	}
}
