package reliability

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOCPPRPCStrict drives the real binary with a charge box nobody here wrote: the
// npm package ocpp-rpc 2.2.1 with strictMode, which validates every message both ways
// against the official OCPP 1.6 and 2.0.1 JSON schemas (scripts/ocpp-rpc-box.mjs), on
// SQLite and PostgreSQL.
func TestOCPPRPCStrict(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(root, "tools/node_modules/ocpp-rpc")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("tools/node_modules/ocpp-rpc is missing: run `make tools-npm` (%v)", err)
		}
		t.Skip("tools/node_modules/ocpp-rpc is missing: run `make tools-npm` to run the ocpp-rpc proof")
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			srv, base := ocppServe(t, b.database(t)) // --demo: boxes 501-520 with the development password
			for _, c := range []struct{ identity, protocol string }{{"501", "ocpp1.6"}, {"502", "ocpp2.0.1"}} {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				cmd := exec.CommandContext(ctx, "node", filepath.Join(root, "scripts/ocpp-rpc-box.mjs"), base, c.identity,
					"dev-ocpp-password-change-me", c.protocol, srv.Base, key)
				out, err := cmd.CombinedOutput()
				cancel()
				t.Logf("%s:\n%s", c.protocol, out)
				assert.NoError(t, err, "the ocpp-rpc box failed over %s\nserver log:\n%s", c.protocol, srv.Log())
			}
		})
	}
}
