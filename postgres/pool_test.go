package postgres

import (
	"testing"

	"github.com/chargenet/chargenet"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPoolSize checks where the pool size comes from: Options, else the URL, else
// DefaultMaxConns.
func TestPoolSize(t *testing.T) {
	for _, c := range []struct {
		name string
		url  string
		opts Options
		want int32
	}{
		{"default", "postgres://localhost/x", Options{}, DefaultMaxConns()},
		{"from the URL", "postgres://localhost/x?pool_max_conns=3", Options{}, 3},
		{"from Options, over the URL", "postgres://localhost/x?pool_max_conns=3", Options{MaxConns: 5}, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := pgxpool.ParseConfig(c.url)
			require.NoError(t, err)
			require.NoError(t, c.opts.apply(cfg))
			assert.Equal(t, c.want, cfg.MaxConns)
		})
	}
	assert.GreaterOrEqual(t, DefaultMaxConns(), int32(8))
}

// TestWithoutNUL checks the keys PostgreSQL is given for seeks whose key holds a NUL.
func TestWithoutNUL(t *testing.T) {
	type seek = chargenet.Seek[string]
	assert.Equal(t, seek{Key: "LOC-1", HasKey: true, Limit: 3}, withoutNUL(seek{Key: "LOC-1\x00zz", HasKey: true, Limit: 3}))
	assert.Equal(t, seek{Key: "LOC-1", HasKey: true, Inclusive: true, Backward: true, Limit: 1},
		withoutNUL(seek{Key: "LOC-1\x00", HasKey: true, Backward: true, Limit: 1}))
	assert.Equal(t, seek{Key: "LOC-1", HasKey: true, Limit: 1},
		withoutNUL(seek{Key: "LOC-1\x00a", HasKey: true, Inclusive: true, Limit: 1}), "no id equals a key holding a NUL")
	assert.Equal(t, seek{Key: "LOC-1", HasKey: true, Inclusive: true, Backward: true, Limit: 1},
		withoutNUL(seek{Key: "LOC-1\x00a", HasKey: true, Inclusive: true, Backward: true, Limit: 1}))
	assert.Equal(t, seek{Key: "LOC-1", HasKey: true}, withoutNUL(seek{Key: "LOC-1", HasKey: true}))
	assert.Equal(t, seek{Limit: 2}, withoutNUL(seek{Limit: 2}))
}
