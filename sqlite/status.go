package sqlite

import (
	"context"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/groupcommit"
)

// ApplyStatusNotification applies n through the store's group commit (see
// UpdateConnector): the group reads the charge box's EVSEs with their connectors and
// status times, lets chargenet.ApplyStatusNotification decide (its errors are returned
// unchanged), writes the changed EVSEs and connectors, and records the events, in one
// transaction with the other changes of its group. Other errors are wrapped driver
// errors.
func (s *Store) ApplyStatusNotification(ctx context.Context, n *chargenet.StatusNotification, actor string, now time.Time) (*chargenet.StatusResult, error) {
	note := *n
	op := &groupcommit.Op{Note: &note, Actor: actor, Now: now.UTC()}
	if err := s.submit(ctx, op, "apply status notification"); err != nil {
		return nil, err
	}
	return op.Result, nil
}
