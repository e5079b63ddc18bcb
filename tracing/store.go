package tracing

import (
	"context"
	"crypto/sha256"
	"time"

	"github.com/chargenet/chargenet"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Store returns inner with a child span around each call made within a traced request:
// "store.METHOD", with the database system as an attribute. A call whose context holds
// no span (the dispatcher's polling) is passed on without one, so that store calls never
// start traces of their own. Methods added to chargenet.Store later pass through
// untraced until they are listed here.
func Store(inner chargenet.Store, tracer trace.Tracer, system string) chargenet.Store {
	return &store{Store: inner, tracer: tracer, system: attribute.String("db.system.name", system)}
}

type store struct {
	chargenet.Store
	tracer trace.Tracer
	system attribute.KeyValue
}

// start starts the span of a call to method when ctx is traced; end must be called with
// the call's error.
func (s *store) start(ctx context.Context, method string) (context.Context, func(error)) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, func(error) {}
	}
	ctx, span := s.tracer.Start(ctx, "store."+method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(s.system))
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "store call failed")
		}
		span.End()
	}
}

func (s *store) EVSE(ctx context.Context, uid int64) (*chargenet.EVSE, error) {
	ctx, end := s.start(ctx, "EVSE")
	e, err := s.Store.EVSE(ctx, uid)
	end(err)
	return e, err
}

func (s *store) ListEVSEs(ctx context.Context, seek chargenet.Seek[int64]) ([]chargenet.EVSE, error) {
	ctx, end := s.start(ctx, "ListEVSEs")
	out, err := s.Store.ListEVSEs(ctx, seek)
	end(err)
	return out, err
}

func (s *store) UpdateConnector(ctx context.Context, uid, connectorID int64, patch chargenet.ConnectorPatch, ifMatch, actor string, now time.Time) (*chargenet.EVSE, error) {
	ctx, end := s.start(ctx, "UpdateConnector")
	e, err := s.Store.UpdateConnector(ctx, uid, connectorID, patch, ifMatch, actor, now)
	end(err)
	return e, err
}

func (s *store) ApplyStatusNotification(ctx context.Context, n *chargenet.StatusNotification, actor string, now time.Time) (*chargenet.StatusResult, error) {
	ctx, end := s.start(ctx, "ApplyStatusNotification")
	r, err := s.Store.ApplyStatusNotification(ctx, n, actor, now)
	end(err)
	return r, err
}

func (s *store) CreateWebhook(ctx context.Context, w *chargenet.Webhook, idem *chargenet.Idempotency) error {
	ctx, end := s.start(ctx, "CreateWebhook")
	err := s.Store.CreateWebhook(ctx, w, idem)
	end(err)
	return err
}

func (s *store) CreateEVSE(ctx context.Context, e *chargenet.EVSE, idem *chargenet.Idempotency, actor string, now time.Time) (*chargenet.EVSE, error) {
	ctx, end := s.start(ctx, "CreateEVSE")
	out, err := s.Store.CreateEVSE(ctx, e, idem, actor, now)
	end(err)
	return out, err
}

func (s *store) ChangeEVSE(ctx context.Context, uid int64, change func(*chargenet.EVSE) ([]chargenet.Event, error), idem *chargenet.Idempotency, actor string, now time.Time) (*chargenet.EVSE, error) {
	ctx, end := s.start(ctx, "ChangeEVSE")
	out, err := s.Store.ChangeEVSE(ctx, uid, change, idem, actor, now)
	end(err)
	return out, err
}

func (s *store) PutLocation(ctx context.Context, l *chargenet.Location, actor string, now time.Time) (*chargenet.Location, bool, error) {
	ctx, end := s.start(ctx, "PutLocation")
	out, created, err := s.Store.PutLocation(ctx, l, actor, now)
	end(err)
	return out, created, err
}

func (s *store) DeleteLocation(ctx context.Context, id, actor string, now time.Time) (*chargenet.Location, error) {
	ctx, end := s.start(ctx, "DeleteLocation")
	out, err := s.Store.DeleteLocation(ctx, id, actor, now)
	end(err)
	return out, err
}

func (s *store) IdempotentAnswer(ctx context.Context, owner, key string, now time.Time) (*chargenet.IdempotentAnswer, error) {
	ctx, end := s.start(ctx, "IdempotentAnswer")
	out, err := s.Store.IdempotentAnswer(ctx, owner, key, now)
	end(err)
	return out, err
}

