package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockedBuffer is a bytes.Buffer safe for the flusher goroutine and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestLogBuffer(t *testing.T) {
	out := &lockedBuffer{}
	buf := newLogBuffer(out)
	log := slog.New(flushingHandler{slog.NewJSONHandler(buf, nil), buf}).With("app", "chargenet")

	log.Info("request", "path", "/v1/locations")
	assert.Empty(t, out.String(), "info lines wait in the buffer")
	log.Warn("unavailable")
	assert.Contains(t, out.String(), `"msg":"request"`, "a warning flushes what came before it")
	assert.Contains(t, out.String(), `"msg":"unavailable"`)
	assert.Contains(t, out.String(), `"app":"chargenet"`, "derived loggers keep the handler")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); buf.run(ctx) }()
	log.Info("later")
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "later") }, 2*time.Second, 10*time.Millisecond,
		"the flusher writes buffered lines")
	log.Info("last")
	cancel()
	<-done
	assert.Contains(t, out.String(), "last", "stopping the flusher writes what is left")
}
