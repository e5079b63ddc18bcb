// Package intake applies the messages charge boxes send, whatever their transport. A
// status notification that arrives over OCPP-J (package ocpp) and one posted to the
// HTTP ingestion (package server) take the same function, which stamps it with
// chargenet's clock, names its actor, counts it, traces it and applies the rules that
// follow it; a transport only decodes a message and answers it.
//
// It also holds the rule that passes the operator's availability on to the charge
// boxes: the HTTP layer reports an EVSE it changed (EVSEChanged), the OCPP layer asks
// what a box that connects owes (Owed) and sends it.
package intake

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/metrics"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Store is what the application path needs of a store.
type Store interface {
	// ApplyStatusNotification applies n at now on behalf of actor and returns once it
	// is committed (chargenet.EVSEService).
	ApplyStatusNotification(ctx context.Context, n *chargenet.StatusNotification, actor string, now time.Time) (*chargenet.StatusResult, error)
	// OweAvailability records what box id owes as pending requests and returns every
	// pending request of its EVSEs (chargenet.ChargeboxService).
	OweAvailability(ctx context.Context, id int64, now time.Time) ([]chargenet.AvailabilityRequest, error)
}

// Config configures a Service. Store is required.
type Config struct {
	// Store applies the messages. Give it the store the HTTP layer uses, traced
	// (tracing.Store) when tracing is on, so that every message's store calls are spans.
	Store Store
	// Metrics, when set, counts the status notifications by result; nil counts nothing.
	Metrics *metrics.Metrics
	// Tracer, when set, gives a message that arrives outside any span (over OCPP: no
	// request span holds it) a server span of its own, named by the message kind, in
	// which its store calls and the events it records are traced; nil starts none.
	Tracer trace.Tracer
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Logger receives what fails after a change was committed; nil discards.
	Logger *slog.Logger
	// Deliver sends the availability requests owed by charge box id to its connection
	// if this process holds it (ocpp.Service.Deliver; a function that sends nothing
	// when this process has no OCPP listener: another process holding the connection
	// learns them from the store). Nil turns the availability rule off: EVSEChanged
	// records nothing, for a process whose charge boxes never connect over OCPP.
	Deliver func(chargeboxID int64, owed []chargenet.AvailabilityRequest)
}

// Service is the application path of the messages from charge boxes. Its methods are
// safe for concurrent use.
type Service struct {
	store   Store
	metrics *metrics.Metrics
	tracer  trace.Tracer
	now     func() time.Time
	log     *slog.Logger
	deliver func(int64, []chargenet.AvailabilityRequest)
}

// New returns the Service of cfg. It returns an error when cfg has no Store.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("intake: Store is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: cfg.Store, metrics: cfg.Metrics, tracer: cfg.Tracer, now: cfg.Now, log: cfg.Logger,
		deliver: cfg.Deliver}, nil
}

// Sender is who sent a message: a connected charge box, or an API key of the HTTP
// ingestion. It names the actor of the changes the message makes.
type Sender struct {
	actor string
}

// Chargebox is the charge box with identity, connected over OCPP; its changes carry
// the actor chargenet.ChargeboxActor(identity).
func Chargebox(identity string) Sender { return Sender{actor: chargenet.ChargeboxActor(identity)} }

// Key is the API key named name; its changes carry the actor name.
func Key(name string) Sender { return Sender{actor: name} }

// Actor returns the actor of the changes the sender's messages make.
func (s Sender) Actor() string { return s.actor }

// stamp is the current time as the stores keep it (UTC, to the microsecond).
func (s *Service) stamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// StatusNotification applies charge box n.ChargeboxID's status notification n, sent by
// from, and returns once it is committed. A notification without Timestamp takes the
// current time; its other fields are the transport's decoding of the message. n is
// changed in place (Timestamp).
//
// Errors are those of chargenet.ApplyStatusNotification through the store: domain
// errors (*chargenet.Error: ErrNotFound, ErrConflict, ErrInvalid, among them a
// timestamp more than chargenet.MaxClockSkew ahead), ErrUnavailable when the database
// cannot be reached, the context's error, or others.
func (s *Service) StatusNotification(ctx context.Context, from Sender, n *chargenet.StatusNotification) (*chargenet.StatusResult, error) {
	ctx, end := s.span(ctx, "StatusNotification", from)
	now := s.stamp()
	if n.Timestamp.IsZero() {
		n.Timestamp = now
	} else {
		n.Timestamp = n.Timestamp.UTC()
	}
	res, err := s.store.ApplyStatusNotification(ctx, n, from.actor, now)
	s.metrics.StatusNotification(notificationResult(res, err))
	end(err)
	return res, err
}

// span starts the server span of a message of kind when tracing is on and ctx is in no
// span yet; end must be called with the message's error.
func (s *Service) span(ctx context.Context, kind string, from Sender) (context.Context, func(error)) {
	if s.tracer == nil || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, func(error) {}
	}
	ctx, span := s.tracer.Start(ctx, kind, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("chargenet.actor", from.actor)))
	return ctx, func(err error) {
		var de *chargenet.Error
		if err != nil && !errors.As(err, &de) { // a refusal of the domain is the sender's, not a failure
			span.RecordError(err)
			span.SetStatus(codes.Error, "applying the message failed")
		}
		span.End()
	}
}

// notificationResult names the result of a status notification for its metric.
func notificationResult(res *chargenet.StatusResult, err error) string {
	switch {
	case err == nil && res.Applied:
		return metrics.NotificationApplied
	case err == nil:
		return metrics.NotificationStale
	case errors.Is(err, chargenet.ErrNotFound):
		return metrics.NotificationUnknownChargebox
	case errors.Is(err, chargenet.ErrInvalid), errors.Is(err, chargenet.ErrConflict):
		return metrics.NotificationInvalid
	}
	return metrics.NotificationFailed
}

// EVSEChanged applies what follows the operator's committed change of EVSE e whose
// status was before: when the status moved into or out of INOPERATIVE, e's charge box
// owes the availability (recorded in the store) and is told at once if its connection
// is held here (Deliver; without Deliver, nothing happens). A failure is logged: the
// change stays committed, and the box is told when it reconnects.
func (s *Service) EVSEChanged(ctx context.Context, before chargenet.EvseStatus, e *chargenet.EVSE) {
	if s.deliver == nil || !availabilityChanged(before, e.Status) {
		return
	}
	owed, err := s.Owed(ctx, e.ChargeboxID)
	switch {
	case errors.Is(err, chargenet.ErrNotFound): // the box is not registered for OCPP
	case err != nil:
		s.log.Warn("asking the charge box to follow the EVSE's availability failed; it is asked again when it reconnects",
			"uid", e.UID, "chargeboxId", e.ChargeboxID, "error", err.Error())
	default:
		s.deliver(e.ChargeboxID, owed)
	}
}

// availabilityChanged reports whether an EVSE whose status went from before to after
// asks its charge box to change its availability: into or out of INOPERATIVE.
func availabilityChanged(before, after chargenet.EvseStatus) bool {
	return after != before && (after == chargenet.StatusInoperative || before == chargenet.StatusInoperative)
}

// Owed records what charge box id owes its EVSEs (chargenet.OwedAvailability) as
// pending requests, stamped now, and returns every request of its EVSEs still pending,
// ascending uid: what the box must be told. ErrNotFound when the box is not registered.
func (s *Service) Owed(ctx context.Context, id int64) ([]chargenet.AvailabilityRequest, error) {
	return s.store.OweAvailability(ctx, id, s.stamp())
}
