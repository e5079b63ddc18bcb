package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPairedRatios checks that each round's ratio divides the figures of that round, in
// round order, and that a round missing either side gives none.
func TestPairedRatios(t *testing.T) {
	samples := []sample{
		{endpoint: "evse", target: "pg_w", round: 2, rps: 900},
		{endpoint: "evse", target: "pg_w_ro", round: 1, rps: 1000},
		{endpoint: "evse", target: "pg_w", round: 1, rps: 800},
		{endpoint: "evse", target: "pg_w_ro", round: 2, rps: 1000},
		{endpoint: "evse", target: "pg_w", round: 3, rps: 700}, // no read-only partner
		{endpoint: "locations", target: "pg_w_ro", round: 3, rps: 50},
		{endpoint: "evse", target: "full_w_ro", round: 3, rps: 2000},
	}
	assert.Equal(t, []float64{0.8, 0.9}, pairedRatios(samples, "evse", "pg_w", "pg_w_ro"))
	assert.Empty(t, pairedRatios(samples, "locations", "pg_w", "pg_w_ro"))
	assert.InDelta(t, 0.85, statOf(pairedRatios(samples, "evse", "pg_w", "pg_w_ro")).med, 1e-9)
}
