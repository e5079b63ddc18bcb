package ocpi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chargenet/chargenet"
	ocpigen "github.com/chargenet/chargenet/gen/ocpi"
	"github.com/chargenet/chargenet/internal/httpcheck"
	"github.com/chargenet/chargenet/openapi"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
)

// prefix is where the OCPI interface is served: the group HTTP.Register is given.
const prefix = "/ocpi"

// locationsPath is the path of the Locations module, whose answers swap the routing
// headers and which only a registered partner's credentials token opens.
const locationsPath = prefix + "/" + Version + "/locations"

// HTTP is the OCPI interface's HTTP layer over a Service: the OCPI contract's
// operations, each behind the OCPI middleware (request and correlation IDs, routing
// headers, the body limit, token authentication) and the validation of the request
// against the OCPI contract, and the OCPI envelope of every answer, errors included.
// The REST server mounts it under /ocpi (server.Config.OCPI) behind its common
// middleware. Create it with NewHTTP.
type HTTP struct {
	svc       *Service
	validator *httpcheck.Validator
	// allowed is the methods of each path template served, for 405's Allow; names the
	// name of each route's operation (operationNames).
	allowed map[string][]string
	names   map[string]string
}

// NewHTTP returns the HTTP layer of svc. It returns an error when the embedded OCPI
// contract cannot be loaded.
func NewHTTP(svc *Service) (*HTTP, error) {
	doc, err := ocpigen.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("ocpi: loading the embedded OCPI contract: %w", err)
	}
	// Authentication is the OCPI middleware's: it runs before the validator reads a body.
	v, err := httpcheck.NewValidator(doc, func(context.Context, *openapi3filter.AuthenticationInput) error { return nil })
	if err != nil {
		return nil, fmt.Errorf("ocpi: %w", err)
	}
	names, err := operationNames()
	if err != nil {
		return nil, err
	}
	h := &HTTP{svc: svc, validator: v, allowed: map[string][]string{}, names: names}
	for path, methods := range v.Allowed() {
		if served(path) {
			h.allowed[path] = methods
		}
	}
	return h, nil
}

// operationNames returns the name of each operation served, "ocpi." and its
// operationId, by method and Echo path, read once from the contract as written (the
// copy the generated code embeds has the operationIds capitalised). Some operationIds
// (getLocation, getEvse) are the REST contract's too.
var operationNames = sync.OnceValues(func() (map[string]string, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openapi.OCPISpec)
	if err != nil {
		return nil, fmt.Errorf("ocpi: reading the OCPI contract's operations: %w", err)
	}
	names := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if served(path) {
				names[method+" "+httpcheck.EchoPath(path)] = "ocpi." + op.OperationID
			}
		}
	}
	return names, nil
})

// served reports whether a path of the OCPI contract is one chargenet serves (under
// /ocpi; the partner interfaces it calls are under /partner).
func served(path string) bool { return path == prefix || strings.HasPrefix(path, prefix+"/") }

// call is what the OCPI middleware learned of a request: its IDs and its caller.
type call struct {
	requestID, correlationID string
	caller                   *Caller
}

type callKey struct{}

func callOf(ctx context.Context) *call {
	r, _ := ctx.Value(callKey{}).(*call)
	if r == nil {
		return &call{}
	}
	return r
}

// Register adds the OCPI contract's operations to g, the group of /ocpi: each behind
// the OCPI middleware (request and correlation IDs and routing headers, bodyLimit,
// authentication) and the request validation against the OCPI contract. It returns the
// routes, each named by its operation ("ocpi.getLocations"); errors are answered by
// WriteError. It returns an error when a route is not an operation of the contract.
func (h *HTTP) Register(g *echo.Group, bodyLimit echo.MiddlewareFunc) ([]*echo.Route, error) {
	r := &router{g: g, mw: []echo.MiddlewareFunc{headers, bodyLimit, h.authenticate, h.validate}, names: h.names}
	ocpigen.RegisterHandlers(r, ocpigen.NewStrictHandler(&handlers{svc: h.svc}, nil))
	return r.routes, r.err
}

// router registers the generated handlers on the group of /ocpi with the OCPI
// middleware, naming each route by its operation.
type router struct {
	g      *echo.Group
	mw     []echo.MiddlewareFunc
	names  map[string]string
	routes []*echo.Route
	err    error
}

