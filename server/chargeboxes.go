package server

import (
	"context"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/timestamp"
)

// chargeboxStore is what the reads of charge boxes use of a store.
type chargeboxStore interface {
	ListChargeboxes(ctx context.Context, seek chargenet.Seek[int64]) ([]chargenet.Chargebox, error)
	Chargebox(ctx context.Context, id int64) (*chargenet.Chargebox, error)
}

// chargeboxes answers the reads of the registered charge boxes.
type chargeboxes struct {
	store   chargeboxStore
	cursors *chargenet.CursorCodec
}

// ListChargeboxes answers GET /v2/chargeboxes: one page of the registered charge boxes.
func (s *chargeboxes) ListChargeboxes(ctx context.Context, req gen.ListChargeboxesRequestObject) (gen.ListChargeboxesResponseObject, error) {
	page, err := chargenet.Paginate(ctx, s.cursors, chargenet.ListChargeboxes, deref(req.Params.Cursor), limit(req.Params.Limit),
		s.store.ListChargeboxes, func(c *chargenet.Chargebox) int64 { return c.ID })
	if err != nil {
		return nil, err
	}
	out := gen.RegisteredChargeboxPage{Data: make([]gen.RegisteredChargebox, len(page.Items)), Pagination: pagination(page)}
	for i := range page.Items {
		out.Data[i] = chargeboxToAPI(&page.Items[i])
	}
	return gen.ListChargeboxes200JSONResponse{Body: out}, nil
}

// GetChargebox answers GET /v2/chargeboxes/{chargeboxId}.
func (s *chargeboxes) GetChargebox(ctx context.Context, req gen.GetChargeboxRequestObject) (gen.GetChargeboxResponseObject, error) {
	c, err := s.store.Chargebox(ctx, req.ChargeboxId)
	if err != nil {
		return nil, err
	}
	return gen.GetChargebox200JSONResponse{Body: chargeboxToAPI(c)}, nil
}

// chargeboxToAPI converts a charge box to the contract's Chargebox: protocol and
// connectedAt only while connected.
func chargeboxToAPI(c *chargenet.Chargebox) gen.RegisteredChargebox {
	out := gen.RegisteredChargebox{ChargeboxId: c.ID, Identity: c.Identity, Connected: c.Connected(), LastSeenAt: timestamp.Ptr(c.LastSeenAt),
		EvseUids: c.EVSEUIDs, Availability: make([]gen.EvseAvailability, len(c.Availability))}
	if out.EvseUids == nil {
		out.EvseUids = []int64{}
	}
	if c.Connected() {
		p := gen.RegisteredChargeboxProtocol(c.Protocol)
		out.Protocol, out.ConnectedAt = &p, timestamp.Ptr(c.ConnectedAt)
	}
	if b := c.Boot; b != nil {
		out.Boot = &gen.ChargeboxBoot{Vendor: b.Vendor, Model: b.Model, BootedAt: timestamp.New(b.At),
			SerialNumber: optional(b.SerialNumber), FirmwareVersion: optional(b.FirmwareVersion)}
	}
	for i, a := range c.Availability {
		out.Availability[i] = gen.EvseAvailability{EvseUid: a.EVSEUID, State: gen.EvseAvailabilityState(a.State),
			RequestedAt: timestamp.New(a.RequestedAt), Answer: gen.EvseAvailabilityAnswer(a.Answer), AnsweredAt: timestamp.Ptr(a.AnsweredAt)}
	}
	return out
}
