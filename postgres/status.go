package postgres

import (
	"context"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/groupcommit"
)

// ApplyStatusNotification implements chargenet.EVSEService.ApplyStatusNotification, with
// its errors, through the group commit (see UpdateConnector): the group locks the charge
// box's EVSE rows in uid order, so that notifications of one box queue across replicas.
func (s *Store) ApplyStatusNotification(ctx context.Context, n *chargenet.StatusNotification, actor string, now time.Time) (*chargenet.StatusResult, error) {
	note := *n
	note.Timestamp = chargenet.Stamp(n.Timestamp)
	op := &groupcommit.Op{Note: &note, Actor: actor, Now: chargenet.Stamp(now)}
	if err := s.submit(ctx, op); err != nil {
		return nil, s.wrap("apply status notification", err)
	}
	return op.Result, nil
}
