package chargenet_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goneNames are names the code had and has no more: a comment or a document that names
// one describes what is not there.
var goneNames = []string{
	"EVSEJSON", "LocationJSON", // the contract JSON is internal/wire's EncodeEVSE and EncodeLocation
	"EventAnnouncer", "chargenet.Announcer", "CommitReporter", "CommitHook", "CommitWaiter", // chargenet.Hooks
	"SetCommitWait",                            // the commit wait is an option of Open
	"chargenet.ReadCacheStats", "PoolReporter", // optional interfaces of a store
	"OperatorTransitions", "tracing.Propagator", "pendingOf", "ChargeboxToAPI", "server.Server", "observeMiddleware",
	"package webhook", "webhook.Dispatcher", "webhook.Pusher", "webhook.Config", // package outbox
}

// TestGoneNamesStayGone reads every Go, Markdown and YAML file of the repository outside
// gen/ and fails for each line that names one of goneNames.
func TestGoneNamesStayGone(t *testing.T) {
	var alts []string
	for _, n := range goneNames {
		alts = append(alts, regexp.QuoteMeta(n))
	}
	gone := regexp.MustCompile(`(^|[^A-Za-z0-9_])(` + strings.Join(alts, "|") + `)($|[^A-Za-z0-9_])`)
	self, err := filepath.Abs("names_test.go")
	require.NoError(t, err)
	files := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", ".tools", "gen", "data", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".yaml", ".yml":
		default:
			return nil
		}
		if abs, _ := filepath.Abs(path); abs == self {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for i, line := range strings.Split(string(b), "\n") {
			if m := gone.FindStringSubmatch(line); m != nil {
				t.Errorf("%s:%d names %s, which is gone: %s", path, i+1, m[2], strings.TrimSpace(line))
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, files, 100, "the walk reads the repository")
}
