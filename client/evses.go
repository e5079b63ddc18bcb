package client

import (
	"context"
	"fmt"
	"iter"

	"github.com/chargenet/chargenet/gen"
)

// EVSE returns the EVSE with the given UID, with all its connectors (deleted ones
// included), and its ETag: an opaque tag of this state of the EVSE, to pass to
// UpdateConnector with IfMatch so that the update applies only if nobody changed the
// EVSE in between.
//
// It fails with ErrNotFound if there is no such EVSE, ErrInvalid if uid is not positive,
// ErrForbidden if the API key is not accepted, and ErrRateLimited or ErrUnavailable if
// the service still refuses after the retries.
func (c *Client) EVSE(ctx context.Context, uid int64) (evse *EVSE, etag string, err error) {
	op := fmt.Sprintf("GET /v2/evses/%d", uid)
	res, err := c.api.GetEvse(ctx, uid)
	if err := c.answer(op, res, err); err != nil {
		return nil, "", err
	}
	parsed, err := gen.ParseGetEvseResponse(res)
	if err != nil || parsed.JSON200 == nil {
		return nil, "", decodeError(op, res, err)
	}
	e := evseFromAPI(parsed.JSON200)
	return &e, res.Header.Get("ETag"), nil
}

// UpdateOption configures one UpdateConnector call.
type UpdateOption func(*updateOptions)

type updateOptions struct {
	ifMatch    string
	hasIfMatch bool
}

// IfMatch makes UpdateConnector conditional: the update applies only if the EVSE's
// current ETag is etag (as returned by EVSE or a previous UpdateConnector), otherwise it
// fails with ErrPreconditionFailed and changes nothing. "*" matches any ETag. A
// conditional update is also retried on network errors and 429/502/503/504 answers (see
// RetryPolicy). An empty etag makes UpdateConnector fail with ErrInvalid before sending
// anything, so that a missing ETag never turns into an unconditional update.
func IfMatch(etag string) UpdateOption {
	return func(o *updateOptions) { o.ifMatch, o.hasIfMatch = etag, true }
}

// UpdateConnector changes the fields set in patch on connector connectorID of the EVSE
// uid; the other fields keep their value. It returns the whole EVSE after the update and
// its new ETag.
//
// It fails with ErrInvalid (Error.Param names the field) if patch sets no field, a
// value is out of range, or the result would break a connector rule (code
// invalid_connector: for example a DC standard on an AC connector); ErrNotFound if the
// EVSE or connector does not exist; ErrConflict if the connector was deleted;
// ErrPreconditionFailed if IfMatch was given and the EVSE changed since; ErrForbidden if
// the API key is not accepted; ErrRateLimited or ErrUnavailable if the service refused.
// Without IfMatch the update is sent once and never retried.
func (c *Client) UpdateConnector(ctx context.Context, uid, connectorID int64, patch ConnectorPatch, opts ...UpdateOption) (evse *EVSE, etag string, err error) {
	var o updateOptions
	for _, opt := range opts {
		opt(&o)
	}
	op := fmt.Sprintf("PATCH /v2/evses/%d/connectors/%d", uid, connectorID)
	var params gen.UpdateConnectorParams
	if o.hasIfMatch {
		if o.ifMatch == "" {
			return nil, "", fmt.Errorf("chargenet: %s: IfMatch with an empty ETag: %w", op, ErrInvalid)
		}
		params.IfMatch = &o.ifMatch
	}
	res, err := c.api.UpdateConnector(ctx, uid, connectorID, &params, patch.toAPI())
	if err := c.answer(op, res, err); err != nil {
		return nil, "", err
	}
	parsed, err := gen.ParseUpdateConnectorResponse(res)
	if err != nil || parsed.JSON200 == nil {
		return nil, "", decodeError(op, res, err)
	}
	e := evseFromAPI(parsed.JSON200)
	return &e, res.Header.Get("ETag"), nil
}

// EVSEsPage returns one page of EVSEs in ascending UID order, each with all its
// connectors. Pass the page's NextCursor (or PreviousCursor) in the next PageRequest to
// move through the list.
//
// It fails with ErrInvalid if the cursor was not issued for this list or was altered
// (code invalid_cursor) or the limit is out of range (code invalid_parameter),
// ErrForbidden if the API key is not accepted, and ErrRateLimited or ErrUnavailable if
// the service still refuses after the retries.
func (c *Client) EVSEsPage(ctx context.Context, req PageRequest) (*EVSEPage, error) {
	const op = "GET /v2/evses"
	var params gen.ListEvsesParams
	params.Cursor, params.Limit = req.params()
	res, err := c.api.ListEvses(ctx, &params)
	if err := c.answer(op, res, err); err != nil {
		return nil, err
	}
	parsed, err := gen.ParseListEvsesResponse(res)
	if err != nil || parsed.JSON200 == nil {
		return nil, decodeError(op, res, err)
	}
	return newPage(parsed.JSON200.Data, parsed.JSON200.Pagination, evseFromAPI), nil
}

// EVSEs iterates over all EVSEs in ascending UID order, fetching opts.PageSize at a
// time as the loop asks for them; breaking out of the loop stops fetching.
//
//	for evse, err := range c.EVSEs(ctx, client.ListOptions{}) {
//		if err != nil {
//			return err
//		}
//		...
//	}
//
// A failure is yielded once, as the error of the last iteration, with the errors of
// EVSEsPage.
func (c *Client) EVSEs(ctx context.Context, opts ListOptions) iter.Seq2[EVSE, error] {
	return all(ctx, opts, c.EVSEsPage)
}
