package proctest

import (
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Cluster is a private PostgreSQL cluster of one test, made by
// scripts/pg-test-cluster.sh, which the test may stop and start.
type Cluster struct {
	// URL connects to the cluster's postgres database.
	URL string
	// Dir is the data directory; Bin the directory of the PostgreSQL binaries.
	Dir, Bin string
	// Port is the TCP port on 127.0.0.1.
	Port string
}

// StartCluster starts a private cluster with the binaries of CHARGENET_PG_BIN, removed
// when tb ends; the test may stop and start it while the shared cluster of
// CHARGENET_TEST_POSTGRES serves other test processes. Without CHARGENET_PG_BIN and
// CHARGENET_PG_DIR (see scripts/pg-test-cluster.sh) it skips tb, or fails it when CI
// is set.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	bin := os.Getenv("CHARGENET_PG_BIN")
	if bin == "" || os.Getenv("CHARGENET_PG_DIR") == "" {
		if os.Getenv("CI") != "" {
			tb.Fatal("CHARGENET_PG_DIR and CHARGENET_PG_BIN are not set; CI runs every PostgreSQL test (see scripts/pg-test-cluster.sh)")
		}
		tb.Skip("CHARGENET_PG_DIR and CHARGENET_PG_BIN not set (see scripts/pg-test-cluster.sh)")
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "pg-test-cluster.sh")
	cmd := exec.Command(script, "start")
	cmd.Env = append(os.Environ(), "CHARGENET_PG_BIN="+bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("pg-test-cluster.sh start: %v: %s", err, stderr.String())
	}
	c := &Cluster{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		if !ok {
			tb.Fatalf("pg-test-cluster.sh start printed %q", sc.Text())
		}
		v = strings.Trim(v, "'")
		switch k {
		case "CHARGENET_TEST_POSTGRES":
			c.URL = v
		case "CHARGENET_PG_DIR":
			c.Dir = v
		case "CHARGENET_PG_BIN":
			c.Bin = v
		}
	}
	if c.Dir == "" || c.URL == "" {
		tb.Fatalf("pg-test-cluster.sh start printed no cluster: %s", out)
	}
	tb.Cleanup(func() {
		if out, err := exec.Command(script, "stop", c.Dir).CombinedOutput(); err != nil {
			tb.Errorf("pg-test-cluster.sh stop: %v: %s", err, out)
		}
	})
	parsed, err := url.Parse(c.URL)
	if err != nil {
		tb.Fatal(err)
	}
	c.Port = parsed.Port()
	return c
}

// Stop stops the cluster (fast shutdown: open connections are cut).
func (c *Cluster) Stop(tb testing.TB) {
	tb.Helper()
	c.pgctl(tb, "stop", "-m", "fast", "-w")
}

// Start starts the stopped cluster again on the same port.
func (c *Cluster) Start(tb testing.TB) {
	tb.Helper()
	c.pgctl(tb, "start", "-w", "-l", filepath.Join(c.Dir, "server.log"),
		"-o", fmt.Sprintf("-p %s -c listen_addresses=127.0.0.1 -k %s", c.Port, c.Dir))
}

// pgctl runs pg_ctl on the cluster, as user postgres when the test runs as root.
func (c *Cluster) pgctl(tb testing.TB, args ...string) {
	tb.Helper()
	name, all := filepath.Join(c.Bin, "pg_ctl"), append([]string{"-D", c.Dir}, args...)
	if os.Geteuid() == 0 {
		name, all = "runuser", append([]string{"-u", "postgres", "--", name}, all...)
	}
	if out, err := exec.Command(name, all...).CombinedOutput(); err != nil {
		tb.Fatalf("pg_ctl %v: %v: %s", args, err, out)
	}
}
