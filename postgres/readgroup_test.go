package postgres

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadGroup checks that reads waiting together share one fetch with each key asked
// once, that every read gets its own key's answer, that a read made after a fetch began
// waits for a fetch of its own, and the answers after close and to a caller that gave up.
func TestReadGroup(t *testing.T) {
	var (
		mu      sync.Mutex
		fetches [][]int
		state   atomic.Int64 // what the "database" holds now
		release = make(chan struct{})
		started = make(chan struct{}, 1)
	)
	g := startReadGroup(1, func(_ context.Context, keys []int) (map[int]int64, error) {
		mu.Lock()
		fetches = append(fetches, append([]int(nil), keys...))
		first := len(fetches) == 1
		mu.Unlock()
		snapshot := state.Load() // the fetch's snapshot: taken when it starts
		if first {
			started <- struct{}{}
			<-release
		}
		out := map[int]int64{}
		for _, k := range keys {
			if k != 99 {
				out[k] = int64(k)*1000 + snapshot
			}
		}
		return out, nil
	})

	// The first read's fetch is held; meanwhile the state changes and more reads queue.
	var wg sync.WaitGroup
	var first int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		v, found, err := g.get(context.Background(), 1)
		assert.NoError(t, err)
		assert.True(t, found)
		first = v
	}()
	<-started
	state.Store(7) // a write acknowledged before the reads below are made
	keys := []int{1, 2, 2, 3, 1, 99}
	got := make([]int64, len(keys))
	found := make([]bool, len(keys))
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, ok, err := g.get(context.Background(), k)
			assert.NoError(t, err)
			got[i], found[i] = v, ok
		}()
	}
	require.Eventually(t, func() bool { return len(g.in) == len(keys) }, 5*time.Second, time.Millisecond,
		"the reads wait for the held fetch")
	close(release)
	wg.Wait()

	assert.Equal(t, int64(1000), first, "the held read answers from its own snapshot")
	assert.Equal(t, []int64{1007, 2007, 2007, 3007, 1007, 0}, got, "each read its own key, all from a snapshot after the write")
	assert.Equal(t, []bool{true, true, true, true, true, false}, found)
	require.Len(t, fetches, 2, "the queued reads share one fetch")
	assert.ElementsMatch(t, []int{1, 2, 3, 99}, fetches[1], "each key once")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := g.get(ctx, 5)
	if err != nil {
		assert.ErrorIs(t, err, context.Canceled)
	}
	g.close()
	_, _, err = g.get(context.Background(), 1)
	assert.True(t, errors.Is(err, errStoreClosed))
	assert.True(t, isUnavailable(err), "a closed store is unavailable")
}