func (s *store) Webhook(ctx context.Context, owner, id string) (*chargenet.Webhook, error) {
	ctx, end := s.start(ctx, "Webhook")
	w, err := s.Store.Webhook(ctx, owner, id)
	end(err)
	return w, err
}

func (s *store) ListWebhooks(ctx context.Context, owner string, seek chargenet.Seek[string]) ([]chargenet.Webhook, error) {
	ctx, end := s.start(ctx, "ListWebhooks")
	out, err := s.Store.ListWebhooks(ctx, owner, seek)
	end(err)
	return out, err
}

func (s *store) UpdateWebhook(ctx context.Context, owner, id string, patch chargenet.WebhookPatch, now time.Time) (*chargenet.Webhook, error) {
	ctx, end := s.start(ctx, "UpdateWebhook")
	w, err := s.Store.UpdateWebhook(ctx, owner, id, patch, now)
	end(err)
	return w, err
}

func (s *store) RotateWebhookSecret(ctx context.Context, owner, id, secret string, now time.Time) (*chargenet.Webhook, error) {
	ctx, end := s.start(ctx, "RotateWebhookSecret")
	w, err := s.Store.RotateWebhookSecret(ctx, owner, id, secret, now)
	end(err)
	return w, err
}

func (s *store) DeleteWebhook(ctx context.Context, owner, id string) error {
	ctx, end := s.start(ctx, "DeleteWebhook")
	err := s.Store.DeleteWebhook(ctx, owner, id)
	end(err)
	return err
}

func (s *store) ListDeliveryAttempts(ctx context.Context, owner, webhookID string, seek chargenet.Seek[int64]) ([]chargenet.DeliveryAttempt, error) {
	ctx, end := s.start(ctx, "ListDeliveryAttempts")
	out, err := s.Store.ListDeliveryAttempts(ctx, owner, webhookID, seek)
	end(err)
	return out, err
}

func (s *store) ClaimDeliveries(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]chargenet.Delivery, error) {
	ctx, end := s.start(ctx, "ClaimDeliveries")
	out, err := s.Store.ClaimDeliveries(ctx, now, limit, lease)
	end(err)
	return out, err
}

func (s *store) RecordAttempts(ctx context.Context, records ...chargenet.AttemptRecord) error {
	ctx, end := s.start(ctx, "RecordAttempts")
	err := s.Store.RecordAttempts(ctx, records...)
	end(err)
	return err
}

func (s *store) Location(ctx context.Context, id string) (*chargenet.Location, error) {
	ctx, end := s.start(ctx, "Location")
	l, err := s.Store.Location(ctx, id)
	end(err)
	return l, err
}

func (s *store) ListLocations(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.Location, error) {
	ctx, end := s.start(ctx, "ListLocations")
	out, err := s.Store.ListLocations(ctx, seek)
	end(err)
	return out, err
}

func (s *store) Import(ctx context.Context, inv *chargenet.Inventory) error {
	ctx, end := s.start(ctx, "Import")
	err := s.Store.Import(ctx, inv)
	end(err)
	return err
}

func (s *store) CreateAPIKey(ctx context.Context, key chargenet.APIKey) error {
	ctx, end := s.start(ctx, "CreateAPIKey")
	err := s.Store.CreateAPIKey(ctx, key)
	end(err)
	return err
}

func (s *store) RevokeAPIKey(ctx context.Context, name string, now time.Time) error {
	ctx, end := s.start(ctx, "RevokeAPIKey")
	err := s.Store.RevokeAPIKey(ctx, name, now)
	end(err)
	return err
}

func (s *store) APIKeyByHash(ctx context.Context, hash [sha256.Size]byte) (*chargenet.APIKey, error) {
	ctx, end := s.start(ctx, "APIKeyByHash")
	k, err := s.Store.APIKeyByHash(ctx, hash)
	end(err)
	return k, err
}

func (s *store) Setting(ctx context.Context, name, value string) (string, error) {
	ctx, end := s.start(ctx, "Setting")
	v, err := s.Store.Setting(ctx, name, value)
	end(err)
	return v, err
}

func (s *store) Ping(ctx context.Context) error {
	ctx, end := s.start(ctx, "Ping")
	err := s.Store.Ping(ctx)
	end(err)
	return err
}

func (s *store) ListLocationDocs(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.LocationDoc, error) {
	ctx, end := s.start(ctx, "ListLocationDocs")
	out, err := s.Store.ListLocationDocs(ctx, seek)
	end(err)
	return out, err
}

func (s *store) EVSEDoc(ctx context.Context, uid int64) ([]byte, int64, error) {
	ctx, end := s.start(ctx, "EVSEDoc")
	doc, v, err := s.Store.EVSEDoc(ctx, uid)
	end(err)
	return doc, v, err
}

