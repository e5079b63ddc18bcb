package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/chargenet/chargenet/timestamp"
)

// listLocationChanges answers GET /v1/locations?updated_since= with one page of the
// locations changed since then, deleted ones included, in change order.
func (s *inventory) listLocationChanges(ctx context.Context, req gen.ListLocationsRequestObject) (gen.ListLocationsResponseObject, error) {
	since := *req.Params.UpdatedSince
	page, err := chargenet.PaginateChanges(ctx, s.cursors, chargenet.ListLocationChanges, chargenet.ChangeFilter(since),
		deref(req.Params.Cursor), since, limit(req.Params.Limit), s.store.ListLocationChanges,
		func(l *chargenet.Location) (uint64, string) { return l.ChangePos, l.ID })
	if err != nil {
		return nil, err
	}
	out := gen.LocationPage{Data: make([]gen.Location, len(page.Items)), Pagination: changePagination(page)}
	for i := range page.Items {
		out.Data[i] = wire.Location(&page.Items[i])
	}
	return gen.ListLocations200JSONResponse{Body: out}, nil
}

// listEVSEChanges answers GET /v2/evses?updated_since= with one page of the EVSEs
// changed since then, removed ones included, in change order.
func (s *inventory) listEVSEChanges(ctx context.Context, req gen.ListEvsesRequestObject) (gen.ListEvsesResponseObject, error) {
	since := *req.Params.UpdatedSince
	page, err := chargenet.PaginateChanges(ctx, s.cursors, chargenet.ListEVSEChanges, chargenet.ChangeFilter(since),
		deref(req.Params.Cursor), since, limit(req.Params.Limit), s.store.ListEVSEChanges,
		func(e *chargenet.EVSE) (uint64, int64) { return e.ChangePos, e.UID })
	if err != nil {
		return nil, err
	}
	out := gen.EvsePage{Data: make([]gen.EVSE, len(page.Items)), Pagination: changePagination(page)}
	for i := range page.Items {
		out.Data[i] = wire.EVSE(&page.Items[i])
	}
	return gen.ListEvses200JSONResponse{Body: out}, nil
}

// eventLogStore is what the event log and the webhook test and replay use of a store.
type eventLogStore interface {
	ListEvents(ctx context.Context, seek chargenet.ChangeSeek[int64], types []string, actor string) ([]chargenet.Event, error)
	Event(ctx context.Context, id string) (*chargenet.Event, error)
	Webhook(ctx context.Context, owner, id string) (*chargenet.Webhook, error)
	SendTestEvent(ctx context.Context, owner, webhookID string, ev chargenet.Event, now time.Time) error
	ReplayEvents(ctx context.Context, owner, webhookID string, r chargenet.Replay, now time.Time) (int, error)
}

// eventLog answers the reads of the event log, and the test and replay of a webhook,
// which queue events for it.
type eventLog struct {
	store     eventLogStore
	cursors   *chargenet.CursorCodec
	now       func() time.Time
	catalogue []chargenet.EventType
	typeIndex map[string]*chargenet.EventType // the catalogue by type
}

// ListEvents answers GET /emsp/v1/events with one page of the event log.
func (s *eventLog) ListEvents(ctx context.Context, req gen.ListEventsRequestObject) (gen.ListEventsResponseObject, error) {
	var types []string
	if req.Params.Type != nil {
		types = *req.Params.Type
	}
	for _, t := range types {
		if err := s.loggedType(t); err != nil {
			return nil, err
		}
	}
	render, err := s.renderer(req.Params.ApiVersion)
	if err != nil {
		return nil, err
	}
	var since time.Time
	if req.Params.Since != nil {
		since = *req.Params.Since
	}
	who := deref(req.Params.Actor)
	page, err := chargenet.PaginateChanges(ctx, s.cursors, chargenet.ListEvents, chargenet.EventFilter(types, since, who),
		deref(req.Params.Cursor), since, limit(req.Params.Limit),
		func(ctx context.Context, seek chargenet.ChangeSeek[int64]) ([]chargenet.Event, error) {
			return s.store.ListEvents(ctx, seek, types, who)
		}, func(e *chargenet.Event) (uint64, int64) { return e.Pos, e.Seq })
	if err != nil {
		return nil, err
	}
	out := gen.EventPage{Data: make([]gen.LoggedEvent, len(page.Items)), Pagination: changePagination(page)}
	for i := range page.Items {
		if out.Data[i], err = render(&page.Items[i]); err != nil {
			return nil, err
		}
	}
	return gen.ListEvents200JSONResponse{Body: out}, nil
}

// GetEvent answers GET /emsp/v1/events/{eventId}.
func (s *eventLog) GetEvent(ctx context.Context, req gen.GetEventRequestObject) (gen.GetEventResponseObject, error) {
	render, err := s.renderer(req.Params.ApiVersion)
	if err != nil {
		return nil, err
	}
	ev, err := s.store.Event(ctx, req.EventId)
	if err == nil && !chargenet.Logged(ev.Type) { // never in the log (the store says so too)
		err = chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "eventId", "event %s not found", req.EventId)
	}
	if err != nil {
		return nil, err
	}
	out, err := render(ev)
	if err != nil {
		return nil, err
	}
	return gen.GetEvent200JSONResponse{Body: out}, nil
}

// loggedType checks that t, a type filter of the event log, names a type of the
// catalogue that the log holds.
func (s *eventLog) loggedType(t string) error {
	if t == chargenet.EventWebhookPing {
		return newError(http.StatusBadRequest, chargenet.CodeInvalidParameter, "type",
			"query parameter \"type\": %s events are not in the event log (they are sent only to the webhook under test)", t)
	}
	if !chargenet.Logged(t) {
		return newError(http.StatusBadRequest, chargenet.CodeInvalidParameter, "type",
			"query parameter \"type\": %s events are not in the event log (they are delivered to webhooks only; GET /v2/chargeboxes shows the connections)", t)
	}
	if s.typeIndex[t] == nil {
		return newError(http.StatusBadRequest, chargenet.CodeInvalidParameter, "type",
			"query parameter \"type\": %q is not an event type; see GET /emsp/v1/webhooks/event_types", t)
	}
	return nil
}

