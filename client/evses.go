package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"time"

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
func (c *Client) EVSE(ctx context.Context, uid int64, opts ...CallOption) (evse *EVSE, etag string, err error) {
	o := newCallOptions(opts)
	op := fmt.Sprintf("GET /v2/evses/%d", uid)
	res, err := c.api.GetEvse(ctx, uid)
	if err := c.answer(op, o, nil, res, err); err != nil {
		return nil, "", err
	}
	parsed, err := gen.ParseGetEvseResponse(res)
	if err != nil || parsed.JSON200 == nil {
		return nil, "", decodeError(op, res, err)
	}
	e := evseFromAPI(parsed.JSON200)
	return &e, res.Header.Get("ETag"), nil
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
func (c *Client) UpdateConnector(ctx context.Context, uid, connectorID int64, patch ConnectorPatch, opts ...CallOption) (evse *EVSE, etag string, err error) {
	o := newCallOptions(opts)
	op := fmt.Sprintf("PATCH /v2/evses/%d/connectors/%d", uid, connectorID)
	var params gen.UpdateConnectorParams
	if params.IfMatch, err = o.ifMatchParam(op); err != nil {
		return nil, "", err
	}
	res, err := c.api.UpdateConnector(ctx, uid, connectorID, &params, patch.toAPI())
	if err := c.answer(op, o, nil, res, err); err != nil {
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
func (c *Client) EVSEsPage(ctx context.Context, req PageRequest, opts ...CallOption) (*EVSEPage, error) {
	return c.evsesPage(ctx, req, nil, newCallOptions(opts))
}

// evsesPage reads one page of GET /v2/evses, of the change list when since is not nil.
func (c *Client) evsesPage(ctx context.Context, req PageRequest, since *time.Time, o *callOptions) (*EVSEPage, error) {
	const op = "GET /v2/evses"
	params := gen.ListEvsesParams{UpdatedSince: since}
	params.Cursor, params.Limit = req.params()
	res, err := c.api.ListEvses(ctx, &params)
	if err := c.answer(op, o, nil, res, err); err != nil {
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
	return all(ctx, opts, func(ctx context.Context, req PageRequest) (*EVSEPage, error) {
		return c.EVSEsPage(ctx, req)
	})
}

// CreateEVSE creates the EVSE e at an existing location and returns it, with the UID
// the service assigned, and its ETag. Its status is e.Status, or StatusPlanned when that
// is empty. The call carries an Idempotency-Key (one the client makes up, or the
// caller's with WithIdempotencyKey), so it is retried like a read (see RetryPolicy): a
// retry after a lost answer gets the first answer again (Response.Replayed) and never
// creates a second EVSE.
//
// It fails with ErrInvalid (Error.Param names the field) if a field is malformed or out
// of range, a connector breaks a connector rule (code invalid_connector), or the location
// does not exist; ErrConflict if e.EVSEID is taken (code conflict) or the location was
// deleted (code location_deleted); ErrIdempotencyKeyReused if the key of
// WithIdempotencyKey was used before for another request; ErrForbidden if the API key is
// not accepted; ErrRateLimited or ErrUnavailable if the service still refuses after the
// retries.
func (c *Client) CreateEVSE(ctx context.Context, e NewEVSE, opts ...CallOption) (evse *EVSE, etag string, err error) {
	o := newCallOptions(opts)
	const op = "POST /v2/evses"
	var params gen.CreateEvseParams
	if params.IdempotencyKey, err = o.idempotencyKeyParam(op); err != nil {
		return nil, "", err
	}
	res, err := c.api.CreateEvse(ctx, &params, e.toAPI())
	return evseResult(c, op, o, params.IdempotencyKey, res, err, http.StatusCreated, gen.ParseCreateEvseResponse,
		func(r *gen.CreateEvseResponse) *gen.EVSE { return r.JSON201 })
}

// UpdateEVSE changes the fields set in patch on the EVSE uid, the operator's changes:
// its status (commissioning a planned EVSE, taking it out of service and back), its
// charge box or its location. It returns the EVSE after the change and its new ETag.
// Setting the status the EVSE already has changes nothing. With IfMatch the change
// applies only if the EVSE did not change since that ETag was read; only then is it
// retried.
//
// It fails with ErrInvalid if patch sets no field, a value is malformed, or the location
// does not exist; ErrNotFound if there is no such EVSE; ErrConflict if the status
// transition is not allowed (code invalid_transition: the message lists the allowed
// targets), the EVSE is removed (code evse_removed) or the location was deleted (code
// location_deleted); ErrPreconditionFailed if IfMatch was given and the EVSE changed
// since; ErrForbidden if the API key is not accepted; ErrRateLimited or ErrUnavailable
// if the service refused.
func (c *Client) UpdateEVSE(ctx context.Context, uid int64, patch EVSEPatch, opts ...CallOption) (evse *EVSE, etag string, err error) {
	o := newCallOptions(opts)
	op := fmt.Sprintf("PATCH /v2/evses/%d", uid)
	var params gen.UpdateEvseParams
	if params.IfMatch, err = o.ifMatchParam(op); err != nil {
		return nil, "", err
	}
	res, err := c.api.UpdateEvse(ctx, uid, &params, patch.toAPI())
	return evseResult(c, op, o, nil, res, err, http.StatusOK, gen.ParseUpdateEvseResponse,
		func(r *gen.UpdateEvseResponse) *gen.EVSE { return r.JSON200 })
}

// RemoveEVSE decommissions the EVSE uid: its status becomes StatusRemoved, from any
// status, and every later change to it or its connectors fails with ErrConflict (code
// evse_removed). The EVSE stays readable. Removing a removed EVSE changes nothing. It
// returns the EVSE and its ETag, and is retried like a read (a repeat changes nothing).
//
// It fails with ErrNotFound if there is no such EVSE, ErrPreconditionFailed if IfMatch
// was given and the EVSE changed since, ErrForbidden if the API key is not accepted, and
// ErrRateLimited or ErrUnavailable if the service still refuses after the retries.
func (c *Client) RemoveEVSE(ctx context.Context, uid int64, opts ...CallOption) (evse *EVSE, etag string, err error) {
	o := newCallOptions(opts)
	op := fmt.Sprintf("DELETE /v2/evses/%d", uid)
	var params gen.RemoveEvseParams
	if params.IfMatch, err = o.ifMatchParam(op); err != nil {
		return nil, "", err
	}
	res, err := c.api.RemoveEvse(ctx, uid, &params)
	return evseResult(c, op, o, nil, res, err, http.StatusOK, gen.ParseRemoveEvseResponse,
		func(r *gen.RemoveEvseResponse) *gen.EVSE { return r.JSON200 })
}

// CreateConnector adds the connector conn to the EVSE uid and returns the whole EVSE and
// its new ETag. The service assigns the connector's ID, one more than the highest so far
// (deleted connectors included): the new connector is the last of evse.Connectors. Like
// CreateEVSE it carries an Idempotency-Key and is retried without risk of adding the
// connector twice.
//
// It fails with ErrInvalid (Error.Param names the field) if a value is out of range or
// the connector breaks a connector rule (code invalid_connector); ErrNotFound if there is
// no such EVSE; ErrConflict if the EVSE is removed (code evse_removed);
// ErrPreconditionFailed if IfMatch was given and the EVSE changed since;
// ErrIdempotencyKeyReused if the key of WithIdempotencyKey was used for another request;
// ErrForbidden if the API key is not accepted; ErrRateLimited or ErrUnavailable if the
// service still refuses after the retries.
func (c *Client) CreateConnector(ctx context.Context, uid int64, conn NewConnector, opts ...CallOption) (evse *EVSE, etag string, err error) {
	o := newCallOptions(opts)
	op := fmt.Sprintf("POST /v2/evses/%d/connectors", uid)
	var params gen.CreateConnectorParams
	if params.IfMatch, err = o.ifMatchParam(op); err != nil {
		return nil, "", err
	}
	if params.IdempotencyKey, err = o.idempotencyKeyParam(op); err != nil {
		return nil, "", err
	}
	res, err := c.api.CreateConnector(ctx, uid, &params, conn.toAPI())
	return evseResult(c, op, o, params.IdempotencyKey, res, err, http.StatusCreated, gen.ParseCreateConnectorResponse,
		func(r *gen.CreateConnectorResponse) *gen.EVSE { return r.JSON201 })
}

// DeleteConnector marks connector connectorID of the EVSE uid deleted: it gets a
// DeletedAt and stays in the EVSE's Connectors, so the charge box's connector numbers do
// not shift; it can no longer be updated. Deleting it again changes nothing. It returns
// the whole EVSE and its new ETag, and is retried like a read (a repeat changes
// nothing).
//
// It fails with ErrNotFound if the EVSE or connector does not exist, ErrConflict if the
// EVSE is removed (code evse_removed), ErrPreconditionFailed if IfMatch was given and the
// EVSE changed since, ErrForbidden if the API key is not accepted, and ErrRateLimited or
// ErrUnavailable if the service still refuses after the retries.
func (c *Client) DeleteConnector(ctx context.Context, uid, connectorID int64, opts ...CallOption) (evse *EVSE, etag string, err error) {
	o := newCallOptions(opts)
	op := fmt.Sprintf("DELETE /v2/evses/%d/connectors/%d", uid, connectorID)
	var params gen.DeleteConnectorParams
	if params.IfMatch, err = o.ifMatchParam(op); err != nil {
		return nil, "", err
	}
	res, err := c.api.DeleteConnector(ctx, uid, connectorID, &params)
	return evseResult(c, op, o, nil, res, err, http.StatusOK, gen.ParseDeleteConnectorResponse,
		func(r *gen.DeleteConnectorResponse) *gen.EVSE { return r.JSON200 })
}

// evseResult finishes a call whose success (status ok) is an EVSE with its ETag: parse
// decodes the answer and body picks the EVSE out of what it decoded.
func evseResult[R any](c *Client, op string, o *callOptions, idemKey *string, res *http.Response, err error, ok int,
	parse func(*http.Response) (*R, error), body func(*R) *gen.EVSE) (*EVSE, string, error) {
	if err := c.answer(op, o, idemKey, res, err, ok); err != nil {
		return nil, "", err
	}
	parsed, err := parse(res)
	if err != nil || body(parsed) == nil {
		return nil, "", decodeError(op, res, err)
	}
	e := evseFromAPI(body(parsed))
	return &e, res.Header.Get("ETag"), nil
}