func (r *router) add(method, path string, h echo.HandlerFunc, m []echo.MiddlewareFunc) *echo.Route {
	name, ok := r.names[method+" "+path]
	if !ok && r.err == nil {
		r.err = fmt.Errorf("ocpi: %s %s is no operation of the OCPI contract", method, path)
	}
	route := r.g.Add(method, strings.TrimPrefix(path, prefix), h, append(append([]echo.MiddlewareFunc{}, r.mw...), m...)...)
	route.Name = name
	r.routes = append(r.routes, route)
	return route
}

func (r *router) CONNECT(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodConnect, p, h, m)
}
func (r *router) DELETE(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodDelete, p, h, m)
}
func (r *router) GET(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodGet, p, h, m)
}
func (r *router) HEAD(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodHead, p, h, m)
}
func (r *router) OPTIONS(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodOptions, p, h, m)
}
func (r *router) PATCH(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPatch, p, h, m)
}
func (r *router) POST(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPost, p, h, m)
}
func (r *router) PUT(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPut, p, h, m)
}
func (r *router) TRACE(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodTrace, p, h, m)
}

// setIDs sets the X-Request-ID and X-Correlation-ID of the answer to a request under
// /ocpi: the request's when they are valid, new UUIDs otherwise; and, on the Locations
// module, the routing headers swapped. It returns them.
func setIDs(c echo.Context) (requestID, correlationID string) {
	req, h := c.Request(), c.Response().Header()
	requestID, correlationID = req.Header.Get("X-Request-ID"), req.Header.Get("X-Correlation-ID")
	if !validID(requestID) {
		requestID = NewRequestID()
	}
	if !validID(correlationID) {
		correlationID = NewRequestID()
	}
	h.Set("X-Request-ID", requestID)
	h.Set("X-Correlation-ID", correlationID)
	if p := req.URL.Path; p == locationsPath || strings.HasPrefix(p, locationsPath+"/") {
		swap := func(from, to string, country bool) {
			if v := routingHeader(req.Header.Get(from), country); v != "" {
				h.Set(to, v)
			}
		}
		swap("OCPI-from-country-code", "OCPI-to-country-code", true)
		swap("OCPI-from-party-id", "OCPI-to-party-id", false)
		swap("OCPI-to-country-code", "OCPI-from-country-code", true)
		swap("OCPI-to-party-id", "OCPI-from-party-id", false)
	}
	return requestID, correlationID
}

// validID reports whether s may be echoed as an X-Request-ID: 1 to 255 printable ASCII
// characters without spaces.
func validID(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// routingHeader returns a routing header's value when it is valid (a country code of
// two letters, or a party ID of three letters or digits), "" otherwise.
func routingHeader(v string, country bool) string {
	n := 3
	if country {
		n = 2
	}
	if len(v) != n {
		return ""
	}
	for i := 0; i < n; i++ {
		c := v[i]
		letter := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		if !letter && (country || c < '0' || c > '9') {
			return ""
		}
	}
	return v
}

// headers sets the answer's IDs and routing headers (setIDs) and keeps the IDs on the
// request's context for the handlers.
func headers(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rid, cid := setIDs(c)
		r := &call{requestID: rid, correlationID: cid}
		c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), callKey{}, r)))
		return next(c)
	}
}

// authenticate authenticates the request's token (see Service.Authenticate) and lets
// only a registered partner's credentials token into the Locations module.
func (h *HTTP) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		caller, err := h.svc.Authenticate(req.Context(), req.Header.Values("Authorization"))
		if err != nil {
			return err
		}
		if p := req.URL.Path; (p == locationsPath || strings.HasPrefix(p, locationsPath+"/")) && !caller.Registered() {
			return Unauthorized("header Authorization: this token opens only the versions and the credentials; " +
				"the Locations module needs the credentials token of a registered partner")
		}
		callOf(req.Context()).caller = caller
		return next(c)
	}
}

// validate checks the request against the OCPI contract (httpcheck.Validator).
func (h *HTTP) validate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if err := h.validator.Check(req.Context(), req); err != nil {
			return err
		}
		return next(c)
	}
}

