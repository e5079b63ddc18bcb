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
// start traces of their own. Every method of chargenet.Store is written out here, each
// with its span (TestStoreTracesEveryMethod), except Close, which takes no context, and
// Memo, whose kept answers come without a call (what read calls is traced).
func Store(inner chargenet.Store, tracer trace.Tracer, system string) chargenet.Store {
	return &store{inner: inner, tracer: tracer, system: attribute.String("db.system.name", system)}
}

type store struct {
	inner  chargenet.Store
	tracer trace.Tracer
	system attribute.KeyValue
}

var _ chargenet.Store = (*store)(nil)

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

// The methods of chargenet.EVSEService.

func (s *store) EVSE(ctx context.Context, uid int64) (*chargenet.EVSE, error) {
	ctx, end := s.start(ctx, "EVSE")
	out, err := s.inner.EVSE(ctx, uid)
	end(err)
	return out, err
}

func (s *store) EVSEDoc(ctx context.Context, uid int64) ([]byte, int64, error) {
	ctx, end := s.start(ctx, "EVSEDoc")
	doc, version, err := s.inner.EVSEDoc(ctx, uid)
	end(err)
	return doc, version, err
}

func (s *store) ListEVSEs(ctx context.Context, seek chargenet.Seek[int64]) ([]chargenet.EVSE, error) {
	ctx, end := s.start(ctx, "ListEVSEs")
	out, err := s.inner.ListEVSEs(ctx, seek)
	end(err)
	return out, err
}

func (s *store) ListEVSEChanges(ctx context.Context, seek chargenet.ChangeSeek[int64]) ([]chargenet.EVSE, error) {
	ctx, end := s.start(ctx, "ListEVSEChanges")
	out, err := s.inner.ListEVSEChanges(ctx, seek)
	end(err)
	return out, err
}

func (s *store) UpdateConnector(ctx context.Context, uid, connectorID int64, patch chargenet.ConnectorPatch, ifMatch, actor string, now time.Time) (*chargenet.EVSE, error) {
	ctx, end := s.start(ctx, "UpdateConnector")
	out, err := s.inner.UpdateConnector(ctx, uid, connectorID, patch, ifMatch, actor, now)
	end(err)
	return out, err
}

func (s *store) ApplyStatusNotification(ctx context.Context, n *chargenet.StatusNotification, actor string, now time.Time) (*chargenet.StatusResult, error) {
	ctx, end := s.start(ctx, "ApplyStatusNotification")
	out, err := s.inner.ApplyStatusNotification(ctx, n, actor, now)
	end(err)
	return out, err
}

func (s *store) CreateEVSE(ctx context.Context, e *chargenet.EVSE, idem *chargenet.Idempotency, actor string, now time.Time) (*chargenet.EVSE, error) {
	ctx, end := s.start(ctx, "CreateEVSE")
	out, err := s.inner.CreateEVSE(ctx, e, idem, actor, now)
	end(err)
	return out, err
}

func (s *store) ChangeEVSE(ctx context.Context, uid int64, change func(*chargenet.EVSE) ([]chargenet.Event, error), idem *chargenet.Idempotency, actor string, now time.Time) (*chargenet.EVSE, error) {
	ctx, end := s.start(ctx, "ChangeEVSE")
	out, err := s.inner.ChangeEVSE(ctx, uid, change, idem, actor, now)
	end(err)
	return out, err
}

// The methods of chargenet.LocationService.

func (s *store) Location(ctx context.Context, id string) (*chargenet.Location, error) {
	ctx, end := s.start(ctx, "Location")
	out, err := s.inner.Location(ctx, id)
	end(err)
	return out, err
}

func (s *store) ListLocations(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.Location, error) {
	ctx, end := s.start(ctx, "ListLocations")
	out, err := s.inner.ListLocations(ctx, seek)
	end(err)
	return out, err
}

func (s *store) ListLocationDocs(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.LocationDoc, error) {
	ctx, end := s.start(ctx, "ListLocationDocs")
	out, err := s.inner.ListLocationDocs(ctx, seek)
	end(err)
	return out, err
}

func (s *store) ListLocationChanges(ctx context.Context, seek chargenet.ChangeSeek[string]) ([]chargenet.Location, error) {
	ctx, end := s.start(ctx, "ListLocationChanges")
	out, err := s.inner.ListLocationChanges(ctx, seek)
	end(err)
	return out, err
}

func (s *store) PutLocation(ctx context.Context, l *chargenet.Location, actor string, now time.Time) (*chargenet.Location, bool, error) {
	ctx, end := s.start(ctx, "PutLocation")
	loc, created, err := s.inner.PutLocation(ctx, l, actor, now)
	end(err)
	return loc, created, err
}