// renderer returns the function that turns a logged event into its LoggedEvent in the
// payload version asked for: for each event the highest version of its type not newer
// than apiVersion (its oldest version when every one is newer), or its type's latest
// when apiVersion is nil. An apiVersion that no type has is a 400.
func (s *eventLog) renderer(apiVersion *string) (func(*chargenet.Event) (gen.LoggedEvent, error), error) {
	if apiVersion != nil && !slices.ContainsFunc(s.catalogue, func(et chargenet.EventType) bool {
		return slices.Contains(et.APIVersions, *apiVersion)
	}) {
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidParameter, "api_version",
			"query parameter \"api_version\": no event type has version %q; see GET /emsp/v1/webhooks/event_types", *apiVersion)
	}
	return func(e *chargenet.Event) (gen.LoggedEvent, error) {
		et, ok := s.typeIndex[e.Type]
		if !ok {
			return gen.LoggedEvent{}, fmt.Errorf("event %s: type %s is not in the catalogue", e.ID, e.Type)
		}
		version := et.Latest
		if apiVersion != nil {
			version = et.APIVersions[0]
			for _, v := range et.APIVersions { // oldest first
				if chargenet.CompareVersions(v, *apiVersion) <= 0 {
					version = v
				}
			}
		}
		data, err := e.RenderData(version)
		if err != nil {
			return gen.LoggedEvent{}, err
		}
		out := gen.LoggedEvent{Id: e.ID, Type: e.Type, ApiVersion: version, Timestamp: timestamp.New(e.Time)}
		if err := out.Data.UnmarshalJSON(data); err != nil {
			return gen.LoggedEvent{}, fmt.Errorf("event %s: %w", e.ID, err)
		}
		return out, nil
	}, nil
}

// TestWebhook answers POST /emsp/v1/webhooks/{webhookId}/test: it queues a webhook.ping
// for this webhook only and answers 202 with the event's id.
func (s *eventLog) TestWebhook(ctx context.Context, req gen.TestWebhookRequestObject) (gen.TestWebhookResponseObject, error) {
	who := owner(ctx)
	w, err := s.enabledWebhook(ctx, who, req.WebhookId)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	ev := chargenet.NewPingEvent(w.ID, w.URL, now)
	ev.Actor = actor(ctx)
	if err := s.store.SendTestEvent(ctx, who, w.ID, ev, now); err != nil {
		return nil, err
	}
	return gen.TestWebhook202JSONResponse{Body: gen.WebhookTestResult{Id: ev.ID}}, nil
}

// ReplayWebhook answers POST /emsp/v1/webhooks/{webhookId}/replay: it queues the logged
// events the body selects for this webhook again and answers 202 with their number.
func (s *eventLog) ReplayWebhook(ctx context.Context, req gen.ReplayWebhookRequestObject) (gen.ReplayWebhookResponseObject, error) {
	if req.Body == nil {
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "", "request body is required")
	}
	r := chargenet.Replay{Since: req.Body.Since.UTC()}
	if req.Body.Until != nil {
		r.Until = req.Body.Until.UTC()
		if !r.Until.After(r.Since) {
			return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "until", "until (%s) must be after since (%s)",
				r.Until.Format(time.RFC3339Nano), r.Since.Format(time.RFC3339Nano))
		}
	}
	who := owner(ctx)
	w, err := s.store.Webhook(ctx, who, req.WebhookId)
	if err != nil {
		return nil, err
	}
	if req.Body.Types != nil {
		for i, t := range *req.Body.Types {
			if !slices.ContainsFunc(w.Subscriptions, func(sub chargenet.Subscription) bool { return sub.Type == t }) {
				subscribed := make([]string, len(w.Subscriptions))
				for j, sub := range w.Subscriptions {
					subscribed[j] = sub.Type
				}
				return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, fmt.Sprintf("types[%d]", i),
					"types[%d]: webhook %s does not subscribe to %q; it subscribes to %s", i, w.ID, t, strings.Join(subscribed, ", "))
			}
		}
		r.Types = slices.Clone(*req.Body.Types)
	}
	if !w.Enabled {
		return nil, disabled(w.ID)
	}
	n, err := s.store.ReplayEvents(ctx, who, w.ID, r, s.now().UTC())
	if err != nil {
		return nil, err
	}
	return gen.ReplayWebhook202JSONResponse{Body: gen.WebhookReplayResult{Queued: n}}, nil
}

// enabledWebhook returns owner's webhook id: ErrNotFound when there is none, a
// webhook_disabled ErrConflict when it is disabled.
func (s *eventLog) enabledWebhook(ctx context.Context, owner, id string) (*chargenet.Webhook, error) {
	w, err := s.store.Webhook(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if !w.Enabled {
		return nil, disabled(w.ID)
	}
	return w, nil
}

func disabled(id string) error {
	return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeWebhookDisabled, "",
		"webhook %s is disabled; enable it first (PATCH /emsp/v1/webhooks/%s with \"enabled\": true)", id, id)
}

// changePagination is the Pagination of a change list or event log page: forward only,
// with the resume cursor.
func changePagination[T any](p *chargenet.ChangePage[T]) gen.Pagination {
	out := gen.Pagination{HasMore: p.HasMore, ResumeCursor: &p.Resume}
	if p.Next != "" {
		out.NextCursor = &p.Next
	}
	return out
}