// answerOf maps an error of the OCPI interface to the OCPI answer: an *Error as it is;
// the validator's and Echo's refusals as 400 (2001), 401, 404 or 405 (2000); an
// unavailable database and anything else as 500 (3000) without detail (internal true:
// the caller logs it).
func answerOf(err error, method, path string) (out *Error, internal bool) {
	var (
		oe  *Error
		he  *httpcheck.Error
		ehe *echo.HTTPError
		mbe *http.MaxBytesError
		de  *chargenet.Error
	)
	switch {
	case errors.As(err, &oe):
		return oe, false
	case errors.As(err, &mbe):
		return InvalidParameter("request body: larger than the limit of %d bytes", mbe.Limit), false
	case errors.As(err, &he):
		switch he.Status {
		case http.StatusUnauthorized, http.StatusForbidden:
			return Unauthorized("%s", he.Message), false
		case http.StatusNotFound:
			return Errorf(http.StatusNotFound, StatusClientError, "no OCPI endpoint at %s %s", method, path), false
		case http.StatusMethodNotAllowed:
			return MethodNotAllowed(he.Allow, "%s", he.Message), false
		}
		if he.Status < 500 {
			return InvalidParameter("%s", he.Message), false
		}
	case errors.As(err, &ehe) && ehe.Code < 500:
		msg, _ := ehe.Message.(string)
		switch ehe.Code {
		case http.StatusNotFound:
			return Errorf(http.StatusNotFound, StatusClientError, "no OCPI endpoint at %s %s", method, path), false
		case http.StatusMethodNotAllowed:
			return Errorf(http.StatusMethodNotAllowed, StatusClientError, "method %s is not allowed on %s", method, path), false
		}
		if msg == "" {
			msg = http.StatusText(ehe.Code)
		}
		return InvalidParameter("%s", msg), false
	case errors.As(err, &de) && errors.Is(de.Kind, chargenet.ErrNotFound):
		return UnknownObject("%s", de.Message), false
	case errors.As(err, &de) && (errors.Is(de.Kind, chargenet.ErrInvalid) || errors.Is(de.Kind, chargenet.ErrConflict)):
		return InvalidParameter("%s", de.Message), false
	case errors.Is(err, chargenet.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return Errorf(http.StatusInternalServerError, StatusServerError, "service temporarily unavailable, retry later"), false
	}
	return Errorf(http.StatusInternalServerError, StatusServerError, "internal error"), true
}

// WriteError answers err, which a route, the server's middleware or its router returned
// for a request under /ocpi, in the OCPI envelope, with the request's IDs and routing
// headers (set again: the error may come from before the OCPI middleware). A path
// served with other methods is 405 with Allow. An internal error is logged (the
// Service's Logger) and answered without detail.
func (h *HTTP) WriteError(c echo.Context, err error) {
	req, log := c.Request(), h.svc.cfg.Logger
	oe, internal := answerOf(err, req.Method, req.URL.Path)
	if oe.HTTPStatus == http.StatusNotFound && oe.Code == StatusClientError {
		for path, methods := range h.allowed {
			if httpcheck.MatchesTemplate(req.URL.Path, path) {
				allow := strings.Join(methods, ", ")
				oe = MethodNotAllowed(allow, "method %s is not allowed on %s; allowed: %s", req.Method, req.URL.Path, allow)
			}
		}
	}
	rid, _ := setIDs(c)
	if internal {
		log.ErrorContext(req.Context(), "internal error", "request_id", rid, "error", err.Error())
	} else if errors.Is(err, chargenet.ErrUnavailable) {
		log.WarnContext(req.Context(), "unavailable", "request_id", rid, "error", err.Error())
	}
	if oe.HTTPStatus == http.StatusMethodNotAllowed && oe.Allow != "" {
		c.Response().Header().Set("Allow", oe.Allow)
	}
	body := ocpigen.StatusResponse{StatusCode: oe.Code, StatusMessage: &oe.Message, Timestamp: DateTime(time.Now())}
	if req.Method == http.MethodHead {
		_ = c.NoContent(oe.HTTPStatus)
		return
	}
	if werr := c.JSON(oe.HTTPStatus, body); werr != nil {
		log.WarnContext(req.Context(), "writing error response", "request_id", rid, "error", werr.Error())
	}
}

const success = "Success"

// ids returns the answer's IDs of the request of ctx.
func ids(ctx context.Context) (string, string) {
	r := callOf(ctx)
	return r.requestID, r.correlationID
}

// handlers implements the OCPI contract's operations (ocpigen.StrictServerInterface)
// over a Service.
type handlers struct{ svc *Service }

var _ ocpigen.StrictServerInterface = (*handlers)(nil)

func (s *handlers) timestamp() string { return DateTime(s.svc.cfg.Now()) }

// GetVersions answers GET /ocpi/versions.
func (s *handlers) GetVersions(ctx context.Context, _ ocpigen.GetVersionsRequestObject) (ocpigen.GetVersionsResponseObject, error) {
	rid, cid := ids(ctx)
	msg := success
	return ocpigen.GetVersions200JSONResponse{Body: ocpigen.VersionListResponse{Data: s.svc.Versions(), StatusCode: StatusSuccess,
		StatusMessage: &msg, Timestamp: s.timestamp()}, Headers: ocpigen.GetVersions200ResponseHeaders{XRequestID: rid, XCorrelationID: cid}}, nil
}

// GetVersionDetails answers GET /ocpi/2.2.1.
func (s *handlers) GetVersionDetails(ctx context.Context, _ ocpigen.GetVersionDetailsRequestObject) (ocpigen.GetVersionDetailsResponseObject, error) {
	rid, cid := ids(ctx)
	msg := success
	return ocpigen.GetVersionDetails200JSONResponse{Body: ocpigen.VersionDetailsResponse{Data: s.svc.Details(), StatusCode: StatusSuccess,
		StatusMessage: &msg, Timestamp: s.timestamp()}, Headers: ocpigen.GetVersionDetails200ResponseHeaders{XRequestID: rid, XCorrelationID: cid}}, nil
}

// GetCredentials answers GET /ocpi/2.2.1/credentials with the caller's own token.
func (s *handlers) GetCredentials(ctx context.Context, _ ocpigen.GetCredentialsRequestObject) (ocpigen.GetCredentialsResponseObject, error) {
	r := callOf(ctx)
	msg := success
	return ocpigen.GetCredentials200JSONResponse{Body: ocpigen.CredentialsResponse{Data: s.svc.Credentials(r.caller.Token),
		StatusCode: StatusSuccess, StatusMessage: &msg, Timestamp: s.timestamp()},
		Headers: ocpigen.GetCredentials200ResponseHeaders{XRequestID: r.requestID, XCorrelationID: r.correlationID}}, nil
}

// exchanged returns the answer of a credentials exchange: chargenet's credentials, or
// the HTTP 200 failure (3001, 3003) the exchange returned.
func (s *handlers) exchanged(ctx context.Context, creds *ocpigen.Credentials, err error) (ocpigen.CredentialsExchangedJSONResponse, error) {
	rid, cid := ids(ctx)
	out := ocpigen.CredentialsExchangedJSONResponse{Headers: ocpigen.CredentialsExchangedResponseHeaders{XRequestID: rid, XCorrelationID: cid}}
	var oe *Error
	switch {
	case err == nil:
		msg := success
		out.Body = ocpigen.CredentialsExchangeResponse{Data: creds, StatusCode: StatusSuccess, StatusMessage: &msg, Timestamp: s.timestamp()}
	case errors.As(err, &oe) && oe.HTTPStatus == http.StatusOK:
		out.Body = ocpigen.CredentialsExchangeResponse{StatusCode: oe.Code, StatusMessage: &oe.Message, Timestamp: s.timestamp()}
	default:
		return out, err
	}
	return out, nil
}

// PostCredentials answers POST /ocpi/2.2.1/credentials: registration.
func (s *handlers) PostCredentials(ctx context.Context, req ocpigen.PostCredentialsRequestObject) (ocpigen.PostCredentialsResponseObject, error) {
	if req.Body == nil {
		return nil, InvalidParameter("request body is required")
	}
	creds, err := s.svc.Register(ctx, callOf(ctx).caller, req.Body)
	out, err := s.exchanged(ctx, creds, err)
	if err != nil {
		return nil, err
	}
	return ocpigen.PostCredentials200JSONResponse{CredentialsExchangedJSONResponse: out}, nil
}

// PutCredentials answers PUT /ocpi/2.2.1/credentials: a credentials update.
func (s *handlers) PutCredentials(ctx context.Context, req ocpigen.PutCredentialsRequestObject) (ocpigen.PutCredentialsResponseObject, error) {
	if req.Body == nil {
		return nil, InvalidParameter("request body is required")
	}
	creds, err := s.svc.Update(ctx, callOf(ctx).caller, req.Body)
	out, err := s.exchanged(ctx, creds, err)
	if err != nil {
		return nil, err
	}
	return ocpigen.PutCredentials200JSONResponse{CredentialsExchangedJSONResponse: out}, nil
}

// DeleteCredentials answers DELETE /ocpi/2.2.1/credentials: unregistration.
func (s *handlers) DeleteCredentials(ctx context.Context, _ ocpigen.DeleteCredentialsRequestObject) (ocpigen.DeleteCredentialsResponseObject, error) {
	if err := s.svc.Unregister(ctx, callOf(ctx).caller); err != nil {
		return nil, err
	}
	rid, cid := ids(ctx)
	msg := success
	return ocpigen.DeleteCredentials200JSONResponse{Body: ocpigen.StatusResponse{StatusCode: StatusSuccess, StatusMessage: &msg,
		Timestamp: s.timestamp()}, Headers: ocpigen.DeleteCredentials200ResponseHeaders{XRequestID: rid, XCorrelationID: cid}}, nil
}

// GetLocations answers GET /ocpi/2.2.1/locations with one page.
func (s *handlers) GetLocations(ctx context.Context, req ocpigen.GetLocationsRequestObject) (ocpigen.GetLocationsResponseObject, error) {
	p := req.Params
	page, err := s.svc.Locations(ctx, ListQuery{DateFrom: p.DateFrom, DateTo: p.DateTo, Offset: p.Offset, Limit: p.Limit,
		Position: p.Position})
	if err != nil {
		return nil, err
	}
	return locationListPage{page: page, timestamp: s.timestamp()}, nil
}

// locationListPage is the 200 answer of GetLocations, written from the page's encoded
// Locations: the contract's LocationListResponse as the generated response would
// encode it, and the pagination headers. The IDs and routing headers are set already.
type locationListPage struct {
	page      *LocationPage
	timestamp string
}

// VisitGetLocationsResponse writes the page: the envelope around the page's encoded
// Locations, assembled in one buffer and written at once, with a Content-Length, as the
// REST pages are. Written in parts, the last part waited for the end of the request and
// cost a system call of its own.
func (r locationListPage) VisitGetLocationsResponse(w http.ResponseWriter) error {
	const head, mid, tail = `{"data":`, `,"status_code":1000,"status_message":"Success","timestamp":"`, "\"}\n"
	pb := pageBuffers.Get().(*[]byte)
	defer pageBuffers.Put(pb)
	buf := append(append(append(append(append((*pb)[:0], head...), r.page.Data...), mid...), r.timestamp...), tail...)
	*pb = buf
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(buf)))
	h.Set("X-Total-Count", strconv.Itoa(r.page.Total))
	h.Set("X-Limit", strconv.Itoa(r.page.Limit))
	if r.page.Next != "" {
		h.Set("Link", "<"+r.page.Next+`>; rel="next"`)
	}
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(buf) // copied or sent before Write returns: the buffer can be reused
	return err
}

