package reliability

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet/internal/proctest"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBackupUnderWriters takes `chargenet backup` of a SQLite database while 16 writers
// PATCH it through a running server, each writer its own EVSE with ever larger values.
// The copy passes PRAGMA integrity_check; served by a new `chargenet serve` (the
// restore), every EVSE holds at least the value acknowledged to its writer before the
// backup began, and no value that was never sent.
func TestBackupUnderWriters(t *testing.T) {
	const writers = 16
	dir := t.TempDir()
	srv := serve(t, "sqlite:"+filepath.Join(dir, "live.db"))
	a := newAPI(srv.Base, true)

	var (
		acked [writers]atomic.Int64 // the last value acknowledged to each writer
		sent  [writers]atomic.Int64 // the largest value each writer sent
		stop  atomic.Bool
		wg    sync.WaitGroup
		fails atomic.Int64
	)
	uid := func(w int) int64 { return int64(1001 + w) }
	for w := range writers {
		wg.Go(func() {
			for v := int64(1); !stop.Load(); v++ {
				sent[w].Store(v)
				res, err := a.do(http.MethodPatch, fmt.Sprintf("/v2/evses/%d/connectors/1", uid(w)), patchBody("maxElectricPower", float64(v)))
				if err != nil || res.status != http.StatusOK {
					fails.Add(1)
					return
				}
				acked[w].Store(v)
			}
		})
	}
	// Let the writers get going, then note what was acknowledged before the backup.
	require.True(t, eventually(10*time.Second, func() bool {
		for w := range writers {
			if acked[w].Load() < 3 {
				return false
			}
		}
		return true
	}), "every writer had updates acknowledged")
	var before [writers]int64
	for w := range writers {
		before[w] = acked[w].Load()
	}
	copyPath := filepath.Join(dir, "backup.db")
	out, err := exec.Command(proctest.Binary(t), "backup", "--database", "sqlite:"+filepath.Join(dir, "live.db"), copyPath).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "integrity_check: ok")
	// The writers kept writing during the backup; stop them now.
	time.Sleep(100 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	require.Zero(t, fails.Load(), "every PATCH succeeded")
	var after [writers]int64
	for w := range writers {
		after[w] = acked[w].Load()
	}
	require.NoError(t, srv.Stop(10*time.Second))

	// The copy is sound, checked here on its own.
	require.NoError(t, sqlite.IntegrityCheck(context.Background(), copyPath))
	// A second backup to the same file is refused: a backup never overwrites.
	out, err = exec.Command(proctest.Binary(t), "backup", "--database", "sqlite:"+filepath.Join(dir, "live.db"), copyPath).CombinedOutput()
	assert.Error(t, err)
	assert.Contains(t, string(out), "already exists")

	// Restore: serve a copy of the backup.
	restored := filepath.Join(dir, "restored", "chargenet.db")
	require.NoError(t, os.MkdirAll(filepath.Dir(restored), 0o755))
	b, err := os.ReadFile(copyPath)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(restored, b, 0o600))
	srv2 := serve(t, "sqlite:"+restored)
	a2 := newAPI(srv2.Base, true)
	var newer int
	for w := range writers {
		e, _ := a2.getEVSE(t, uid(w))
		got := int64(e.field(1, "maxElectricPower"))
		assert.GreaterOrEqual(t, got, before[w], "EVSE %d holds the value acknowledged before the backup", uid(w))
		assert.LessOrEqual(t, got, sent[w].Load(), "EVSE %d holds no value that was never sent", uid(w))
		if got > before[w] {
			newer++
		}
	}
	t.Logf("writers: %d; acknowledged before the backup: %v; at the end: %v; EVSEs whose copy is newer than before the backup: %d",
		writers, before, after, newer)
}
