package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
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
		go s.listen(ctx)
	})
}

// listen receives the notifications of deliveriesChannel until ctx ends, reconnecting
// after failures.
func (s *Store) listen(ctx context.Context) {
	defer close(s.listened)
	delay := listenRetryMin
	for first := true; ; first = false {
		if s.listenConn(ctx, !first) {
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

// listenConn opens a connection, listens on deliveriesChannel, announces once when
// again is set, and then on each notification of another session, until the
// connection fails or ctx ends. It reports whether it listened.
func (s *Store) listenConn(ctx context.Context, again bool) bool {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return false
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+deliveriesChannel); err != nil {
		return false
	}
	s.listening.Store(true)
	defer s.listening.Store(false)
	if again {
		s.Announce()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true
		}
		if _, own := s.pids.Load(n.PID); !own {
			s.Announce()
		}
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
