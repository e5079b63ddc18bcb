package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"time"

	"github.com/chargenet/chargenet/gen"
)

// SyncOptions configures LocationsSince, EVSEsSince and Events.
type SyncOptions struct {
	// PageSize is the number of items fetched per request, 1 to MaxPageSize; zero means
	// MaxPageSize. Other values make the iteration yield ErrInvalid.
	PageSize int
	// Cursor resumes an earlier walk: the Cursor of a Changes of the same list, taken
	// with the same filter (the same since, types). Empty starts at the filter's
	// beginning. A cursor of another list or filter makes the iteration yield ErrInvalid
	// (code invalid_cursor).
	Cursor string
}

// Changes walks a change list (LocationsSince, EVSEsSince) or the event log (Events),
// oldest change first. Range over All; afterwards, and at any time during the loop,
// Cursor says where to resume: keep it and pass it as SyncOptions.Cursor, with the same
// filter, to receive what changed later. That never misses a change, even when the
// service's writers commit out of timestamp order; resuming from the newest LastUpdated
// seen instead can. An item changed again comes again, in its new state.
//
// A Changes is not safe for concurrent use.
type Changes[T any] struct {
	opts   SyncOptions
	fetch  func(context.Context, PageRequest) (*Page[T], error)
	cursor string
}

// Cursor returns the position after the last page whose items were all yielded (the
// starting cursor before that). It is empty only when nothing was fetched yet and no
// SyncOptions.Cursor was given.
func (c *Changes[T]) Cursor() string { return c.cursor }

// All yields the items from the cursor on, fetching a page at a time as the loop asks
// for them, until the list's current end; breaking out of the loop stops fetching. A
// failure is yielded once, with the zero item, and ends the walk; Cursor then still
// points before the items not yet yielded. Ranging over All again continues from Cursor.
func (c *Changes[T]) All(ctx context.Context) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		req := PageRequest{Limit: c.opts.PageSize, Cursor: c.cursor}
		if req.Limit == 0 {
			req.Limit = MaxPageSize
		}
		for {
			page, err := c.fetch(ctx, req)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, item := range page.Items {
				if !yield(item, nil) {
					return // the page was not consumed: Cursor stays before it
				}
			}
			if page.ResumeCursor == "" {
				yield(zero, fmt.Errorf("chargenet: the service gave no resume_cursor after cursor %q", req.Cursor))
				return
			}
			c.cursor = page.ResumeCursor
			if !page.HasMore {
				return
			}
			if page.NextCursor == "" || page.NextCursor == req.Cursor {
				yield(zero, fmt.Errorf("chargenet: the service said has_more but gave no new next_cursor after cursor %q", req.Cursor))
				return
			}
			req.Cursor = page.NextCursor
		}
	}
}

func newChanges[T any](opts SyncOptions, fetch func(context.Context, PageRequest) (*Page[T], error)) *Changes[T] {
	return &Changes[T]{opts: opts, fetch: fetch, cursor: opts.Cursor}
}

// LocationsSince walks the locations whose LastUpdated is at or after since, deleted
// ones included (Location.Deleted), in the order they changed. See Changes for how to
// poll for later changes. The iteration yields ErrInvalid for a cursor of another list
// or another since (code invalid_cursor), ErrForbidden if the API key is not accepted,
// and ErrRateLimited or ErrUnavailable if the service still refuses after the retries.
func (c *Client) LocationsSince(since time.Time, opts SyncOptions) *Changes[Location] {
	return newChanges(opts, func(ctx context.Context, req PageRequest) (*Page[Location], error) {
		return c.locationsPage(ctx, req, &since, newCallOptions(nil))
	})
}

// EVSEsSince walks the EVSEs whose LastUpdated is at or after since, REMOVED ones
// included, in the order they changed, with the errors of LocationsSince. See Changes
// for how to poll for later changes.
func (c *Client) EVSEsSince(since time.Time, opts SyncOptions) *Changes[EVSE] {
	return newChanges(opts, func(ctx context.Context, req PageRequest) (*Page[EVSE], error) {
		return c.evsesPage(ctx, req, &since, newCallOptions(nil))
	})
}

// Event is one event of the service's event log, as a webhook delivery carries it.
type Event struct {
	// ID identifies the event; its deliveries carry it as webhook-id.
	ID string
	// Type is the event type, for example "evse.status.changed".
	Type string
	// APIVersion is the payload version Data is rendered in.
	APIVersion string
	// Timestamp is when the change happened.
	Timestamp time.Time
	// Data is the payload, whose shape depends on Type and APIVersion (the contract's
	// WebhookEvent data), as JSON.
	Data json.RawMessage
}

// EventQuery filters the event log.
type EventQuery struct {
	// Types keeps only events of these types (none: every type).
	Types []string
	// Since keeps only events at or after it (zero: the whole log). Use it for the
	// first walk only; resume with the Changes' Cursor.
	Since time.Time
	// Actor keeps only the events of the changes one API key made (its name), or one
	// charge box reported ("chargebox:<identity>"); empty: every event.
	Actor string
	// APIVersion renders each event in the highest version of its type not newer than
	// it; empty means each type's latest.
	APIVersion string
}

func (q EventQuery) params(req PageRequest) gen.ListEventsParams {
	var p gen.ListEventsParams
	p.Cursor, p.Limit = req.params()
	if len(q.Types) > 0 {
		p.Type = &q.Types
	}
	if !q.Since.IsZero() {
		p.Since = &q.Since
	}
	if q.Actor != "" {
		p.Actor = &q.Actor
	}
	if q.APIVersion != "" {
		p.ApiVersion = &q.APIVersion
	}
	return p
}

