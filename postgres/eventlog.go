package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/chargenet/chargenet"
)

// errNotBuilt is returned by the event log operations not written yet.
var errNotBuilt = errors.New("postgres: not implemented yet")

// ListEvents implements chargenet.EventLog.
func (s *Store) ListEvents(ctx context.Context, seek chargenet.ChangeSeek[int64], types []string) ([]chargenet.Event, error) {
	return nil, errNotBuilt
}

// Event implements chargenet.EventLog.
func (s *Store) Event(ctx context.Context, id string) (*chargenet.Event, error) {
	return nil, errNotBuilt
}

// SendTestEvent implements chargenet.EventLog.
func (s *Store) SendTestEvent(ctx context.Context, owner, webhookID string, ev chargenet.Event, now time.Time) error {
	return errNotBuilt
}

// ReplayEvents implements chargenet.EventLog.
func (s *Store) ReplayEvents(ctx context.Context, owner, webhookID string, r chargenet.Replay, now time.Time) (int, error) {
	return 0, errNotBuilt
}

// PruneEvents implements chargenet.EventLog.
func (s *Store) PruneEvents(ctx context.Context, before time.Time, limit int) (chargenet.Pruned, error) {
	return chargenet.Pruned{}, errNotBuilt
}
