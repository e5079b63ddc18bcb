package server

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/timestamp"
)

// keyNameKey is the request context key of the calling API key's name: the owner of the
// webhooks it creates and the actor of the changes it makes.
type keyNameKey struct{}

// owner returns the name of the API key that authenticated the request, the owner of
// its webhooks.
func owner(ctx context.Context) string {
	name, _ := ctx.Value(keyNameKey{}).(string)
	return name
}

// actor returns the actor of the request's changes: the name of the API key that
// authenticated it.
func actor(ctx context.Context) string { return owner(ctx) }

// listDeliveries is the cursor list name of a webhook's delivery attempts: a cursor is
// valid only for the webhook that issued it.
func listDeliveries(webhookID string) string { return "deliveries/" + webhookID }

// webhookStore is what the management of webhooks uses of a store.
type webhookStore interface {
	ListWebhooks(ctx context.Context, owner string, seek chargenet.Seek[string]) ([]chargenet.Webhook, error)
	CreateWebhook(ctx context.Context, w *chargenet.Webhook, idem *chargenet.Idempotency) error
	Webhook(ctx context.Context, owner, id string) (*chargenet.Webhook, error)
	UpdateWebhook(ctx context.Context, owner, id string, patch chargenet.WebhookPatch, now time.Time) (*chargenet.Webhook, error)
	RotateWebhookSecret(ctx context.Context, owner, id, secret string, now time.Time) (*chargenet.Webhook, error)
	DeleteWebhook(ctx context.Context, owner, id string) error
	ListDeliveryAttempts(ctx context.Context, owner, webhookID string, seek chargenet.Seek[int64]) ([]chargenet.DeliveryAttempt, error)
}

// webhooks manages the webhooks of the calling API key and shows their deliveries.
type webhooks struct {
	store                 webhookStore
	cursors               *chargenet.CursorCodec
	now                   func() time.Time
	catalogue             []chargenet.EventType
	allowInsecureWebhooks bool
	notify                func()
}

// ListWebhooks answers GET /emsp/v1/webhooks with one page of the caller's webhooks.
func (s *webhooks) ListWebhooks(ctx context.Context, req gen.ListWebhooksRequestObject) (gen.ListWebhooksResponseObject, error) {
	who := owner(ctx)
	page, err := chargenet.Paginate(ctx, s.cursors, chargenet.ListWebhooks, deref(req.Params.Cursor), limit(req.Params.Limit),
		func(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.Webhook, error) {
			return s.store.ListWebhooks(ctx, who, seek)
		}, func(w *chargenet.Webhook) string { return w.ID })
	if err != nil {
		return nil, err
	}
	out := gen.WebhookPage{Data: make([]gen.Webhook, len(page.Items)), Pagination: pagination(page)}
	for i := range page.Items {
		out.Data[i] = webhookToAPI(&page.Items[i])
	}
	return gen.ListWebhooks200JSONResponse{Body: out}, nil
}

// CreateWebhook answers POST /emsp/v1/webhooks: it checks the URL and the event types,
// stores the webhook with a new secret and answers 201 with the secret.
func (s *webhooks) CreateWebhook(ctx context.Context, req gen.CreateWebhookRequestObject) (gen.CreateWebhookResponseObject, error) {
	if req.Body == nil {
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "", "request body is required")
	}
	if err := chargenet.CheckWebhookURL(req.Body.Url, s.allowInsecureWebhooks); err != nil {
		return nil, err
	}
	if err := chargenet.CheckText("description", deref(req.Body.Description)); err != nil {
		return nil, err
	}
	subs, err := chargenet.ResolveSubscriptions(s.catalogue, subscriptionsFromAPI(req.Body.EventTypes))
	if err != nil {
		return nil, err
	}
	// The answer is built from what is stored, as every store reads it back: times to
	// the microsecond, subscriptions in type order. (Reading it back instead could lose
	// the only answer that shows the secret after the webhook was created.)
	slices.SortFunc(subs, func(a, b chargenet.Subscription) int { return strings.Compare(a.Type, b.Type) })
	now := chargenet.Stamp(s.now())
	w := &chargenet.Webhook{ID: chargenet.NewID("wh_", now), Owner: owner(ctx), URL: req.Body.Url, Description: deref(req.Body.Description),
		Subscriptions: subs, Enabled: true, Secret: chargenet.NewWebhookSecret(), CreatedAt: now, UpdatedAt: now}
	location := "/emsp/v1/webhooks/" + w.ID
	answer := gen.CreateWebhook201JSONResponse{Body: webhookWithSecret(w), Headers: gen.CreateWebhook201ResponseHeaders{Location: &location}}
	idem := idempotency(ctx, func(any) ([]byte, error) {
		return keptAnswer(http.StatusCreated, answer.Body, map[string]string{"Location": location})
	})
	if err := s.store.CreateWebhook(ctx, w, idem); err != nil {
		return nil, err
	}
	return answer, nil
}

// GetWebhook answers GET /emsp/v1/webhooks/{webhookId}.
func (s *webhooks) GetWebhook(ctx context.Context, req gen.GetWebhookRequestObject) (gen.GetWebhookResponseObject, error) {
	w, err := s.store.Webhook(ctx, owner(ctx), req.WebhookId)
	if err != nil {
		return nil, err
	}
	return gen.GetWebhook200JSONResponse{Body: webhookToAPI(w)}, nil
}

