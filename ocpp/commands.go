package ocpp

import (
	"context"

	"github.com/chargenet/chargenet"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/core"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/availability"
	"github.com/lorenzodonini/ocpp-go/ocpp2.0.1/types"
)

// deliver sends each request of reqs that is not in flight already to c's box, each on
// a goroutine of its own (the box answers one request at a time; none once the service
// is closing), and records the
// answers. A request that fails or is not answered stays pending: it is sent again when
// the box reconnects or at the next sweep.
func (s *Service) deliver(c *conn, reqs []chargenet.AvailabilityRequest) {
	if !c.ready.Load() {
		return // ready delivers what is owed once the OCPP layer knows the connection
	}
	for _, a := range reqs {
		key := availabilityKey{a.EVSEUID, a.RequestedAt}
		s.mu.Lock()
		if s.inflight[key] {
			s.mu.Unlock()
			continue
		}
		s.inflight[key] = true
		s.mu.Unlock()
		started := s.group.Go(func() {
			defer func() {
				s.mu.Lock()
				delete(s.inflight, key)
				s.mu.Unlock()
			}()
			answer, err := s.changeAvailability(c, a)
			if err != nil {
				if s.ctx.Err() == nil {
					s.log.Info("ocpp: ChangeAvailability not answered; it stays pending", "identity", c.identity,
						"uid", a.EVSEUID, "state", a.State, "error", err.Error())
				}
				return
			}
			ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), messageTimeout)
			defer cancel()
			if err := s.cfg.Store.AnswerAvailability(ctx, a.EVSEUID, a.RequestedAt, answer, s.now()); err != nil {
				s.log.Warn("ocpp: recording a ChangeAvailability answer failed", "identity", c.identity, "uid", a.EVSEUID, "error", err.Error())
				return
			}
			s.log.Info("ocpp: ChangeAvailability answered", "identity", c.identity, "uid", a.EVSEUID, "state", a.State, "answer", answer)
		})
		if !started { // the service is closing: the request stays pending
			s.mu.Lock()
			delete(s.inflight, key)
			s.mu.Unlock()
		}
	}
}

// changeAvailability asks c's box to make EVSE a.EVSEUID a.State and returns its answer:
// OCPP 2.0.1 for the station's EVSE; 1.6 for each of the EVSE's connectors, answered
// Rejected when any rejected, else Scheduled when any scheduled, else Accepted.
func (s *Service) changeAvailability(c *conn, a chargenet.AvailabilityRequest) (string, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.CommandTimeout+messageTimeout)
	defer cancel()
	evses, err := s.boxEVSEs(ctx, c.box)
	if err != nil {
		return "", err
	}
	station, connectors, ok := chargenet.AvailabilityTargets(evses, a.EVSEUID)
	if !ok {
		return "", chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "uid", "EVSE %d is no longer one of charge box %d's", a.EVSEUID, c.box)
	}
	if c.protocol() == chargenet.ProtocolOCPP201 {
		status := availability.OperationalStatusOperative
		if a.State == chargenet.Inoperative {
			status = availability.OperationalStatusInoperative
		}
		got := make(chan result, 1)
		err := s.csms.ChangeAvailability(c.identity, func(r *availability.ChangeAvailabilityResponse, err error) {
			if err != nil {
				got <- result{err: err}
				return
			}
			got <- result{answer: string(r.Status)}
		}, status, func(r *availability.ChangeAvailabilityRequest) { r.Evse = &types.EVSE{ID: station} })
		if err != nil {
			return "", err
		}
		return wait(ctx, got)
	}
	typ := core.AvailabilityTypeOperative
	if a.State == chargenet.Inoperative {
		typ = core.AvailabilityTypeInoperative
	}
	answers := map[string]bool{}
	for _, k := range connectors {
		got := make(chan result, 1)
		err := s.cs16.ChangeAvailability(c.identity, func(r *core.ChangeAvailabilityConfirmation, err error) {
			if err != nil {
				got <- result{err: err}
				return
			}
			got <- result{answer: string(r.Status)}
		}, k, typ)
		if err != nil {
			return "", err
		}
		answer, err := wait(ctx, got)
		if err != nil {
			return "", err
		}
		answers[answer] = true
	}
	switch {
	case answers[chargenet.AnswerRejected]:
		return chargenet.AnswerRejected, nil
	case answers[chargenet.AnswerScheduled]:
		return chargenet.AnswerScheduled, nil
	}
	return chargenet.AnswerAccepted, nil
}

// result is a box's answer to a request, or why there is none.
type result struct {
	answer string
	err    error
}

func wait(ctx context.Context, got <-chan result) (string, error) {
	select {
	case r := <-got:
		return r.answer, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// boxEVSEs reads the EVSEs of charge box id, ascending uid, with their connectors.
func (s *Service) boxEVSEs(ctx context.Context, id int64) ([]chargenet.EVSE, error) {
	box, err := s.cfg.Store.Chargebox(ctx, id)
	if err != nil {
		return nil, err
	}
	evses := make([]chargenet.EVSE, 0, len(box.EVSEUIDs))
	for _, uid := range box.EVSEUIDs {
		e, err := s.cfg.Store.EVSE(ctx, uid)
		if err != nil {
			return nil, err
		}
		evses = append(evses, *e)
	}
	return evses, nil
}
