package server

import (
	"crypto/sha256"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/labstack/echo/v4"
)

// RateLimit is the number of requests one API key may make per window, on one replica.
// A zero Requests disables limiting.
type RateLimit = chargenet.RateLimit

// DefaultRateLimit allows 6000 requests per minute per API key and replica.
var DefaultRateLimit = RateLimit{Requests: 6000, Window: time.Minute}

// limiter counts requests per key in fixed windows, each key under its own limit or the
// default one.
type limiter struct {
	limit RateLimit // the default
	now   func() time.Time

	mu      sync.Mutex
	windows map[[sha256.Size]byte]*window
}

type window struct {
	start  time.Time
	length time.Duration
	count  int
}

const maxLimiterKeys = 100000

func newLimiter(l RateLimit, now func() time.Time) *limiter {
	return &limiter{limit: l, now: now, windows: map[[sha256.Size]byte]*window{}}
}

// allow counts one request of key, under own when own limits anything and under the
// default otherwise, and sets the X-RateLimit-* headers. Over the limit it returns a 429
// *Error and sets Retry-After. A request no limit applies to is not counted.
func (l *limiter) allow(c echo.Context, key [sha256.Size]byte, own RateLimit) error {
	if l == nil {
		return nil
	}
	limit := l.limit
	if own.Requests > 0 {
		limit = own
	}
	if limit.Requests <= 0 {
		return nil
	}
	now := l.now()
	l.mu.Lock()
	w := l.windows[key]
	if w == nil || now.Sub(w.start) >= w.length || w.length != limit.Window {
		if w == nil && len(l.windows) >= maxLimiterKeys {
			for k, old := range l.windows {
				if now.Sub(old.start) >= old.length {
					delete(l.windows, k)
				}
			}
		}
		w = &window{start: now, length: limit.Window}
		l.windows[key] = w
	}
	w.count++
	count, reset := w.count, w.start.Add(limit.Window)
	l.mu.Unlock()

	remaining := limit.Requests - count
	if remaining < 0 {
		remaining = 0
	}
	secs := int(reset.Sub(now).Seconds() + 0.999)
	if secs < 1 {
		secs = 1
	}
	h := c.Response().Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit.Requests))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(secs))
	if count > limit.Requests {
		h.Set("Retry-After", strconv.Itoa(secs))
		return newError(http.StatusTooManyRequests, chargenet.CodeRateLimited, "",
			"rate limit of %d requests per %s exceeded for this API key; retry in %d s", limit.Requests, limit.Window, secs)
	}
	return nil
}
