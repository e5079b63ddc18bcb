package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/chargenet/chargenet"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

// wrap is wrapError and, when err shows that the connections to the server are lost
// (see connectionLost), also closes every pooled connection (pgxpool.Pool.Reset): the
// next call then dials anew instead of failing on another dead connection, so the store
// works again as soon as the server is back.
func (s *Store) wrap(op string, err error) error {
	if err != nil && connectionLost(err) {
		s.pool.Reset()
	}
	return wrapError(op, err)
}

// wrapError is chargenet.WrapStoreError for this store (see isUnavailable).
func wrapError(op string, err error) error {
	return chargenet.WrapStoreError("postgres", op, err, isUnavailable)
}

// isUnavailable reports whether err means that the database cannot serve requests right
// now, so that a retry later may succeed: the connection could not be made or was lost,
// the server is shutting down, starting, out of connections or resources, is a
// read-only standby, or did not answer in time. A canceled context is the caller giving
// up, not the database failing, and is not.
func isUnavailable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return unavailableState(pe.Code)
	}
	var ce *pgconn.ConnectError
	switch {
	case errors.As(err, &ce), // dial, TLS or startup failed: refused, unreachable, auth timeout
		errors.Is(err, context.DeadlineExceeded), // no answer within the caller's deadline
		pgconn.Timeout(err),
		errors.Is(err, puddle.ErrClosedPool), // the store is closed
		errors.Is(err, pgconn.ErrConnClosed), // the connection was lost earlier
		errors.Is(err, io.EOF),               // the server closed the connection
		errors.Is(err, io.ErrUnexpectedEOF),  // ... in the middle of a message
		errors.Is(err, syscall.ECONNREFUSED), // the socket failed
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ETIMEDOUT), // TCP keepalive or retransmission gave up
		errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH):
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) // any other failure of the socket
}

// connectionLost reports whether err shows that the server closed or lost the
// connection, or cannot be reached: then every other pooled connection is likely dead
// too (a restart, a failover, a network failure). A statement or lock timeout, a full
// server or the caller's deadline leave the connections usable and are not.
func connectionLost(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // pgx closed that one connection, as it must when a call is cut short
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "25006"
	}
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ETIMEDOUT) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// unavailableState reports whether a SQLSTATE means that the server cannot serve the
// request now rather than that the request is wrong.
func unavailableState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"): // connection exception
		return true
	case strings.HasPrefix(code, "53"): // insufficient resources: too many connections, disk full, out of memory
		return true
	case strings.HasPrefix(code, "57P"): // admin_shutdown, crash_shutdown, cannot_connect_now, database_dropped, idle_session_timeout
		return true
	}
	switch code {
	case "57014", // query_canceled: statement_timeout expired
		"55P03", // lock_not_available: lock_timeout expired
		"25006", // read_only_sql_transaction: connected to a standby, as after a failover
		"58000", // system_error
		"58030": // io_error
		return true
	}
	return false
}
