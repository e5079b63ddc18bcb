package timestamp_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chargenet/chargenet/timestamp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimeJSON(t *testing.T) {
	tests := []struct {
		name string
		in   time.Time
		want string
	}{
		{"whole seconds", time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC), `"2026-11-01T10:00:00.000000Z"`},
		{"microseconds", time.Date(2026, 11, 1, 10, 0, 0, 120000, time.UTC), `"2026-11-01T10:00:00.000120Z"`},
		{"nanoseconds cut", time.Date(2026, 11, 1, 10, 0, 0, 123456789, time.UTC), `"2026-11-01T10:00:00.123456Z"`},
		{"in UTC", time.Date(2026, 11, 1, 11, 0, 0, 5000, time.FixedZone("CET", 3600)), `"2026-11-01T10:00:00.000005Z"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(timestamp.New(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(b))
			assert.Equal(t, tt.want, `"`+timestamp.Format(tt.in)+`"`)
			var back timestamp.Time
			require.NoError(t, json.Unmarshal(b, &back))
			assert.True(t, back.Equal(tt.in.Truncate(time.Microsecond)), "%s round-trips to the microsecond", back)
		})
	}
}

func TestTimeSortsAsText(t *testing.T) {
	a := timestamp.Format(time.Date(2026, 11, 1, 10, 0, 0, 900000000, time.UTC))
	b := timestamp.Format(time.Date(2026, 11, 1, 10, 0, 0, 950000, time.UTC).Add(time.Second))
	c := timestamp.Format(time.Date(2026, 11, 1, 10, 0, 1, 1000, time.UTC))
	assert.Less(t, a, c)
	assert.Less(t, c, b)
}

func TestTimeUnmarshalAnyRFC3339(t *testing.T) {
	for in, want := range map[string]time.Time{
		`"2026-11-01T10:00:00Z"`:           time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC),
		`"2026-11-01T11:00:00.5+01:00"`:    time.Date(2026, 11, 1, 10, 0, 0, 500000000, time.UTC),
		`"2026-11-01T10:00:00.123456789Z"`: time.Date(2026, 11, 1, 10, 0, 0, 123456789, time.UTC),
	} {
		var got timestamp.Time
		require.NoError(t, json.Unmarshal([]byte(in), &got), in)
		assert.True(t, got.Equal(want), "%s: %s", in, got)
	}
	var bad timestamp.Time
	assert.Error(t, json.Unmarshal([]byte(`"yesterday"`), &bad))
	assert.Error(t, json.Unmarshal([]byte(`12`), &bad))
}

func TestPtr(t *testing.T) {
	assert.Nil(t, timestamp.Ptr(nil))
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	assert.Equal(t, &timestamp.Time{Time: at}, timestamp.Ptr(&at))
}
