package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/chargenet/chargenet"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWrap checks which failures the store reports as ErrUnavailable, and after which
// it discards its connections, without a database.
func TestWrap(t *testing.T) {
	pg := func(code string) error { return &pgconn.PgError{Severity: "FATAL", Code: code, Message: "m"} }
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, l.Close()) // nothing listens there now
	_, connectErr := pgconn.Connect(t.Context(), "postgres://u@"+l.Addr().String()+"/db?sslmode=disable")
	var ce *pgconn.ConnectError
	require.ErrorAs(t, connectErr, &ce)
	tests := []struct {
		name        string
		err         error
		unavailable bool
		lost        bool // the connections are lost: the pool is reset
	}{
		{"admin shutdown", pg("57P01"), true, true},
		{"crash shutdown", pg("57P02"), true, true},
		{"starting up", pg("57P03"), true, false},
		{"connection failure", pg("08006"), true, true},
		{"too many connections", pg("53300"), true, false},
		{"disk full", pg("53100"), true, false},
		{"statement timeout", pg("57014"), true, false},
		{"lock timeout", pg("55P03"), true, false},
		{"read-only standby", pg("25006"), true, true},
		{"wrapped server shutdown", fmt.Errorf("q: %w", pg("57P01")), true, true},
		{"connect error", connectErr, true, true},
		{"dial refused", dial, true, true},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true, true},
		{"unexpected EOF", fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), true, true},
		{"closed connection", fmt.Errorf("x: %w", pgconn.ErrConnClosed), true, true},
		{"closed pool", puddle.ErrClosedPool, true, false},
		{"deadline", fmt.Errorf("acquire: %w", context.DeadlineExceeded), true, false},

		{"canceled", fmt.Errorf("acquire: %w", context.Canceled), false, false},
		{"canceled, connection closed", errors.Join(context.Canceled, io.ErrUnexpectedEOF), false, false},
		{"unique violation", pg("23505"), false, false},
		{"syntax error", pg("42601"), false, false},
		{"undefined table", pg("42P01"), false, false},
		{"other", errors.New("boom"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wrapError("op", tt.err)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.err, "the cause stays visible")
			assert.Contains(t, err.Error(), "postgres: op: ")
			assert.Equal(t, tt.lost, connectionLost(tt.err), "connectionLost")
			if !tt.unavailable {
				assert.NotErrorIs(t, err, chargenet.ErrUnavailable)
				return
			}
			assert.ErrorIs(t, err, chargenet.ErrUnavailable)
			var de *chargenet.Error
			require.ErrorAs(t, err, &de)
			assert.Equal(t, chargenet.CodeUnavailable, de.Code)
			assert.Equal(t, "database unavailable", de.Message)
			assert.Equal(t, err, wrapError("again", err), "wrapping twice changes nothing")
		})
	}

	assert.NoError(t, wrapError("op", nil))
	de := chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "uid", "EVSE with uid 1 not found")
	assert.Same(t, de, wrapError("op", de), "domain errors pass unchanged")
}
