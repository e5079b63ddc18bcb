package postgres_test

import (
	"testing"

	"github.com/chargenet/chargenet/storetest"
)

// BenchmarkPatchSpread is storetest.BenchUpdateConnector: group-committed PATCHes
// spread over the demo EVSEs, without and with a subscribed webhook.
func BenchmarkPatchSpread(b *testing.B) {
	for _, sub := range []struct {
		name string
		on   bool
	}{{"unsubscribed", false}, {"subscribed", true}} {
		b.Run(sub.name, func(b *testing.B) {
			storetest.BenchUpdateConnector(b, benchStore(b, false), sub.on)
		})
	}
}
