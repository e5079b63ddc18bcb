package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/sqlitetest"
	"github.com/chargenet/chargenet/server"
	"github.com/chargenet/chargenet/sqlite"
)

// demoKey is the development API key the in-process servers accept.
const demoKey = "client-demo-key-0123456789"

// serverConfig adjusts the in-process server of a test.
type serverConfig struct {
	// wrap, if set, wraps the store the server uses (to inject failures).
	wrap func(chargenet.Store) chargenet.Store
	// rateLimit, if set, replaces server.DefaultRateLimit.
	rateLimit *server.RateLimit
	// now, if set, is the server's clock.
	now func() time.Time
}

// demoServer is the real service running in-process on 127.0.0.1 over SQLite in a
// temporary directory, holding chargenet.DemoInventory and accepting demoKey.
type demoServer struct {
	URL   string
	Store chargenet.Store
	close func()
}

// Close stops the server and removes its database.
func (s *demoServer) Close() { s.close() }

// newKey stores an API key named name with scopes, as the command line creates one,
// and returns its secret.
func (s *demoServer) newKey(name string, scopes ...string) (string, error) {
	secret := server.NewAPIKey()
	err := s.Store.CreateAPIKey(context.Background(), chargenet.APIKey{
		Name: name, Hash: chargenet.HashAPIKey(secret), Scopes: scopes, CreatedAt: time.Now().UTC().Truncate(time.Second),
	})
	return secret, err
}

// startDemoServer starts a demoServer. Examples call it directly; tests use newServer.
func startDemoServer(cfg serverConfig) (_ *demoServer, err error) {
	dir, err := os.MkdirTemp("", "chargenet-client-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	ctx := context.Background()
	path := filepath.Join(dir, "demo.db")
	if err := sqlitetest.Create(path); err != nil {
		return nil, err
	}
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("opening SQLite: %w", err)
	}
	if err := db.Import(ctx, chargenet.DemoInventory(time.Now())); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("importing the demo inventory: %w", err)
	}
	var store chargenet.Store = db
	if cfg.wrap != nil {
		store = cfg.wrap(db)
	}
	e, err := server.New(server.Config{
		Store:     store,
		Keys:      server.NewKeys(store, []string{demoKey}),
		Cursors:   chargenet.NewCursorCodec([]byte("client-test-cursor-secret-0123456789")),
		RateLimit: cfg.rateLimit,
		Now:       cfg.now,
	})
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	srv := httptest.NewServer(e) // listens on 127.0.0.1:0
	return &demoServer{URL: srv.URL, Store: db, close: func() {
		srv.Close()
		_ = db.Close()
		_ = os.RemoveAll(dir)
	}}, nil
}
