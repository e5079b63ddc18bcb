package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"time"

	"github.com/chargenet/chargenet/gen"
)

// Location returns the location with the given ID.
//
// It fails with ErrNotFound if there is no such location, ErrInvalid if id is not a
// valid location ID (1 to 36 letters, digits, "-" and "_"; an empty id is refused
// without contacting the service), ErrForbidden
// if the API key is not accepted, and ErrRateLimited or ErrUnavailable if the service
// still refuses after the retries.
func (c *Client) Location(ctx context.Context, id string, opts ...CallOption) (*Location, error) {
	o := newCallOptions(opts)
	op := "GET /v1/locations/" + url.PathEscape(id)
	if id == "" {
		// "/v1/locations/" would address the list, not a location.
		return nil, fmt.Errorf("chargenet: %s: empty location ID: %w", op, ErrInvalid)
	}
	res, err := c.api.GetLocation(ctx, id)
	if err := c.answer(op, o, nil, res, err); err != nil {
		return nil, err
	}
	parsed, err := gen.ParseGetLocationResponse(res)
	if err != nil || parsed.JSON200 == nil {
		return nil, decodeError(op, res, err)
	}
	l := locationFromAPI(parsed.JSON200)
	return &l, nil
}

// LocationsPage returns one page of locations in ascending ID order. Pass the page's
// NextCursor (or PreviousCursor) in the next PageRequest to move through the list.
//
// It fails with ErrInvalid if the cursor was not issued for this list or was altered
// (code invalid_cursor) or the limit is out of range (code invalid_parameter),
// ErrForbidden if the API key is not accepted, and ErrRateLimited or ErrUnavailable if
// the service still refuses after the retries.
func (c *Client) LocationsPage(ctx context.Context, req PageRequest, opts ...CallOption) (*LocationPage, error) {
	return c.locationsPage(ctx, req, nil, newCallOptions(opts))
}

// locationsPage reads one page of GET /v1/locations, of the change list when since is
// not nil.
func (c *Client) locationsPage(ctx context.Context, req PageRequest, since *time.Time, o *callOptions) (*LocationPage, error) {
	const op = "GET /v1/locations"
	params := gen.ListLocationsParams{UpdatedSince: since}
	params.Cursor, params.Limit = req.params()
	res, err := c.api.ListLocations(ctx, &params)
	if err := c.answer(op, o, nil, res, err); err != nil {
		return nil, err
	}
	parsed, err := gen.ParseListLocationsResponse(res)
	if err != nil || parsed.JSON200 == nil {
		return nil, decodeError(op, res, err)
	}
	return newPage(parsed.JSON200.Data, parsed.JSON200.Pagination, locationFromAPI), nil
}

// Locations iterates over all locations in ascending ID order, fetching opts.PageSize
// at a time as the loop asks for them; breaking out of the loop stops fetching.
//
//	for loc, err := range c.Locations(ctx, client.ListOptions{}) {
//		if err != nil {
//			return err
//		}
//		...
//	}
//
// A failure is yielded once, as the error of the last iteration, with the errors of
// LocationsPage.
func (c *Client) Locations(ctx context.Context, opts ListOptions) iter.Seq2[Location, error] {
	return all(ctx, opts, func(ctx context.Context, req PageRequest) (*LocationPage, error) {
		return c.LocationsPage(ctx, req)
	})
}

// EventTypes returns the catalogue of event types a webhook can subscribe to, each with
// the payload versions it is available in. The list is small and not paginated.
//
// It fails with ErrForbidden if the API key is not accepted, and ErrRateLimited if the
// service still refuses after the retries.
func (c *Client) EventTypes(ctx context.Context, opts ...CallOption) ([]EventType, error) {
	o := newCallOptions(opts)
	const op = "GET /emsp/v1/webhooks/event_types"
	res, err := c.api.ListEventTypes(ctx)
	if err := c.answer(op, o, nil, res, err); err != nil {
		return nil, err
	}
	parsed, err := gen.ParseListEventTypesResponse(res)
	if err != nil || parsed.JSON200 == nil {
		return nil, decodeError(op, res, err)
	}
	types := make([]EventType, len(parsed.JSON200.EventTypes))
	for i, t := range parsed.JSON200.EventTypes {
		types[i] = EventType{Type: t.Type, APIVersions: t.ApiVersions, Latest: t.Latest}
	}
	return types, nil
}

// PutLocation creates the location loc.ID with the fields of loc, or replaces every
// field of the existing one; the caller chooses location IDs, as in OCPI. EVSEUIDs,
// LastUpdated and DeletedAt are the service's to compute and are not sent. It returns the
// location as stored and whether it was created (false: replaced, or already as given,
// in which case LastUpdated did not move). A PUT changes the same location to the same
// fields however often it is sent, so it is retried like a read; a retry after a lost
// answer to a creation reports created as false.
//
// It fails with ErrInvalid (Error.Param names the field) if loc.ID is not a valid
// location ID (an empty one is refused without contacting the service) or a field is
// malformed or out of range (an unknown time zone, a country that is not ISO 3166-1
// alpha-3, ...); ErrConflict if the location was deleted (code location_deleted: its ID
// is never used again); ErrForbidden if the API key is not accepted; ErrRateLimited or
// ErrUnavailable if the service still refuses after the retries.
func (c *Client) PutLocation(ctx context.Context, loc Location, opts ...CallOption) (l *Location, created bool, err error) {
	o := newCallOptions(opts)
	op := "PUT /v1/locations/" + url.PathEscape(loc.ID)
	if loc.ID == "" {
		return nil, false, fmt.Errorf("chargenet: %s: empty location ID: %w", op, ErrInvalid)
	}
	res, err := c.api.PutLocation(ctx, loc.ID, loc.toAPI())
	if err := c.answer(op, o, nil, res, err, http.StatusOK, http.StatusCreated); err != nil {
		return nil, false, err
	}
	parsed, err := gen.ParsePutLocationResponse(res)
	if err != nil {
		return nil, false, decodeError(op, res, err)
	}
	a := parsed.JSON200
	if res.StatusCode == http.StatusCreated {
		a = parsed.JSON201
	}
	if a == nil {
		return nil, false, decodeError(op, res, nil)
	}
	out := locationFromAPI(a)
	return &out, res.StatusCode == http.StatusCreated, nil
}

// DeleteLocation deletes the location id and returns it with its DeletedAt. A deleted
// location stays readable with Location but is in no list page, and its ID cannot be
// used again. Deleting a deleted location changes nothing, so the call is retried like a
// read.
//
// It fails with ErrNotFound if there is no such location; ErrConflict if one of its
// EVSEs is not removed (code location_in_use: remove them first with RemoveEVSE);
// ErrInvalid if id is not a valid location ID (an empty one is refused without
// contacting the service); ErrForbidden if the API key is not accepted; ErrRateLimited or
// ErrUnavailable if the service still refuses after the retries.
func (c *Client) DeleteLocation(ctx context.Context, id string, opts ...CallOption) (*Location, error) {
	o := newCallOptions(opts)
	op := "DELETE /v1/locations/" + url.PathEscape(id)
	if id == "" {
		return nil, fmt.Errorf("chargenet: %s: empty location ID: %w", op, ErrInvalid)
	}
	res, err := c.api.DeleteLocation(ctx, id)
	if err := c.answer(op, o, nil, res, err); err != nil {
		return nil, err
	}
	parsed, err := gen.ParseDeleteLocationResponse(res)
	if err != nil || parsed.JSON200 == nil {
		return nil, decodeError(op, res, err)
	}
	l := locationFromAPI(parsed.JSON200)
	return &l, nil
}