func (s *store) DeleteLocation(ctx context.Context, id, actor string, now time.Time) (*chargenet.Location, error) {
	ctx, end := s.start(ctx, "DeleteLocation")
	out, err := s.inner.DeleteLocation(ctx, id, actor, now)
	end(err)
	return out, err
}

// The methods of chargenet.SiteReader.

func (s *store) Site(ctx context.Context, id string) (*chargenet.Site, error) {
	ctx, end := s.start(ctx, "Site")
	out, err := s.inner.Site(ctx, id)
	end(err)
	return out, err
}

func (s *store) ListSites(ctx context.Context, seek chargenet.UpdateSeek) ([]chargenet.Site, error) {
	ctx, end := s.start(ctx, "ListSites")
	out, err := s.inner.ListSites(ctx, seek)
	end(err)
	return out, err
}

func (s *store) ListSiteVersions(ctx context.Context, seek chargenet.UpdateSeek) ([]chargenet.SiteVersion, error) {
	ctx, end := s.start(ctx, "ListSiteVersions")
	out, err := s.inner.ListSiteVersions(ctx, seek)
	end(err)
	return out, err
}

func (s *store) CountSites(ctx context.Context, from, to time.Time) (int, error) {
	ctx, end := s.start(ctx, "CountSites")
	out, err := s.inner.CountSites(ctx, from, to)
	end(err)
	return out, err
}

// The methods of chargenet.WebhookService.

func (s *store) CreateWebhook(ctx context.Context, w *chargenet.Webhook, idem *chargenet.Idempotency) error {
	ctx, end := s.start(ctx, "CreateWebhook")
	err := s.inner.CreateWebhook(ctx, w, idem)
	end(err)
	return err
}

func (s *store) Webhook(ctx context.Context, owner, id string) (*chargenet.Webhook, error) {
	ctx, end := s.start(ctx, "Webhook")
	out, err := s.inner.Webhook(ctx, owner, id)
	end(err)
	return out, err
}

func (s *store) ListWebhooks(ctx context.Context, owner string, seek chargenet.Seek[string]) ([]chargenet.Webhook, error) {
	ctx, end := s.start(ctx, "ListWebhooks")
	out, err := s.inner.ListWebhooks(ctx, owner, seek)
	end(err)
	return out, err
}

func (s *store) UpdateWebhook(ctx context.Context, owner, id string, patch chargenet.WebhookPatch, now time.Time) (*chargenet.Webhook, error) {
	ctx, end := s.start(ctx, "UpdateWebhook")
	out, err := s.inner.UpdateWebhook(ctx, owner, id, patch, now)
	end(err)
	return out, err
}

func (s *store) RotateWebhookSecret(ctx context.Context, owner, id, secret string, now time.Time) (*chargenet.Webhook, error) {
	ctx, end := s.start(ctx, "RotateWebhookSecret")
	out, err := s.inner.RotateWebhookSecret(ctx, owner, id, secret, now)
	end(err)
	return out, err
}

func (s *store) DeleteWebhook(ctx context.Context, owner, id string) error {
	ctx, end := s.start(ctx, "DeleteWebhook")
	err := s.inner.DeleteWebhook(ctx, owner, id)
	end(err)
	return err
}

func (s *store) ListDeliveryAttempts(ctx context.Context, owner, webhookID string, seek chargenet.Seek[int64]) ([]chargenet.DeliveryAttempt, error) {
	ctx, end := s.start(ctx, "ListDeliveryAttempts")
	out, err := s.inner.ListDeliveryAttempts(ctx, owner, webhookID, seek)
	end(err)
	return out, err
}

func (s *store) SendTestEvent(ctx context.Context, owner, webhookID string, ev chargenet.Event, now time.Time) error {
	ctx, end := s.start(ctx, "SendTestEvent")
	err := s.inner.SendTestEvent(ctx, owner, webhookID, ev, now)
	end(err)
	return err
}

func (s *store) ReplayEvents(ctx context.Context, owner, webhookID string, r chargenet.Replay, now time.Time) (int, error) {
	ctx, end := s.start(ctx, "ReplayEvents")
	out, err := s.inner.ReplayEvents(ctx, owner, webhookID, r, now)
	end(err)
	return out, err
}

func (s *store) ClaimDeliveries(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]chargenet.Delivery, error) {
	ctx, end := s.start(ctx, "ClaimDeliveries")
	out, err := s.inner.ClaimDeliveries(ctx, now, limit, lease)
	end(err)
	return out, err
}

func (s *store) RecordAttempts(ctx context.Context, records ...chargenet.AttemptRecord) error {
	ctx, end := s.start(ctx, "RecordAttempts")
	err := s.inner.RecordAttempts(ctx, records...)
	end(err)
	return err
}

// The methods of chargenet.EventLog.

