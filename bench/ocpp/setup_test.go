package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/chargenet/chargenet/server"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInventoryImports checks that the generated import file is one chargenet import
// takes: the benchmark's boxes would otherwise have no EVSEs.
func TestInventoryImports(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, writeInventory(&buf, 250, 10001, time.Now()))
	inv, err := server.DecodeInventory(&buf)
	require.NoError(t, err)
	ctx := context.Background()
	store, err := sqlite.Open(ctx, ":memory:")
	require.NoError(t, err)
	defer func() { _ = store.Close() }()
	require.NoError(t, store.Import(ctx, inv))
	e, err := store.EVSE(ctx, evseUID(249))
	require.NoError(t, err)
	assert.Equal(t, int64(10250), e.ChargeboxID)
	assert.Len(t, inv.Locations, locations)
}
