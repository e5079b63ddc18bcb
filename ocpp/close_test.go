package ocpp_test

import (
	"context"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/intake"
	"github.com/chargenet/chargenet/ocpp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdingStore holds every status notification: it tells entered, waits until its
// context ends, tells cancelled, waits until release is closed and returns, finished.
type holdingStore struct {
	ocpp.Store
	entered, cancelled, release chan struct{}
	finished                    *atomic.Bool
}

func (h holdingStore) ApplyStatusNotification(ctx context.Context, _ *chargenet.StatusNotification, _ string, _ time.Time) (*chargenet.StatusResult, error) {
	h.entered <- struct{}{}
	<-ctx.Done()
	h.cancelled <- struct{}{}
	<-h.release
	h.finished.Store(true)
	return nil, ctx.Err()
}

// goroutine is one goroutine of a stack dump.
type goroutine struct {
	id      int
	creator string   // the function of package ocpp whose go statement started it
	funcs   []string // the functions of package ocpp on its stack, innermost first
	stack   string
}

const pkg = "github.com/chargenet/chargenet/ocpp."

var goroutineHeader = regexp.MustCompile(`^goroutine (\d+) `)

// ocppGoroutines returns the goroutines started by a go statement of package ocpp.
// The tests of the package close every service they start (the fuzz targets' service
// runs after them), so that these are the goroutines of the services still open.
func ocppGoroutines() []goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		m := goroutineHeader.FindStringSubmatch(lines[0])
		if m == nil {
			continue
		}
		id, _ := strconv.Atoi(m[1])
		var creator string
		var funcs []string
		for _, l := range lines[1:] {
			switch {
			case strings.HasPrefix(l, "created by "+pkg):
				creator, _, _ = strings.Cut(strings.TrimPrefix(l, "created by "+pkg), " ")
			case strings.HasPrefix(l, pkg):
				funcs = append(funcs, strings.TrimPrefix(l[:strings.LastIndexByte(l, '(')], pkg))
			}
		}
		if creator != "" {
			out = append(out, goroutine{id: id, creator: creator, funcs: funcs, stack: g})
		}
	}
	return out
}

// exiting reports whether g has done its work: only the group's wrapper is left on
// its stack, returning.
func (g goroutine) exiting() bool {
	for _, f := range g.funcs {
		if f != "(*group).Go.func1" && f != "(*group).leave" {
			return false
		}
	}
	return true
}

// TestCloseWaits runs every kind of goroutine the service starts (a box's read loop,
// the pinger, the state writer, the background loops, a ChangeAvailability the box
// does not answer) and a status notification whose commit hangs. Each runs in the
// service's group; Close waits for the group, the notification's handler included,
// and once it returned no goroutine of the package runs.
func TestCloseWaits(t *testing.T) {
	hold := holdingStore{entered: make(chan struct{}, 1), cancelled: make(chan struct{}, 1), release: make(chan struct{}),
		finished: &atomic.Bool{}}
	var e *env
	e = start(t, func(c *ocpp.Config) {
		hold.Store = c.Store
		in, err := intake.New(intake.Config{Store: hold,
			Deliver: func(id int64, owed []chargenet.AvailabilityRequest) { e.svc.Deliver(id, owed) }})
		require.NoError(t, err)
		c.Intake = in
	})
	b16 := e.mustDial("501", "ocpp1.6")
	b16.callOK("1", "BootNotification", boot16)
	e.setStatus(1002, chargenet.StatusInoperative)
	assert.Contains(t, b16.next(), `"ChangeAvailability"`, "the request the box leaves unanswered")
	b201 := e.mustDial("CB-502", "ocpp2.0.1")
	b201.send(`[2,"1","StatusNotification",{"timestamp":"2026-11-22T10:00:00Z","connectorStatus":"Available","evseId":1,"connectorId":1}]`)
	<-hold.entered

	// Every goroutine of the package runs in the service's group, which Close waits for.
	running := map[string]bool{}
	for _, g := range ocppGoroutines() {
		assert.Equal(t, "(*group).Go", g.creator, "goroutine %d was started outside the group:\n%s", g.id, g.stack)
		for _, f := range g.funcs {
			running[f] = true
		}
	}
	for _, f := range []string{"(*conn).readLoop", "(*transport).pinger", "(*stateWriter).run", "(*Service).every",
		"(*Service).watchEpoch", "(*Service).deliver.func1"} {
		assert.True(t, running[f], "%s runs before Close", f)
	}
	assert.Positive(t, ocpp.Running(e.svc))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- e.svc.Close(ctx) }()
	<-hold.cancelled // Close ended the service's work; the notification's handler still runs
	select {
	case <-closed:
		t.Fatal("Close returned while a notification was being handled")
	default:
	}
	close(hold.release)
	require.NoError(t, <-closed)
	assert.True(t, hold.finished.Load(), "the notification's handler ended before Close returned")
	assert.Zero(t, ocpp.Running(e.svc), "nothing counted runs after Close")
	for _, g := range ocppGoroutines() {
		assert.True(t, g.exiting(), "goroutine %d outlived Close:\n%s", g.id, g.stack)
	}
}
