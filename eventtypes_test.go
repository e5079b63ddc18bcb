package chargenet

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEmbeddedEventTypes(t *testing.T) {
	types, err := EventTypes()
	require.NoError(t, err)
	require.NotEmpty(t, types)
	for _, et := range types {
		assert.Equal(t, et.APIVersions[len(et.APIVersions)-1], et.Latest)
	}
}

func TestParseEventTypes(t *testing.T) {
	got, err := parseEventTypes([]byte(`{"event_types":[{"type":"evse.x","api_versions":["1.10","1.9","2.0","1.0"]}]}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"1.0", "1.9", "1.10", "2.0"}, got[0].APIVersions)
	assert.Equal(t, "2.0", got[0].Latest, "latest is computed numerically, never written by hand")

	bad := map[string]string{
		"duplicate type":    `{"event_types":[{"type":"a.b","api_versions":["1.0"]},{"type":"a.b","api_versions":["1.0"]}]}`,
		"no versions":       `{"event_types":[{"type":"a.b","api_versions":[]}]}`,
		"bad version":       `{"event_types":[{"type":"a.b","api_versions":["v1"]}]}`,
		"duplicate version": `{"event_types":[{"type":"a.b","api_versions":["1.0","1.00"]}]}`,
		"bad name":          `{"event_types":[{"type":"Evse Updated","api_versions":["1.0"]}]}`,
		"not JSON":          `{"event_types":`,
	}
	for name, doc := range bad {
		_, err := parseEventTypes([]byte(doc))
		assert.Error(t, err, name)
	}
}
