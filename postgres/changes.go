package postgres

import (
	"context"

	"github.com/chargenet/chargenet"
)

// ListEVSEChanges implements chargenet.EventLog.
func (s *Store) ListEVSEChanges(ctx context.Context, seek chargenet.ChangeSeek[int64]) ([]chargenet.EVSE, error) {
	return nil, errNotBuilt
}

// ListLocationChanges implements chargenet.EventLog.
func (s *Store) ListLocationChanges(ctx context.Context, seek chargenet.ChangeSeek[string]) ([]chargenet.Location, error) {
	return nil, errNotBuilt
}
