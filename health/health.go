// Package health decides whether a chargenet process is ready to serve: the checks
// behind GET /readyz and the chargenet_ready metric.
package health

import (
	"context"
	"fmt"
	"time"

	"github.com/chargenet/chargenet"
)

// Names of the checks, in the order they are reported.
const (
	CheckDatabase   = "database"
	CheckMigrations = "migrations"
	CheckDispatcher = "dispatcher"
	CheckBacklog    = "webhook_backlog"
)

// Store is what the checks use of a store.
type Store interface {
	// Ping checks that the database answers (chargenet.Store.Ping).
	Ping(ctx context.Context) error
	// MigrationHead and OutboxStats report on the store (chargenet.Inspector).
	MigrationHead(ctx context.Context) (known, applied string, err error)
	OutboxStats(ctx context.Context) (chargenet.OutboxStats, error)
}

// Checker runs the readiness checks. Store is required.
type Checker struct {
	Store Store
	// Dispatching reports whether the webhook dispatcher of this process is running;
	// nil means this process runs none (deliveries are left to other replicas), which
	// is no failure.
	Dispatching func() bool
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Check is the result of one check.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// Pending and OldestPendingAgeSeconds are set by the webhook_backlog check.
	Pending                 *int64   `json:"pendingDeliveries,omitempty"`
	OldestPendingAgeSeconds *float64 `json:"oldestPendingAgeSeconds,omitempty"`
}

// Report is the result of every check: Ready when all of them passed.
type Report struct {
	Ready  bool    `json:"-"`
	Status string  `json:"status"` // "ready" or "not ready"
	Checks []Check `json:"checks"`
}

// Failing returns the names of the checks that failed.
func (r *Report) Failing() []string {
	var out []string
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c.Name)
		}
	}
	return out
}

// Run runs the checks, each bounded by ctx:
//   - database: the store answers a ping;
//   - migrations: the database's last applied migration is the last one this program
//     knows;
//   - dispatcher: the webhook dispatcher of this process is running, when it has one;
//   - webhook_backlog: the outbox can be read; it reports the pending deliveries and
//     the age of the oldest, and never fails readiness for a backlog alone (a replica
//     taken out of service delivers nothing faster: the alert on the age is the signal).
func (c *Checker) Run(ctx context.Context) Report {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	var checks []Check
	if err := c.Store.Ping(ctx); err != nil {
		checks = append(checks, Check{Name: CheckDatabase, Detail: "database unreachable"})
	} else {
		checks = append(checks, Check{Name: CheckDatabase, OK: true, Detail: "reachable"})
	}
	known, applied, err := c.Store.MigrationHead(ctx)
	switch {
	case err != nil:
		checks = append(checks, Check{Name: CheckMigrations, Detail: "migrations could not be read"})
	case known != applied:
		checks = append(checks, Check{Name: CheckMigrations,
			Detail: fmt.Sprintf("database at %q, this program's last migration is %q", applied, known)})
	default:
		checks = append(checks, Check{Name: CheckMigrations, OK: true, Detail: "at " + known})
	}
	switch {
	case c.Dispatching == nil:
		checks = append(checks, Check{Name: CheckDispatcher, OK: true, Detail: "none in this process (--webhook-dispatch=false)"})
	case c.Dispatching():
		checks = append(checks, Check{Name: CheckDispatcher, OK: true, Detail: "running"})
	default:
		checks = append(checks, Check{Name: CheckDispatcher, Detail: "not running"})
	}
	if s, err := c.Store.OutboxStats(ctx); err != nil {
		checks = append(checks, Check{Name: CheckBacklog, Detail: "outbox could not be read"})
	} else {
		age := 0.0
		if s.Pending > 0 && !s.Oldest.IsZero() {
			age = max(now().Sub(s.Oldest).Seconds(), 0)
		}
		checks = append(checks, Check{Name: CheckBacklog, OK: true,
			Detail:  fmt.Sprintf("%d pending, the oldest %.0f s old", s.Pending, age),
			Pending: &s.Pending, OldestPendingAgeSeconds: &age})
	}
	r := Report{Ready: true, Status: "ready", Checks: checks}
	for _, ch := range checks {
		if !ch.OK {
			r.Ready, r.Status = false, "not ready"
		}
	}
	return r
}
