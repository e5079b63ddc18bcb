// Package proctest runs the real chargenet binary in tests: it builds ./cmd/chargenet
// once per test process, starts `chargenet serve` processes on free loopback ports,
// and stops them gracefully (SIGTERM) or kills them (SIGKILL). It also hands out
// throw-away PostgreSQL databases on the cluster named by CHARGENET_TEST_POSTGRES.
//
// A test package that uses it calls proctest.Main from its TestMain, so that the built
// binary is removed when the package's tests end.
package proctest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error
)

// Main runs the tests of a package and removes the binary Binary built, then exits
// with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// Binary returns the path of a chargenet binary built from this module's
// ./cmd/chargenet, building it on first use. It fails tb if the build fails.
func Binary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		if buildDir, buildErr = os.MkdirTemp("", "chargenet-bin-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "chargenet")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/chargenet")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/chargenet: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return binPath
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// Options configure a server process.
type Options struct {
	// Database is the --database value: sqlite:PATH or a postgres:// URL. Required.
	Database string
	// Keys are accepted API keys, passed in CHARGENET_API_KEYS.
	Keys []string
	// Env holds further KEY=VALUE variables (CHARGENET_CURSOR_SECRET, ...).
	Env []string
	// Args are further flags after `serve --addr ADDR --database DB`.
	Args []string
	// Addr is the listening address; empty picks a free loopback port.
	Addr string
	// ReadyTimeout bounds the wait for /readyz; 0 means 30 s.
	ReadyTimeout time.Duration
}

// Server is a running `chargenet serve` process.
type Server struct {
	// Base is the server's URL, as in http://127.0.0.1:PORT.
	Base string
	// Addr is the listening address.
	Addr string

	tb   testing.TB
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	err  error // the process's exit error, set before done is closed
}

// Start starts `chargenet serve` with opts and waits until /readyz answers 200. The
// process is killed when tb ends if it still runs. It fails tb if the process cannot
// start or exits before it is ready.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := start(tb, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func start(tb testing.TB, opts Options) (*Server, error) {
	if opts.Database == "" {
		return nil, errors.New("proctest: Options.Database is required")
	}
	addr := opts.Addr
	if addr == "" {
		addr = FreeAddr(tb)
	}
	args := append([]string{"serve", "--addr", addr, "--database", opts.Database}, opts.Args...)
	cmd := exec.Command(Binary(tb), args...)
	cmd.Env = append(os.Environ(), opts.Env...)
	if len(opts.Keys) > 0 {
		cmd.Env = append(cmd.Env, "CHARGENET_API_KEYS="+strings.Join(opts.Keys, ","))
	}
	s := &Server{Base: "http://" + addr, Addr: addr, tb: tb, cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("proctest: starting chargenet: %w", err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	tb.Cleanup(func() {
		if s.Running() {
			s.Kill()
		}
	})
	timeout := opts.ReadyTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	if err := s.WaitReady(timeout); err != nil {
		s.Kill()
		return nil, fmt.Errorf("%w\nserver log:\n%s", err, s.Log())
	}
	return s, nil
}

// WaitReady polls /readyz until it answers 200, the process exits or timeout passes.
func (s *Server) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		res, err := client.Get(s.Base + "/readyz")
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("proctest: chargenet exited before it was ready: %v", s.err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("proctest: chargenet not ready after %s", timeout)
		}
	}
}

// Running reports whether the process has not exited yet.
func (s *Server) Running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM and waits up to timeout for the process to exit. It returns the
// process's exit error (nil for exit status 0), or an error if it did not exit in time,
// in which case it is killed.
func (s *Server) Stop(timeout time.Duration) error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && s.Running() {
		return fmt.Errorf("proctest: SIGTERM: %w", err)
	}
	select {
	case <-s.done:
		return s.err
	case <-time.After(timeout):
		s.Kill()
		return fmt.Errorf("proctest: chargenet still running %s after SIGTERM", timeout)
	}
}

// Kill sends SIGKILL and waits for the process to exit.
func (s *Server) Kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// Done is closed when the process has exited.
func (s *Server) Done() <-chan struct{} { return s.done }

// Log returns what the process has written to stdout and stderr so far.
func (s *Server) Log() string { return s.log.String() }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// PostgresDatabase creates an empty database on the PostgreSQL server of
// CHARGENET_TEST_POSTGRES and returns its URL; the database is dropped when tb ends.
// It skips tb when CHARGENET_TEST_POSTGRES is unset, unless CI is set, in which case
// it fails: CI must run every backend.
func PostgresDatabase(tb testing.TB) string {
	tb.Helper()
	admin := os.Getenv("CHARGENET_TEST_POSTGRES")
	if admin == "" {
		if os.Getenv("CI") != "" {
			tb.Fatal("CHARGENET_TEST_POSTGRES is not set; CI runs every PostgreSQL test (see scripts/pg-test-cluster.sh)")
		}
		tb.Skip("CHARGENET_TEST_POSTGRES not set")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "proc_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("proctest: connecting to CHARGENET_TEST_POSTGRES: %v", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("proctest: creating database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			tb.Errorf("proctest: dropping database %s: %v", name, err)
			return
		}
		defer func() { _ = conn.Close(context.Background()) }()
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("proctest: dropping database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		tb.Fatalf("proctest: CHARGENET_TEST_POSTGRES must be a postgres:// URL, got %q", admin)
	}
	u.Path = "/" + name
	return u.String()
}
