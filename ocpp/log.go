package ocpp

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/lorenzodonini/ocpp-go/ocppj"
)

var loggerOnce sync.Once

// setLibraryLogger routes ocpp-go's log into l. The library logs each malformed frame
// at Error, so that a box could flood the log: its Error and Info lines go to Debug;
// the service logs what matters itself. New calls it.
//
// The setting is process-wide: ocppj's logger is a global of ocpp-go, set once per
// process, so the first Service's Logger receives the library's lines of every Service
// (and of any other user of ocppj) in the process; later calls change nothing.
func setLibraryLogger(l *slog.Logger) {
	loggerOnce.Do(func() { ocppj.SetLogger(libraryLogger{l}) })
}

// libraryLogger implements ocpp-go's logging.Logger, everything at slog's Debug level.
type libraryLogger struct{ l *slog.Logger }

func (g libraryLogger) Debug(args ...any)            { g.log(fmt.Sprint(args...)) }
func (g libraryLogger) Debugf(f string, args ...any) { g.logf(f, args...) }
func (g libraryLogger) Info(args ...any)             { g.log(fmt.Sprint(args...)) }
func (g libraryLogger) Infof(f string, args ...any)  { g.logf(f, args...) }
func (g libraryLogger) Error(args ...any)            { g.log(fmt.Sprint(args...)) }
func (g libraryLogger) Errorf(f string, args ...any) { g.logf(f, args...) }

func (g libraryLogger) logf(f string, args ...any) {
	if g.l.Enabled(context.Background(), slog.LevelDebug) { // formatting whole frames costs
		g.l.Debug("ocpp-go: " + fmt.Sprintf(f, args...))
	}
}

func (g libraryLogger) log(msg string) {
	if g.l.Enabled(context.Background(), slog.LevelDebug) {
		g.l.Debug("ocpp-go: " + msg)
	}
}
