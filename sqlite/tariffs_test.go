package sqlite

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTariffsRoundTrip(t *testing.T) {
	tests := [][]string{
		nil, {}, {""}, {"", ""}, {"AC-STANDARD"}, {"DC-FAST", "DC-ROAMING"},
		{`a"b`}, {`a\b`}, {`","`, `"`}, {"ü-tariff", "<&>"}, {"tab\there"}, {"a", "", "b"},
	}
	for _, ids := range tests {
		enc, err := encodeTariffs(ids)
		require.NoError(t, err)
		got, err := decodeTariffs(enc)
		require.NoError(t, err, enc)
		want := ids
		if want == nil {
			want = []string{}
		}
		assert.Equal(t, want, got, "round trip of %s", enc)
	}
	// Arrays written by others than encodeTariffs still decode.
	for _, raw := range []string{`[ "a", "b" ]`, `["a" ,"b"]`, `["a","b"] `, `null`} {
		var want []string
		require.NoError(t, json.Unmarshal([]byte(raw), &want))
		if want == nil {
			want = []string{}
		}
		got, err := decodeTariffs(raw)
		require.NoError(t, err, raw)
		assert.Equal(t, want, got, raw)
	}
}
