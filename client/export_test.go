package client

import (
	"context"
	"time"
)

// WithSleep replaces the wait between attempts (default: a timer that stops when the
// context is done), so tests can record the waits instead of sleeping.
func WithSleep(sleep func(context.Context, time.Duration) error) Option {
	return func(o *options) error {
		o.sleep = sleep
		return nil
	}
}

// WithClock replaces time.Now for resolving Retry-After dates.
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		o.now = now
		return nil
	}
}

// WithJitter replaces the random choice in [0, d] of the backoff.
func WithJitter(jitter func(d time.Duration) time.Duration) Option {
	return func(o *options) error {
		o.jitter = jitter
		return nil
	}
}
