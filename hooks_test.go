package chargenet_test

import (
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
)

// closed reports whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestHooks sets, replaces and removes each function of a Hooks and checks what the
// store's calls reach, and that each Wanted channel closes at the first function and
// stays closed.
func TestHooks(t *testing.T) {
	var h chargenet.Hooks // the zero value is ready
	h.Announce()
	h.Committed("x", time.Now(), 1)
	h.Signal(7)
	assert.False(t, closed(h.EventsWanted()), "nothing wanted yet")
	assert.False(t, closed(h.SignalsWanted()))

	var announced, signalled []string
	var commits []int
	h.OnEvents(func() { announced = append(announced, "first") })
	h.OnChargeboxSignal(func(id int64) { signalled = append(signalled, "first") })
	assert.True(t, closed(h.EventsWanted()), "wanted once a function is set")
	assert.True(t, closed(h.SignalsWanted()))
	h.OnCommit(func(op string, d time.Duration, writes int) {
		assert.Equal(t, "update_connector", op)
		assert.GreaterOrEqual(t, d, time.Second, "from the start of the transaction")
		commits = append(commits, writes)
	})
	h.Announce()
	h.Signal(7)
	h.Committed("update_connector", time.Now().Add(-time.Second), 3)

	h.OnEvents(func() { announced = append(announced, "second") })
	h.Announce()
	h.OnEvents(nil)
	h.OnChargeboxSignal(nil)
	h.OnCommit(nil)
	h.Announce()
	h.Signal(7)
	h.Committed("update_connector", time.Now(), 1)

	assert.Equal(t, []string{"first", "second"}, announced, "the function set at the time of each call")
	assert.Equal(t, []string{"first"}, signalled)
	assert.Equal(t, []int{3}, commits)
	assert.True(t, closed(h.EventsWanted()), "removing the function does not take the want back")
	assert.True(t, closed(h.SignalsWanted()))
}