func (s *store) ListEvents(ctx context.Context, seek chargenet.ChangeSeek[int64], types []string, actor string) ([]chargenet.Event, error) {
	ctx, end := s.start(ctx, "ListEvents")
	out, err := s.inner.ListEvents(ctx, seek, types, actor)
	end(err)
	return out, err
}

func (s *store) Event(ctx context.Context, id string) (*chargenet.Event, error) {
	ctx, end := s.start(ctx, "Event")
	out, err := s.inner.Event(ctx, id)
	end(err)
	return out, err
}

func (s *store) PruneEvents(ctx context.Context, before time.Time, limit int) (chargenet.Pruned, error) {
	ctx, end := s.start(ctx, "PruneEvents")
	out, err := s.inner.PruneEvents(ctx, before, limit)
	end(err)
	return out, err
}

// The methods of chargenet.KeyService.

func (s *store) CreateAPIKey(ctx context.Context, key chargenet.APIKey) error {
	ctx, end := s.start(ctx, "CreateAPIKey")
	err := s.inner.CreateAPIKey(ctx, key)
	end(err)
	return err
}

func (s *store) RevokeAPIKey(ctx context.Context, name string, now time.Time) error {
	ctx, end := s.start(ctx, "RevokeAPIKey")
	err := s.inner.RevokeAPIKey(ctx, name, now)
	end(err)
	return err
}

func (s *store) APIKeyByHash(ctx context.Context, hash [sha256.Size]byte) (*chargenet.APIKey, error) {
	ctx, end := s.start(ctx, "APIKeyByHash")
	out, err := s.inner.APIKeyByHash(ctx, hash)
	end(err)
	return out, err
}

func (s *store) ListAPIKeys(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.APIKey, error) {
	ctx, end := s.start(ctx, "ListAPIKeys")
	out, err := s.inner.ListAPIKeys(ctx, seek)
	end(err)
	return out, err
}

func (s *store) RotateAPIKey(ctx context.Context, name string, r chargenet.KeyRotation) (*chargenet.APIKey, error) {
	ctx, end := s.start(ctx, "RotateAPIKey")
	out, err := s.inner.RotateAPIKey(ctx, name, r)
	end(err)
	return out, err
}

func (s *store) RecordAPIKeyUse(ctx context.Context, uses []chargenet.KeyUse) error {
	ctx, end := s.start(ctx, "RecordAPIKeyUse")
	err := s.inner.RecordAPIKeyUse(ctx, uses)
	end(err)
	return err
}

// The methods of chargenet.PartnerService.

func (s *store) CreatePartner(ctx context.Context, p *chargenet.Partner) error {
	ctx, end := s.start(ctx, "CreatePartner")
	err := s.inner.CreatePartner(ctx, p)
	end(err)
	return err
}

func (s *store) Partner(ctx context.Context, id string) (*chargenet.Partner, error) {
	ctx, end := s.start(ctx, "Partner")
	out, err := s.inner.Partner(ctx, id)
	end(err)
	return out, err
}

func (s *store) PartnerByName(ctx context.Context, name string) (*chargenet.Partner, error) {
	ctx, end := s.start(ctx, "PartnerByName")
	out, err := s.inner.PartnerByName(ctx, name)
	end(err)
	return out, err
}

func (s *store) PartnerByToken(ctx context.Context, hash [sha256.Size]byte) (*chargenet.Partner, bool, error) {
	ctx, end := s.start(ctx, "PartnerByToken")
	p, registration, err := s.inner.PartnerByToken(ctx, hash)
	end(err)
	return p, registration, err
}

func (s *store) ListPartners(ctx context.Context) ([]chargenet.Partner, error) {
	ctx, end := s.start(ctx, "ListPartners")
	out, err := s.inner.ListPartners(ctx)
	end(err)
	return out, err
}

func (s *store) SetPartnerCredentials(ctx context.Context, id string, held [sha256.Size]byte, c chargenet.PartnerCredentials, token [sha256.Size]byte, now time.Time) (*chargenet.Partner, error) {
	ctx, end := s.start(ctx, "SetPartnerCredentials")
	out, err := s.inner.SetPartnerCredentials(ctx, id, held, c, token, now)
	end(err)
	return out, err
}

func (s *store) DeletePartner(ctx context.Context, id string) error {
	ctx, end := s.start(ctx, "DeletePartner")
	err := s.inner.DeletePartner(ctx, id)
	end(err)
	return err
}

// The methods of chargenet.IdempotencyService.

func (s *store) IdempotentAnswer(ctx context.Context, owner, key string, now time.Time) (*chargenet.IdempotentAnswer, error) {
	ctx, end := s.start(ctx, "IdempotentAnswer")
	out, err := s.inner.IdempotentAnswer(ctx, owner, key, now)
	end(err)
	return out, err
}

