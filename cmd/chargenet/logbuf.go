package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// logFlushInterval bounds how long a buffered log line waits before it is written.
const logFlushInterval = 100 * time.Millisecond

// logBuffer is the log destination of `chargenet serve`: lines are copied into a 64 KiB
// buffer and written by a flusher every logFlushInterval (or when the buffer is full),
// so a request's log line costs a copy, not a write system call. Warnings and errors
// are written at once (see flushingHandler). Safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func newLogBuffer(w io.Writer) *logBuffer { return &logBuffer{w: bufio.NewWriterSize(w, 64<<10)} }

// Write buffers p.
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

// Flush writes what is buffered.
func (b *logBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Flush()
}

// run flushes every logFlushInterval until ctx ends, then once more.
func (b *logBuffer) run(ctx context.Context) {
	t := time.NewTicker(logFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = b.Flush()
			return
		case <-t.C:
			_ = b.Flush()
		}
	}
}

// flushingHandler writes warnings and errors through at once: they matter most when
// the process is about to die.
type flushingHandler struct {
	slog.Handler
	buf *logBuffer
}

// Handle formats the record into the buffer and flushes it for WARN and above.
func (h flushingHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		_ = h.buf.Flush()
	}
	return err
}

// WithAttrs keeps the flushing behaviour on derived handlers.
func (h flushingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushingHandler{h.Handler.WithAttrs(attrs), h.buf}
}

// WithGroup keeps the flushing behaviour on derived handlers.
func (h flushingHandler) WithGroup(name string) slog.Handler {
	return flushingHandler{h.Handler.WithGroup(name), h.buf}
}