func eventFromAPI(e *gen.LoggedEvent) Event {
	data, _ := e.Data.MarshalJSON() // the raw JSON it was decoded from
	return Event{ID: e.Id, Type: e.Type, APIVersion: e.ApiVersion, Timestamp: e.Timestamp.Time, Data: data}
}

// Events walks the event log, every event the service produced in its retention period
// whether or not a webhook subscribes to it, oldest first, filtered by q. See Changes
// for how to poll for later events. The iteration yields ErrInvalid for an unknown type,
// webhook.ping, an APIVersion no type has (code invalid_parameter) or a cursor of
// another list or query (code invalid_cursor), ErrForbidden if the API key is not
// accepted, and ErrRateLimited or ErrUnavailable if the service still refuses after the
// retries.
func (c *Client) Events(q EventQuery, opts SyncOptions) *Changes[Event] {
	const op = "GET /emsp/v1/events"
	return newChanges(opts, func(ctx context.Context, req PageRequest) (*Page[Event], error) {
		o := newCallOptions(nil)
		params := q.params(req)
		res, err := c.api.ListEvents(ctx, &params)
		if err := c.answer(op, o, nil, res, err); err != nil {
			return nil, err
		}
		parsed, err := gen.ParseListEventsResponse(res)
		if err != nil || parsed.JSON200 == nil {
			return nil, decodeError(op, res, err)
		}
		return newPage(parsed.JSON200.Data, parsed.JSON200.Pagination, eventFromAPI), nil
	})
}

// Event returns the logged event with this id, in payload version apiVersion (see
// EventQuery.APIVersion; empty: its type's latest). It fails with ErrNotFound if there
// is no such event (never produced, older than the retention period, or a
// webhook.ping), ErrInvalid for a malformed id or an unknown version, ErrForbidden if
// the API key is not accepted, and ErrRateLimited or ErrUnavailable if the service still
// refuses after the retries.
func (c *Client) Event(ctx context.Context, id, apiVersion string, opts ...CallOption) (*Event, error) {
	o := newCallOptions(opts)
	op := "GET /emsp/v1/events/" + url.PathEscape(id)
	if id == "" {
		return nil, fmt.Errorf("chargenet: %s: empty event ID: %w", op, ErrInvalid)
	}
	var params gen.GetEventParams
	if apiVersion != "" {
		params.ApiVersion = &apiVersion
	}
	res, err := c.api.GetEvent(ctx, id, &params)
	if err := c.answer(op, o, nil, res, err); err != nil {
		return nil, err
	}
	parsed, err := gen.ParseGetEventResponse(res)
	if err != nil || parsed.JSON200 == nil {
		return nil, decodeError(op, res, err)
	}
	e := eventFromAPI(parsed.JSON200)
	return &e, nil
}

// TestWebhook has the service send a signed webhook.ping event to the webhook
// webhookID (one of this API key's) and returns the event's id, which the delivery
// carries as webhook-id; its attempt shows in the webhook's deliveries. Each call sends
// another ping, so it is not retried. It fails with ErrNotFound if there is no such
// webhook, ErrConflict (code webhook_disabled) if it is disabled, ErrForbidden if the API
// key is not accepted, and ErrRateLimited or ErrUnavailable.
func (c *Client) TestWebhook(ctx context.Context, webhookID string, opts ...CallOption) (string, error) {
	o := newCallOptions(opts)
	op := "POST /emsp/v1/webhooks/" + url.PathEscape(webhookID) + "/test"
	res, err := c.api.TestWebhook(sendOnce(ctx), webhookID)
	if err := c.answer(op, o, nil, res, err, http.StatusAccepted); err != nil {
		return "", err
	}
	parsed, err := gen.ParseTestWebhookResponse(res)
	if err != nil || parsed.JSON202 == nil {
		return "", decodeError(op, res, err)
	}
	return parsed.JSON202.Id, nil
}

// Replay selects the logged events ReplayWebhook queues again.
type Replay struct {
	// Since and Until bound the events' timestamps: Since <= timestamp < Until. A zero
	// Until means no upper bound.
	Since, Until time.Time
	// Types keeps only these types, each one the webhook subscribes to; none means every
	// type it subscribes to.
	Types []string
}

// ReplayWebhook queues the logged events r selects for delivery to webhook webhookID
// again, with their original ids (receivers drop the duplicates) in the payload version
// of the webhook's subscription, and returns how many it queued; events still waiting
// for the webhook are queued again too. It is not retried. It fails with ErrInvalid
// (Error.Param names the field) if Until is not after Since or a type is not subscribed,
// ErrNotFound if there is no such webhook, ErrConflict (code webhook_disabled) if it is
// disabled, ErrForbidden if the API key is not accepted, and ErrRateLimited or
// ErrUnavailable.
func (c *Client) ReplayWebhook(ctx context.Context, webhookID string, r Replay, opts ...CallOption) (int, error) {
	o := newCallOptions(opts)
	op := "POST /emsp/v1/webhooks/" + url.PathEscape(webhookID) + "/replay"
	body := gen.WebhookReplay{Since: r.Since}
	if !r.Until.IsZero() {
		body.Until = &r.Until
	}
	if len(r.Types) > 0 {
		body.Types = &r.Types
	}
	res, err := c.api.ReplayWebhook(sendOnce(ctx), webhookID, body)
	if err := c.answer(op, o, nil, res, err, http.StatusAccepted); err != nil {
		return 0, err
	}
	parsed, err := gen.ParseReplayWebhookResponse(res)
	if err != nil || parsed.JSON202 == nil {
		return 0, decodeError(op, res, err)
	}
	return parsed.JSON202.Queued, nil
}