// The methods of chargenet.ChargeboxService.

func (s *store) RegisterChargebox(ctx context.Context, id int64, identity string, hash [sha256.Size]byte, now time.Time) (bool, error) {
	ctx, end := s.start(ctx, "RegisterChargebox")
	created, err := s.inner.RegisterChargebox(ctx, id, identity, hash, now)
	end(err)
	return created, err
}

func (s *store) RevokeChargebox(ctx context.Context, id int64, now time.Time) error {
	ctx, end := s.start(ctx, "RevokeChargebox")
	err := s.inner.RevokeChargebox(ctx, id, now)
	end(err)
	return err
}

func (s *store) ChargeboxByIdentity(ctx context.Context, identity string) (*chargenet.Chargebox, error) {
	ctx, end := s.start(ctx, "ChargeboxByIdentity")
	out, err := s.inner.ChargeboxByIdentity(ctx, identity)
	end(err)
	return out, err
}

func (s *store) Chargebox(ctx context.Context, id int64) (*chargenet.Chargebox, error) {
	ctx, end := s.start(ctx, "Chargebox")
	out, err := s.inner.Chargebox(ctx, id)
	end(err)
	return out, err
}

func (s *store) ListChargeboxes(ctx context.Context, seek chargenet.Seek[int64]) ([]chargenet.Chargebox, error) {
	ctx, end := s.start(ctx, "ListChargeboxes")
	out, err := s.inner.ListChargeboxes(ctx, seek)
	end(err)
	return out, err
}

func (s *store) RecordConnections(ctx context.Context, changes []chargenet.ConnectionChange) error {
	ctx, end := s.start(ctx, "RecordConnections")
	err := s.inner.RecordConnections(ctx, changes)
	end(err)
	return err
}

func (s *store) ExpireConnections(ctx context.Context, seenBefore, now time.Time, limit int) ([]int64, error) {
	ctx, end := s.start(ctx, "ExpireConnections")
	out, err := s.inner.ExpireConnections(ctx, seenBefore, now, limit)
	end(err)
	return out, err
}

func (s *store) OweAvailability(ctx context.Context, id int64, now time.Time) ([]chargenet.AvailabilityRequest, error) {
	ctx, end := s.start(ctx, "OweAvailability")
	out, err := s.inner.OweAvailability(ctx, id, now)
	end(err)
	return out, err
}

func (s *store) PendingAvailability(ctx context.Context) ([]chargenet.AvailabilityRequest, error) {
	ctx, end := s.start(ctx, "PendingAvailability")
	out, err := s.inner.PendingAvailability(ctx)
	end(err)
	return out, err
}

func (s *store) AnswerAvailability(ctx context.Context, uid int64, requestedAt time.Time, answer string, now time.Time) error {
	ctx, end := s.start(ctx, "AnswerAvailability")
	err := s.inner.AnswerAvailability(ctx, uid, requestedAt, answer, now)
	end(err)
	return err
}

func (s *store) ChargeboxEpoch(ctx context.Context) (int64, error) {
	ctx, end := s.start(ctx, "ChargeboxEpoch")
	out, err := s.inner.ChargeboxEpoch(ctx)
	end(err)
	return out, err
}

// The methods of chargenet.Inspector.

func (s *store) OutboxStats(ctx context.Context) (chargenet.OutboxStats, error) {
	ctx, end := s.start(ctx, "OutboxStats")
	out, err := s.inner.OutboxStats(ctx)
	end(err)
	return out, err
}

func (s *store) MigrationHead(ctx context.Context) (string, string, error) {
	ctx, end := s.start(ctx, "MigrationHead")
	known, applied, err := s.inner.MigrationHead(ctx)
	end(err)
	return known, applied, err
}

// Memo passes on to the inner store's, without a span: a kept answer costs no call, and
// the calls read makes are traced.
func (s *store) Memo(ctx context.Context, key string, read func(ctx context.Context) (value any, size int, err error)) (any, error) {
	return s.inner.Memo(ctx, key, read)
}

// The methods of chargenet.Store itself.

func (s *store) Import(ctx context.Context, inv *chargenet.Inventory) error {
	ctx, end := s.start(ctx, "Import")
	err := s.inner.Import(ctx, inv)
	end(err)
	return err
}

func (s *store) Setting(ctx context.Context, name, value string) (string, error) {
	ctx, end := s.start(ctx, "Setting")
	out, err := s.inner.Setting(ctx, name, value)
	end(err)
	return out, err
}

func (s *store) Ping(ctx context.Context) error {
	ctx, end := s.start(ctx, "Ping")
	err := s.inner.Ping(ctx)
	end(err)
	return err
}

// Close closes the inner store, without a span: it takes no context.
func (s *store) Close() error {
	return s.inner.Close()
}