// GetLocation answers GET /ocpi/2.2.1/locations/{location_id}.
func (s *handlers) GetLocation(ctx context.Context, req ocpigen.GetLocationRequestObject) (ocpigen.GetLocationResponseObject, error) {
	l, err := s.svc.Location(ctx, req.LocationId)
	if err != nil {
		return nil, err
	}
	rid, cid := ids(ctx) // the routing headers are set already
	msg := success
	return ocpigen.GetLocation200JSONResponse{Body: ocpigen.LocationResponse{Data: *l, StatusCode: StatusSuccess, StatusMessage: &msg,
		Timestamp: s.timestamp()}, Headers: ocpigen.GetLocation200ResponseHeaders{XRequestID: rid, XCorrelationID: cid}}, nil
}

// GetEvse answers GET /ocpi/2.2.1/locations/{location_id}/{evse_uid}.
func (s *handlers) GetEvse(ctx context.Context, req ocpigen.GetEvseRequestObject) (ocpigen.GetEvseResponseObject, error) {
	e, err := s.svc.EVSE(ctx, req.LocationId, req.EvseUid)
	if err != nil {
		return nil, err
	}
	rid, cid := ids(ctx) // the routing headers are set already
	msg := success
	return ocpigen.GetEvse200JSONResponse{Body: ocpigen.EVSEResponse{Data: *e, StatusCode: StatusSuccess, StatusMessage: &msg,
		Timestamp: s.timestamp()}, Headers: ocpigen.GetEvse200ResponseHeaders{XRequestID: rid, XCorrelationID: cid}}, nil
}

// GetConnector answers GET /ocpi/2.2.1/locations/{location_id}/{evse_uid}/{connector_id}.
func (s *handlers) GetConnector(ctx context.Context, req ocpigen.GetConnectorRequestObject) (ocpigen.GetConnectorResponseObject, error) {
	c, err := s.svc.Connector(ctx, req.LocationId, req.EvseUid, req.ConnectorId)
	if err != nil {
		return nil, err
	}
	rid, cid := ids(ctx) // the routing headers are set already
	msg := success
	return ocpigen.GetConnector200JSONResponse{Body: ocpigen.ConnectorResponse{Data: *c, StatusCode: StatusSuccess, StatusMessage: &msg,
		Timestamp: s.timestamp()}, Headers: ocpigen.GetConnector200ResponseHeaders{XRequestID: rid, XCorrelationID: cid}}, nil
}

// pageBuffers holds the buffers pages are assembled in (a page of 100 Locations with
// their EVSEs is about 100 KB).
var pageBuffers = sync.Pool{New: func() any { return new([]byte) }}
