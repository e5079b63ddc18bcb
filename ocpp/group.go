package ocpp

import (
	"context"
	"sync"
)

// group counts the goroutines the service starts, and the work its message handlers
// do on the OCPP layer's goroutines, so that Close can wait for all of them. Every go
// statement of the package goes through Go. Once stopped, it starts nothing more.
type group struct {
	mu      sync.Mutex
	n       int
	stopped bool
	idle    chan struct{} // closed once stopped with nothing running
}

func newGroup() *group { return &group{idle: make(chan struct{})} }

// Go runs f on a goroutine of its own and reports true, or reports false without
// running it once the group is stopped.
func (g *group) Go(f func()) bool {
	if !g.enter() {
		return false
	}
	go func() {
		defer g.leave()
		f()
	}()
	return true
}

// enter counts work that runs on the caller's goroutine; it reports false once the
// group is stopped, and the work must not be done. Call leave when it is done.
func (g *group) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	g.n++
	return true
}

// leave ends what enter counted.
func (g *group) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.stopped {
		close(g.idle)
	}
}

// stop refuses any new goroutine or work.
func (g *group) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	g.stopped = true
	if g.n == 0 {
		close(g.idle)
	}
}

// wait stops the group and waits until nothing it counted runs, or ctx ends (then it
// returns ctx's error).
func (g *group) wait(ctx context.Context) error {
	g.stop()
	select {
	case <-g.idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// running returns how many goroutines and handlers run.
func (g *group) running() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}