// UpdateWebhook answers PATCH /emsp/v1/webhooks/{webhookId}.
func (s *webhooks) UpdateWebhook(ctx context.Context, req gen.UpdateWebhookRequestObject) (gen.UpdateWebhookResponseObject, error) {
	if req.Body == nil {
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "", "request body is required")
	}
	patch := chargenet.WebhookPatch{URL: req.Body.Url, Description: req.Body.Description, Enabled: req.Body.Enabled}
	if patch.URL == nil && patch.Description == nil && patch.Enabled == nil && req.Body.EventTypes == nil {
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "", "request body must set at least one field")
	}
	if patch.URL != nil {
		if err := chargenet.CheckWebhookURL(*patch.URL, s.allowInsecureWebhooks); err != nil {
			return nil, err
		}
	}
	if err := chargenet.CheckText("description", deref(patch.Description)); err != nil {
		return nil, err
	}
	if req.Body.EventTypes != nil {
		subs, err := chargenet.ResolveSubscriptions(s.catalogue, subscriptionsFromAPI(*req.Body.EventTypes))
		if err != nil {
			return nil, err
		}
		patch.Subscriptions = &subs
	}
	w, err := s.store.UpdateWebhook(ctx, owner(ctx), req.WebhookId, patch, s.now().UTC())
	if err != nil {
		return nil, err
	}
	if patch.Enabled != nil && *patch.Enabled {
		s.notify() // deliveries that waited for it are due
	}
	return gen.UpdateWebhook200JSONResponse{Body: webhookToAPI(w)}, nil
}

// DeleteWebhook answers DELETE /emsp/v1/webhooks/{webhookId}.
func (s *webhooks) DeleteWebhook(ctx context.Context, req gen.DeleteWebhookRequestObject) (gen.DeleteWebhookResponseObject, error) {
	if err := s.store.DeleteWebhook(ctx, owner(ctx), req.WebhookId); err != nil {
		return nil, err
	}
	return gen.DeleteWebhook204Response{}, nil
}

// RotateWebhookSecret answers POST /emsp/v1/webhooks/{webhookId}/secret/rotate.
func (s *webhooks) RotateWebhookSecret(ctx context.Context, req gen.RotateWebhookSecretRequestObject) (gen.RotateWebhookSecretResponseObject, error) {
	w, err := s.store.RotateWebhookSecret(ctx, owner(ctx), req.WebhookId, chargenet.NewWebhookSecret(), s.now().UTC())
	if err != nil {
		return nil, err
	}
	return gen.RotateWebhookSecret200JSONResponse{Body: webhookWithSecret(w)}, nil
}

// ListWebhookDeliveries answers GET /emsp/v1/webhooks/{webhookId}/deliveries with one
// page of attempts, newest first.
func (s *webhooks) ListWebhookDeliveries(ctx context.Context, req gen.ListWebhookDeliveriesRequestObject) (gen.ListWebhookDeliveriesResponseObject, error) {
	who := owner(ctx)
	// Newest first: the list's forward direction is the store's descending order.
	page, err := chargenet.Paginate(ctx, s.cursors, listDeliveries(req.WebhookId), deref(req.Params.Cursor), limit(req.Params.Limit),
		func(ctx context.Context, seek chargenet.Seek[int64]) ([]chargenet.DeliveryAttempt, error) {
			seek.Backward = !seek.Backward
			return s.store.ListDeliveryAttempts(ctx, who, req.WebhookId, seek)
		}, func(a *chargenet.DeliveryAttempt) int64 { return a.ID })
	if err != nil {
		return nil, err
	}
	out := gen.DeliveryPage{Data: make([]gen.Delivery, len(page.Items)), Pagination: pagination(page)}
	for i := range page.Items {
		out.Data[i] = deliveryToAPI(&page.Items[i])
	}
	return gen.ListWebhookDeliveries200JSONResponse{Body: out}, nil
}

func subscriptionsFromAPI(in []gen.WebhookSubscription) []chargenet.Subscription {
	out := make([]chargenet.Subscription, len(in))
	for i, sub := range in {
		out[i] = chargenet.Subscription{Type: sub.Type, APIVersion: deref(sub.ApiVersion)}
	}
	return out
}

func webhookToAPI(w *chargenet.Webhook) gen.Webhook {
	out := gen.Webhook{Id: w.ID, Url: w.URL, Enabled: w.Enabled, CreatedAt: timestamp.New(w.CreatedAt), UpdatedAt: timestamp.New(w.UpdatedAt),
		EventTypes: make([]gen.WebhookSubscription, len(w.Subscriptions))}
	for i, sub := range w.Subscriptions {
		v := sub.APIVersion
		out.EventTypes[i] = gen.WebhookSubscription{Type: sub.Type, ApiVersion: &v}
	}
	if w.Description != "" {
		d := w.Description
		out.Description = &d
	}
	if w.DisabledReason != "" {
		r := w.DisabledReason
		out.DisabledReason = &r
	}
	return out
}

func webhookWithSecret(w *chargenet.Webhook) gen.WebhookWithSecret {
	a := webhookToAPI(w)
	return gen.WebhookWithSecret{Id: a.Id, Url: a.Url, Enabled: a.Enabled, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
		EventTypes: a.EventTypes, Description: a.Description, DisabledReason: a.DisabledReason, Secret: w.Secret}
}

func deliveryToAPI(a *chargenet.DeliveryAttempt) gen.Delivery {
	out := gen.Delivery{Id: a.ID, EventId: a.EventID, EventType: a.EventType, Attempt: a.Attempt, AttemptedAt: timestamp.New(a.AttemptedAt),
		Outcome: gen.DeliveryOutcome(a.Outcome), DurationMs: a.Duration.Milliseconds()}
	if a.HTTPStatus != 0 {
		st := a.HTTPStatus
		out.HttpStatus = &st
	}
	if a.Error != "" {
		e := a.Error
		out.Error = &e
	}
	out.NextAttemptAt = timestamp.Ptr(a.NextAttemptAt)
	return out
}
