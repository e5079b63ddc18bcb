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

// OnEvents sets the function the store calls (chargenet.EventAnnouncer) after each of
// its commits that queued webhook deliveries and, from the first call with a non-nil f,
// also on each notification of deliveriesChannel sent by another session: deliveries
// that another replica queued on the database (the store's own commits announce
// themselves; their notifications, recognised by the backend process id of the pool's
// connections, are skipped). The notifications are received on a dedicated connection
// (not one of the pool), which is opened again after any failure; once it listens again
// after a failure, the store calls f once, for what was queued meanwhile. nil stops the
// calls; the connection stays open until Close.
func (s *Store) OnEvents(f func()) {
	s.Announcer.OnEvents(f)
	if f == nil {
		return
	}
	s.listenOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopListen, s.listened = cancel, make(chan struct{})
		go func() {
			defer close(s.listened)
			s.listen(ctx, deliveriesChannel, &s.listening, s.Announce, func(n *pgconn.Notification) {
				if _, own := s.pids.Load(n.PID); !own {
					s.Announce()
				}
			})
		}()
	})
}

// OnChargeboxSignal makes the store call f (chargenet.ChargeboxSignals) with the box id
// of each notification of chargeboxesChannel, its own transactions' included, and with
// 0 once it listens again after a failure (something may have been missed: check every
// box). The notifications are received on a dedicated connection, opened again after
// any failure, until Close. Only the first call's f is used.
func (s *Store) OnChargeboxSignal(f func(id int64)) {
	s.signalOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopSignals, s.signalled = cancel, make(chan struct{})
		var listening atomic.Bool
		go func() {
			defer close(s.signalled)
			s.listen(ctx, chargeboxesChannel, &listening, func() { f(0) }, func(n *pgconn.Notification) {
				if id, err := strconv.ParseInt(n.Payload, 10, 64); err == nil {
					f(id)
				}
			})
		}()
	})
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
