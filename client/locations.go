package client

import (
	"context"
	"fmt"
	"iter"
	"net/url"

	"github.com/chargenet/chargenet/gen"
)

// Location returns the location with the given ID.
//
// It fails with ErrNotFound if there is no such location, ErrInvalid if id is not a
// valid location ID (1 to 36 letters, digits, "-" and "_"; an empty id is refused
// without contacting the service), ErrForbidden
// if the API key is not accepted, and ErrRateLimited or ErrUnavailable if the service
// still refuses after the retries.
func (c *Client) Location(ctx context.Context, id string) (*Location, error) {
	op := "GET /v1/locations/" + url.PathEscape(id)
	if id == "" {
		// "/v1/locations/" would address the list, not a location.
		return nil, fmt.Errorf("chargenet: %s: empty location ID: %w", op, ErrInvalid)
	}
	res, err := c.api.GetLocation(ctx, id)
	if err := c.answer(op, res, err); err != nil {
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
func (c *Client) LocationsPage(ctx context.Context, req PageRequest) (*LocationPage, error) {
	const op = "GET /v1/locations"
	var params gen.ListLocationsParams
	params.Cursor, params.Limit = req.params()
	res, err := c.api.ListLocations(ctx, &params)
	if err := c.answer(op, res, err); err != nil {
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
	return all(ctx, opts, c.LocationsPage)
}

// EventTypes returns the catalogue of event types a webhook can subscribe to, each with
// the payload versions it is available in. The list is small and not paginated.
//
// It fails with ErrForbidden if the API key is not accepted, and ErrRateLimited if the
// service still refuses after the retries.
func (c *Client) EventTypes(ctx context.Context) ([]EventType, error) {
	const op = "GET /emsp/v1/webhooks/event_types"
	res, err := c.api.ListEventTypes(ctx)
	if err := c.answer(op, res, err); err != nil {
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
