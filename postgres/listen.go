package postgres

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// deliveriesChannel is the channel a transaction that queued webhook deliveries
// notifies (pg_notify, delivered at its commit to every listening session).
const deliveriesChannel = "chargenet_deliveries"

// Delays between the listener's attempts to reconnect after a failure: doubling from
// listenRetryMin up to listenRetryMax. The dispatcher's poll covers the gap.
const (
	listenRetryMin = 100 * time.Millisecond
	listenRetryMax = 10 * time.Second
)

// startListeners starts, each once its hook is wanted, the listeners of the store's
// Hooks: deliveriesChannel once OnEvents has been given a function, chargeboxesChannel
// once OnChargeboxSignal has. Close stops them.
//
// The listener of deliveriesChannel calls Hooks.Announce on each notification sent by
// another session: deliveries that another replica queued on the database (the store's
// own commits announce themselves; their notifications, recognised by the backend
// process id of the pool's connections, are skipped). The listener of
// chargeboxesChannel calls Hooks.Signal with the box id of each notification, its own
// transactions' included. Each receives its notifications on a dedicated connection
// (not one of the pool), opened again after any failure; once it listens again after a
// failure, it announces once, or signals 0 (something may have been missed: check every
// box), for what was sent meanwhile.
func (s *Store) startListeners() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopListen = cancel
	s.listeners.Add(2)
	go func() {
		defer s.listeners.Done()
		select {
		case <-s.hooks.EventsWanted():
		case <-ctx.Done():
			return
		}
		s.listen(ctx, deliveriesChannel, &s.listening, s.hooks.Announce, func(n *pgconn.Notification) {
			if _, own := s.pids.Load(n.PID); !own {
				s.hooks.Announce()
			}
		})
	}()
	go func() {
		defer s.listeners.Done()
		select {
		case <-s.hooks.SignalsWanted():
		case <-ctx.Done():
			return
		}
		var listening atomic.Bool
		s.listen(ctx, chargeboxesChannel, &listening, func() { s.hooks.Signal(0) }, func(n *pgconn.Notification) {
			if id, err := strconv.ParseInt(n.Payload, 10, 64); err == nil {
				s.hooks.Signal(id)
			}
		})
	}()
}

// listen receives the notifications of channel until ctx ends, reconnecting after
// failures: see listenConn.
func (s *Store) listen(ctx context.Context, channel string, listening *atomic.Bool, again func(), notified func(*pgconn.Notification)) {
	delay := listenRetryMin
	for first := true; ; first = false {
		if s.listenConn(ctx, channel, listening, !first, again, notified) {
			delay = listenRetryMin // it listened: a later failure starts the delays again
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, listenRetryMax)
	}
}

// listenConn opens a connection, listens on channel, calls again once when isAgain is
// set, and then notified with each notification, until the connection fails or ctx
// ends. It reports whether it listened.
func (s *Store) listenConn(ctx context.Context, channel string, listening *atomic.Bool, isAgain bool, again func(),
	notified func(*pgconn.Notification)) bool {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return false
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+channel); err != nil {
		return false
	}
	listening.Store(true)
	defer listening.Store(false)
	if isAgain {
		again()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true
		}
		notified(n)
	}
}

// trackPIDs makes the pool record the backend process id of each of its connections
// in s.pids while it is open.
func (s *Store) trackPIDs(cfg *pgxpool.Config) {
	after, before := cfg.AfterConnect, cfg.BeforeClose
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, c); err != nil {
				return err
			}
		}
		s.pids.Store(c.PgConn().PID(), struct{}{})
		return nil
	}
	cfg.BeforeClose = func(c *pgx.Conn) {
		s.pids.Delete(c.PgConn().PID())
		if before != nil {
			before(c)
		}
	}
}
