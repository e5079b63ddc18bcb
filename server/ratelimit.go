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
type RateLimit struct {
	Requests int
	Window   time.Duration
}

// DefaultRateLimit allows 6000 requests per minute per API key and replica.
var DefaultRateLimit = RateLimit{Requests: 6000, Window: time.Minute}

// limiter counts requests per key in fixed windows.
type limiter struct {
	limit RateLimit
	now   func() time.Time

	mu      sync.Mutex
	windows map[[sha256.Size]byte]*window
}

type window struct {
	start time.Time
	count int
}

const maxLimiterKeys = 100000

func newLimiter(l RateLimit, now func() time.Time) *limiter {
	return &limiter{limit: l, now: now, windows: map[[sha256.Size]byte]*window{}}
}

// allow counts one request of key and sets the X-RateLimit-* headers. Over the limit it
// returns a 429 *Error and sets Retry-After.
func (l *limiter) allow(c echo.Context, key [sha256.Size]byte) error {
	if l == nil || l.limit.Requests <= 0 {
		return nil
	}
	now := l.now()
	l.mu.Lock()
	w := l.windows[key]
	if w == nil || now.Sub(w.start) >= l.limit.Window {
		if w == nil && len(l.windows) >= maxLimiterKeys {
			for k, old := range l.windows {
				if now.Sub(old.start) >= l.limit.Window {
					delete(l.windows, k)
				}
			}
		}
		w = &window{start: now}
		l.windows[key] = w
	}
	w.count++
	count, reset := w.count, w.start.Add(l.limit.Window)
	l.mu.Unlock()

	remaining := l.limit.Requests - count
	if remaining < 0 {
		remaining = 0
	}
	secs := int(reset.Sub(now).Seconds() + 0.999)
	if secs < 1 {
		secs = 1
	}
	h := c.Response().Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(l.limit.Requests))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(secs))
	if count > l.limit.Requests {
		h.Set("Retry-After", strconv.Itoa(secs))
		return newError(http.StatusTooManyRequests, chargenet.CodeRateLimited, "",
			"rate limit of %d requests per %s exceeded for this API key; retry in %d s", l.limit.Requests, l.limit.Window, secs)
	}
	return nil
}
