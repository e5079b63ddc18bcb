package ocpp

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/chargenet/chargenet"
)

// maxBatch bounds the connection changes one transaction records: a transaction holds
// SQLite's one writer, which status notifications wait for.
const maxBatch = 250

// stateWriter records connection changes (connections, boots, last seen, ends) in the
// store, in the order they come, several per transaction: thousands of boxes connecting
// at once share commits instead of paying one each. record waits for its change's
// commit; post does not.
type stateWriter struct {
	store chargenet.ChargeboxService
	log   *slog.Logger

	mu      sync.Mutex
	queue   []pendingChange
	closing bool
	started bool // run was started: close waits for it
	wake    chan struct{}
	done    chan struct{}
}

// errClosing answers a change queued after close.
var errClosing = errors.New("the OCPP service is closing")

// pendingChange is a change waiting for its commit; done is nil for a posted one.
type pendingChange struct {
	ch   chargenet.ConnectionChange
	done chan error
}

func newStateWriter(store chargenet.ChargeboxService, log *slog.Logger) *stateWriter {
	return &stateWriter{store: store, log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// record queues ch and waits until it is committed, or ctx ends.
func (w *stateWriter) record(ctx context.Context, ch chargenet.ConnectionChange) error {
	done := make(chan error, 1)
	if !w.add(pendingChange{ch, done}) {
		return errClosing
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// post queues ch without waiting; a failure is logged.
func (w *stateWriter) post(ch chargenet.ConnectionChange) { w.add(pendingChange{ch: ch}) }

func (w *stateWriter) add(p pendingChange) bool {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return false
	}
	w.queue = append(w.queue, p)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

// start runs the writer on a goroutine of g; it does nothing once g is stopped.
func (w *stateWriter) start(g *group) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = g.Go(w.run)
}

// run commits what is queued until close, then what is left.
func (w *stateWriter) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		batch := w.queue[:min(len(w.queue), maxBatch)]
		w.queue = w.queue[len(batch):]
		closing := w.closing
		w.mu.Unlock()
		if len(batch) == 0 {
			if closing {
				return
			}
			<-w.wake
			continue
		}
		changes := make([]chargenet.ConnectionChange, len(batch))
		for i, p := range batch {
			changes[i] = p.ch
		}
		ctx, cancel := context.WithTimeout(context.Background(), messageTimeout)
		err := w.store.RecordConnections(ctx, changes)
		cancel()
		if err != nil {
			w.log.Warn("ocpp: recording connection changes failed", "changes", len(changes), "error", err.Error())
		}
		for _, p := range batch {
			if p.done != nil {
				p.done <- err
			}
		}
	}
}

// close lets run commit what is queued and return; later changes are refused.
func (w *stateWriter) close() {
	w.mu.Lock()
	w.closing = true
	started := w.started
	w.mu.Unlock()
	if !started {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.done
}
