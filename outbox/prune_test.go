package outbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePruner answers PruneEvents with the results queued in answers (then zero) and
// records each call.
type fakePruner struct {
	mu      sync.Mutex
	answers []chargenet.Pruned
	errs    map[int]error // by call number, from 0
	calls   []pruneCall
	called  chan struct{}
}

type pruneCall struct {
	before time.Time
	limit  int
}

func (f *fakePruner) PruneEvents(_ context.Context, before time.Time, limit int) (chargenet.Pruned, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.calls)
	f.calls = append(f.calls, pruneCall{before, limit})
	defer func() {
		select {
		case f.called <- struct{}{}:
		default:
		}
	}()
	if err := f.errs[n]; err != nil {
		return chargenet.Pruned{}, err
	}
	if len(f.answers) == 0 {
		return chargenet.Pruned{}, nil
	}
	p := f.answers[0]
	f.answers = f.answers[1:]
	return p, nil
}

func TestPrunerRound(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		answers []chargenet.Pruned
		errs    map[int]error
		calls   int
		total   chargenet.Pruned
	}{
		{"nothing to prune", nil, nil, 1, chargenet.Pruned{}},
		{"a partial batch ends the round", []chargenet.Pruned{{Events: 3, Attempts: 2}}, nil, 1, chargenet.Pruned{Events: 3, Attempts: 2}},
		{"full batches of any kind go on", []chargenet.Pruned{{Events: 4}, {Attempts: 4, Events: 1}, {Expired: 4}, {Events: 2}},
			nil, 4, chargenet.Pruned{Events: 7, Attempts: 4, Expired: 4}},
		{"an error ends the round", []chargenet.Pruned{{Events: 4}}, map[int]error{1: errors.New("database gone")}, 2,
			chargenet.Pruned{Events: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakePruner{answers: tt.answers, errs: tt.errs, called: make(chan struct{}, 1)}
			p := outbox.NewPruner(outbox.PrunerConfig{Store: f, Retention: 48 * time.Hour, Batch: 4, Pause: time.Millisecond,
				Now: func() time.Time { return now }})
			assert.Equal(t, tt.total, p.Round(t.Context()))
			require.Len(t, f.calls, tt.calls)
			for _, c := range f.calls {
				assert.Equal(t, pruneCall{now.Add(-48 * time.Hour), 4}, c, "now - retention, the batch size")
			}
		})
	}
}

func TestPrunerDefaults(t *testing.T) {
	f := &fakePruner{called: make(chan struct{}, 1)}
	now := time.Now()
	p := outbox.NewPruner(outbox.PrunerConfig{Store: f, Now: func() time.Time { return now }})
	p.Round(t.Context())
	require.Len(t, f.calls, 1)
	assert.Equal(t, pruneCall{now.Add(-720 * time.Hour), 500}, f.calls[0])
}

// TestPrunerRun checks that Run prunes at once and again every interval until its
// context ends.
func TestPrunerRun(t *testing.T) {
	f := &fakePruner{answers: []chargenet.Pruned{{Events: 2}, {Events: 1}}, called: make(chan struct{}, 1)}
	p := outbox.NewPruner(outbox.PrunerConfig{Store: f, Batch: 2, Every: time.Millisecond, Pause: time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	for {
		<-f.called
		f.mu.Lock()
		n := len(f.calls)
		f.mu.Unlock()
		if n >= 4 { // a round of two calls, then rounds of one
			break
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return when its context ended")
	}
}