func (s *store) ListEVSEChanges(ctx context.Context, seek chargenet.ChangeSeek[int64]) ([]chargenet.EVSE, error) {
	ctx, end := s.start(ctx, "ListEVSEChanges")
	out, err := s.Store.ListEVSEChanges(ctx, seek)
	end(err)
	return out, err
}

func (s *store) ListLocationChanges(ctx context.Context, seek chargenet.ChangeSeek[string]) ([]chargenet.Location, error) {
	ctx, end := s.start(ctx, "ListLocationChanges")
	out, err := s.Store.ListLocationChanges(ctx, seek)
	end(err)
	return out, err
}

func (s *store) ListEvents(ctx context.Context, seek chargenet.ChangeSeek[int64], types []string, actor string) ([]chargenet.Event, error) {
	ctx, end := s.start(ctx, "ListEvents")
	out, err := s.Store.ListEvents(ctx, seek, types, actor)
	end(err)
	return out, err
}

func (s *store) Event(ctx context.Context, id string) (*chargenet.Event, error) {
	ctx, end := s.start(ctx, "Event")
	ev, err := s.Store.Event(ctx, id)
	end(err)
	return ev, err
}

func (s *store) SendTestEvent(ctx context.Context, owner, webhookID string, ev chargenet.Event, now time.Time) error {
	ctx, end := s.start(ctx, "SendTestEvent")
	err := s.Store.SendTestEvent(ctx, owner, webhookID, ev, now)
	end(err)
	return err
}

func (s *store) ReplayEvents(ctx context.Context, owner, webhookID string, r chargenet.Replay, now time.Time) (int, error) {
	ctx, end := s.start(ctx, "ReplayEvents")
	n, err := s.Store.ReplayEvents(ctx, owner, webhookID, r, now)
	end(err)
	return n, err
}

func (s *store) PruneEvents(ctx context.Context, before time.Time, limit int) (chargenet.Pruned, error) {
	ctx, end := s.start(ctx, "PruneEvents")
	p, err := s.Store.PruneEvents(ctx, before, limit)
	end(err)
	return p, err
}

func (s *store) ListAPIKeys(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.APIKey, error) {
	ctx, end := s.start(ctx, "ListAPIKeys")
	out, err := s.Store.ListAPIKeys(ctx, seek)
	end(err)
	return out, err
}

func (s *store) RotateAPIKey(ctx context.Context, name string, r chargenet.KeyRotation) (*chargenet.APIKey, error) {
	ctx, end := s.start(ctx, "RotateAPIKey")
	k, err := s.Store.RotateAPIKey(ctx, name, r)
	end(err)
	return k, err
}

func (s *store) Site(ctx context.Context, id string) (*chargenet.Site, error) {
	ctx, end := s.start(ctx, "Site")
	out, err := s.Store.Site(ctx, id)
	end(err)
	return out, err
}

func (s *store) ListSites(ctx context.Context, seek chargenet.UpdateSeek) ([]chargenet.Site, error) {
	ctx, end := s.start(ctx, "ListSites")
	out, err := s.Store.ListSites(ctx, seek)
	end(err)
	return out, err
}

func (s *store) ListSiteVersions(ctx context.Context, seek chargenet.UpdateSeek) ([]chargenet.SiteVersion, error) {
	ctx, end := s.start(ctx, "ListSiteVersions")
	out, err := s.Store.ListSiteVersions(ctx, seek)
	end(err)
	return out, err
}

func (s *store) CountSites(ctx context.Context, from, to time.Time) (int, error) {
	ctx, end := s.start(ctx, "CountSites")
	n, err := s.Store.CountSites(ctx, from, to)
	end(err)
	return n, err
}

func (s *store) PartnerByToken(ctx context.Context, hash [sha256.Size]byte) (*chargenet.Partner, bool, error) {
	ctx, end := s.start(ctx, "PartnerByToken")
	p, registration, err := s.Store.PartnerByToken(ctx, hash)
	end(err)
	return p, registration, err
}

// Memo passes on to the inner store's chargenet.ReadMemo, whose cache answers without a
// span; a store without one reads every time.
func (s *store) Memo(ctx context.Context, key string, read func(context.Context) (any, int, error)) (any, error) {
	if m, ok := s.Store.(chargenet.ReadMemo); ok {
		return m.Memo(ctx, key, read)
	}
	v, _, err := read(ctx)
	return v, err
}
