package outbox

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/chargenet/chargenet"
)

// Defaults of PrunerConfig.
const (
	DefaultRetention  = 720 * time.Hour
	DefaultPruneBatch = 500
	DefaultPruneEvery = time.Minute
	DefaultPrunePause = 50 * time.Millisecond
)

// EventPruner is the part of a store a Pruner uses (chargenet.EventLog.PruneEvents).
type EventPruner interface {
	PruneEvents(ctx context.Context, before time.Time, limit int) (chargenet.Pruned, error)
}

// PrunerConfig configures a Pruner. Store is required; zero fields take the defaults.
type PrunerConfig struct {
	Store EventPruner
	// Retention is how long events, delivery attempts and pending deliveries are kept.
	Retention time.Duration
	// Batch bounds what one PruneEvents call removes of each kind.
	Batch int
	// Every is the interval between rounds once a round has caught up.
	Every time.Duration
	// Pause is the wait between two batches of one round, so that the writers queued
	// behind a batch go first.
	Pause time.Duration
	// Logger receives a line per failed round and per round that removed something;
	// nil discards.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Pruner keeps the event log, the delivery attempts and the pending deliveries within
// the retention window. Every replica runs one: on PostgreSQL the store's batches skip
// the rows another replica is pruning.
type Pruner struct {
	cfg PrunerConfig
}

// NewPruner returns a Pruner; call Run to start it. It panics if Store is nil (a
// programming error).
func NewPruner(cfg PrunerConfig) *Pruner {
	if cfg.Store == nil {
		panic("outbox: PrunerConfig.Store is required")
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultPruneBatch
	}
	if cfg.Every <= 0 {
		cfg.Every = DefaultPruneEvery
	}
	if cfg.Pause <= 0 {
		cfg.Pause = DefaultPrunePause
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Pruner{cfg: cfg}
}

// Run prunes at once and then every cfg.Every until ctx ends. A round calls
// PruneEvents(now - Retention, Batch) again, after Pause, as long as the call removed a
// full batch of any kind; a store error ends the round (logged), and the next round
// tries again.
func (p *Pruner) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.Round(ctx)
		t.Reset(p.cfg.Every)
	}
}

// Round runs one round (see Run) and returns what it removed.
func (p *Pruner) Round(ctx context.Context) chargenet.Pruned {
	var total chargenet.Pruned
	for {
		got, err := p.cfg.Store.PruneEvents(ctx, p.cfg.Now().Add(-p.cfg.Retention), p.cfg.Batch)
		if err != nil {
			if ctx.Err() == nil {
				p.cfg.Logger.Warn("pruning the event log", "error", err.Error())
			}
			break
		}
		total.Events += got.Events
		total.Attempts += got.Attempts
		total.Expired += got.Expired
		if got.Events < p.cfg.Batch && got.Attempts < p.cfg.Batch && got.Expired < p.cfg.Batch {
			break
		}
		select {
		case <-ctx.Done():
			return total
		case <-time.After(p.cfg.Pause):
		}
	}
	if total != (chargenet.Pruned{}) {
		p.cfg.Logger.Info("pruned the event log", "events", total.Events, "attempts", total.Attempts, "expired", total.Expired)
	}
	return total
}
