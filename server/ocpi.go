package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chargenet/chargenet"
	ocpigen "github.com/chargenet/chargenet/gen/ocpi"
	"github.com/chargenet/chargenet/internal/httpcheck"
	"github.com/chargenet/chargenet/ocpi"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
)

// ocpiPrefix is where the OCPI interface is served.
const ocpiPrefix = "/ocpi/"

// ocpiLocations is the path of the Locations module, whose answers swap the routing
// headers and which only a registered partner's credentials token opens.
const ocpiLocations = "/ocpi/" + ocpi.Version + "/locations"

// ocpiServer implements the OCPI contract's operations (ocpigen.StrictServerInterface)
// over an ocpi.Service.
type ocpiServer struct {
	svc *ocpi.Service
	now func() time.Time
}

var _ ocpigen.StrictServerInterface = (*ocpiServer)(nil)

// ocpiRequest is what the OCPI middleware learned of a request: its IDs and its
// caller.
type ocpiRequest struct {
	requestID, correlationID string
	caller                   *ocpi.Caller
}

type ocpiRequestKey struct{}

func ocpiRequestOf(ctx context.Context) *ocpiRequest {
	r, _ := ctx.Value(ocpiRequestKey{}).(*ocpiRequest)
	if r == nil {
		return &ocpiRequest{}
	}
	return r
}

// registerOCPI serves the OCPI contract's operations under /ocpi on e: each behind the
// OCPI middleware (request and correlation IDs, routing headers, body limit,
// authentication) and the request validation against the OCPI contract. It returns the
// methods of each served path template, for 405's Allow; errors are answered by
// writeOCPIError.
func registerOCPI(e *echo.Echo, svc *ocpi.Service, bodyLimit int64, now func() time.Time) (map[string][]string, error) {
	doc, err := ocpigen.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("loading the embedded OCPI contract: %w", err)
	}
	// Authentication is the OCPI middleware's: it runs before the validator reads a body.
	v, err := httpcheck.NewValidator(doc, func(context.Context, *openapi3filter.AuthenticationInput) error { return nil })
	if err != nil {
		return nil, err
	}
	mw := []echo.MiddlewareFunc{ocpiHeaders, bodyLimitMiddleware(bodyLimit), ocpiAuth(svc), validation(v)}
	ocpigen.RegisterHandlers(ocpiRouter{e: e, mw: mw}, ocpigen.NewStrictHandler(&ocpiServer{svc: svc, now: now}, nil))
	allowed := map[string][]string{}
	for path, methods := range v.Allowed() {
		if isOCPIPath(path) {
			allowed[path] = methods
		}
	}
	return allowed, nil
}

// ocpiRouter registers the generated handlers on Echo with the OCPI middleware.
type ocpiRouter struct {
	e  *echo.Echo
	mw []echo.MiddlewareFunc
}

func (r ocpiRouter) add(method, path string, h echo.HandlerFunc, m []echo.MiddlewareFunc) *echo.Route {
	return r.e.Add(method, path, h, append(append([]echo.MiddlewareFunc{}, r.mw...), m...)...)
}

func (r ocpiRouter) CONNECT(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodConnect, p, h, m)
}
func (r ocpiRouter) DELETE(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodDelete, p, h, m)
}
func (r ocpiRouter) GET(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodGet, p, h, m)
}
func (r ocpiRouter) HEAD(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodHead, p, h, m)
}
func (r ocpiRouter) OPTIONS(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodOptions, p, h, m)
}
func (r ocpiRouter) PATCH(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPatch, p, h, m)
}
func (r ocpiRouter) POST(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPost, p, h, m)
}
func (r ocpiRouter) PUT(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPut, p, h, m)
}
func (r ocpiRouter) TRACE(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodTrace, p, h, m)
}

// ocpiIDs sets the X-Request-ID and X-Correlation-ID of the answer to a request under
// /ocpi: the request's when they are valid, new UUIDs otherwise; and, on the Locations
// module, the routing headers swapped. It returns them.
func ocpiIDs(c echo.Context) (requestID, correlationID string) {
	req, h := c.Request(), c.Response().Header()
	requestID, correlationID = req.Header.Get("X-Request-ID"), req.Header.Get("X-Correlation-ID")
	if !ocpiID(requestID) {
		requestID = ocpi.NewRequestID()
	}
	if !ocpiID(correlationID) {
		correlationID = ocpi.NewRequestID()
	}
	h.Set("X-Request-ID", requestID)
	h.Set("X-Correlation-ID", correlationID)
	if p := req.URL.Path; p == ocpiLocations || strings.HasPrefix(p, ocpiLocations+"/") {
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

// ocpiID reports whether s may be echoed as an X-Request-ID: 1 to 255 printable ASCII
// characters without spaces.
func ocpiID(s string) bool {
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

// ocpiHeaders sets the answer's IDs and routing headers (ocpiIDs) and keeps the IDs on
// the request's context for the handlers.
func ocpiHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rid, cid := ocpiIDs(c)
		r := &ocpiRequest{requestID: rid, correlationID: cid}
		c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), ocpiRequestKey{}, r)))
		return next(c)
	}
}

// ocpiAuth authenticates the request's token (see ocpi.Service.Authenticate) and lets
// only a registered partner's credentials token into the Locations module.
func ocpiAuth(svc *ocpi.Service) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			caller, err := svc.Authenticate(req.Context(), req.Header.Values("Authorization"))
			if err != nil {
				return err
			}
			if p := req.URL.Path; (p == ocpiLocations || strings.HasPrefix(p, ocpiLocations+"/")) && !caller.Registered() {
				return ocpi.Unauthorized("header Authorization: this token opens only the versions and the credentials; " +
					"the Locations module needs the credentials token of a registered partner")
			}
			ocpiRequestOf(req.Context()).caller = caller
			return next(c)
		}
	}
}

// isOCPIPath reports whether a request path is under /ocpi.
func isOCPIPath(p string) bool { return p == "/ocpi" || strings.HasPrefix(p, ocpiPrefix) }

// ocpiError maps an error of the OCPI interface to the OCPI answer: an *ocpi.Error as
// it is; the validator's and Echo's refusals as 400 (2001), 401, 404 or 405 (2000); an
// unavailable database and anything else as 500 (3000) without detail (internal true:
// the caller logs it).
func ocpiError(err error, method, path string) (out *ocpi.Error, internal bool) {
	var (
		oe  *ocpi.Error
		he  *httpcheck.Error
		ehe *echo.HTTPError
		mbe *http.MaxBytesError
		de  *chargenet.Error
	)
	switch {
	case errors.As(err, &oe):
		return oe, false
	case errors.As(err, &mbe):
		return ocpi.InvalidParameter("request body: larger than the limit of %d bytes", mbe.Limit), false
	case errors.As(err, &he):
		switch he.Status {
		case http.StatusUnauthorized, http.StatusForbidden:
			return ocpi.Unauthorized("%s", he.Message), false
		case http.StatusNotFound:
			return ocpi.Errorf(http.StatusNotFound, ocpi.StatusClientError, "no OCPI endpoint at %s %s", method, path), false
		case http.StatusMethodNotAllowed:
			return ocpi.MethodNotAllowed(he.Allow, "%s", he.Message), false
		}
		if he.Status < 500 {
			return ocpi.InvalidParameter("%s", he.Message), false
		}
	case errors.As(err, &ehe) && ehe.Code < 500:
		msg, _ := ehe.Message.(string)
		switch ehe.Code {
		case http.StatusNotFound:
			return ocpi.Errorf(http.StatusNotFound, ocpi.StatusClientError, "no OCPI endpoint at %s %s", method, path), false
		case http.StatusMethodNotAllowed:
			return ocpi.Errorf(http.StatusMethodNotAllowed, ocpi.StatusClientError, "method %s is not allowed on %s", method, path), false
		}
		if msg == "" {
			msg = http.StatusText(ehe.Code)
		}
		return ocpi.InvalidParameter("%s", msg), false
	case errors.As(err, &de) && errors.Is(de.Kind, chargenet.ErrNotFound):
		return ocpi.UnknownObject("%s", de.Message), false
	case errors.As(err, &de) && (errors.Is(de.Kind, chargenet.ErrInvalid) || errors.Is(de.Kind, chargenet.ErrConflict)):
		return ocpi.InvalidParameter("%s", de.Message), false
	case errors.Is(err, chargenet.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return ocpi.Errorf(http.StatusInternalServerError, ocpi.StatusServerError, "service temporarily unavailable, retry later"), false
	}
	return ocpi.Errorf(http.StatusInternalServerError, ocpi.StatusServerError, "internal error"), true
}

// writeOCPIError answers err in the OCPI envelope, with the request's IDs and routing
// headers (set again: the error may come from before the OCPI middleware). A path that
// allowed (template → methods) serves with other methods is 405 with Allow.
func writeOCPIError(log *slog.Logger, allowed map[string][]string, c echo.Context, err error) {
	req := c.Request()
	oe, internal := ocpiError(err, req.Method, req.URL.Path)
	if oe.HTTPStatus == http.StatusNotFound && oe.Code == ocpi.StatusClientError {
		for path, methods := range allowed {
			if httpcheck.MatchesTemplate(req.URL.Path, path) {
				allow := strings.Join(methods, ", ")
				oe = ocpi.MethodNotAllowed(allow, "method %s is not allowed on %s; allowed: %s", req.Method, req.URL.Path, allow)
			}
		}
	}
	rid, _ := ocpiIDs(c)
	if internal {
		log.ErrorContext(req.Context(), "internal error", "request_id", rid, "error", err.Error())
	} else if errors.Is(err, chargenet.ErrUnavailable) {
		log.WarnContext(req.Context(), "unavailable", "request_id", rid, "error", err.Error())
	}
	if oe.HTTPStatus == http.StatusMethodNotAllowed && oe.Allow != "" {
		c.Response().Header().Set("Allow", oe.Allow)
	}
	body := ocpigen.StatusResponse{StatusCode: oe.Code, StatusMessage: &oe.Message, Timestamp: ocpi.DateTime(time.Now())}
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
	r := ocpiRequestOf(ctx)
	return r.requestID, r.correlationID
}

func (s *ocpiServer) timestamp() string { return ocpi.DateTime(s.now()) }

// GetVersions answers GET /ocpi/versions.
func (s *ocpiServer) GetVersions(ctx context.Context, _ ocpigen.GetVersionsRequestObject) (ocpigen.GetVersionsResponseObject, error) {
	rid, cid := ids(ctx)
	msg := success
	return ocpigen.GetVersions200JSONResponse{Body: ocpigen.VersionListResponse{Data: s.svc.Versions(), StatusCode: ocpi.StatusSuccess,
		StatusMessage: &msg, Timestamp: s.timestamp()}, Headers: ocpigen.GetVersions200ResponseHeaders{XRequestID: rid, XCorrelationID: cid}}, nil
}

// GetVersionDetails answers GET /ocpi/2.2.1.
func (s *ocpiServer) GetVersionDetails(ctx context.Context, _ ocpigen.GetVersionDetailsRequestObject) (ocpigen.GetVersionDetailsResponseObject, error) {
	rid, cid := ids(ctx)
	msg := success
	return ocpigen.GetVersionDetails200JSONResponse{Body: ocpigen.VersionDetailsResponse{Data: s.svc.Details(), StatusCode: ocpi.StatusSuccess,
		StatusMessage: &msg, Timestamp: s.timestamp()}, Headers: ocpigen.GetVersionDetails200ResponseHeaders{XRequestID: rid, XCorrelationID: cid}}, nil
}

// GetCredentials answers GET /ocpi/2.2.1/credentials with the caller's own token.
func (s *ocpiServer) GetCredentials(ctx context.Context, _ ocpigen.GetCredentialsRequestObject) (ocpigen.GetCredentialsResponseObject, error) {
	r := ocpiRequestOf(ctx)
	msg := success
	return ocpigen.GetCredentials200JSONResponse{Body: ocpigen.CredentialsResponse{Data: s.svc.Credentials(r.caller.Token),
		StatusCode: ocpi.StatusSuccess, StatusMessage: &msg, Timestamp: s.timestamp()},
		Headers: ocpigen.GetCredentials200ResponseHeaders{XRequestID: r.requestID, XCorrelationID: r.correlationID}}, nil
}

// exchanged returns the answer of a credentials exchange: chargenet's credentials, or
// the HTTP 200 failure (3001, 3003) the exchange returned.
func (s *ocpiServer) exchanged(ctx context.Context, creds *ocpigen.Credentials, err error) (ocpigen.CredentialsExchangedJSONResponse, error) {
	rid, cid := ids(ctx)
	out := ocpigen.CredentialsExchangedJSONResponse{Headers: ocpigen.CredentialsExchangedResponseHeaders{XRequestID: rid, XCorrelationID: cid}}
	var oe *ocpi.Error
	switch {
	case err == nil:
		msg := success
		out.Body = ocpigen.CredentialsExchangeResponse{Data: creds, StatusCode: ocpi.StatusSuccess, StatusMessage: &msg, Timestamp: s.timestamp()}
	case errors.As(err, &oe) && oe.HTTPStatus == http.StatusOK:
		out.Body = ocpigen.CredentialsExchangeResponse{StatusCode: oe.Code, StatusMessage: &oe.Message, Timestamp: s.timestamp()}
	default:
		return out, err
	}
	return out, nil
}

// PostCredentials answers POST /ocpi/2.2.1/credentials: registration.
func (s *ocpiServer) PostCredentials(ctx context.Context, req ocpigen.PostCredentialsRequestObject) (ocpigen.PostCredentialsResponseObject, error) {
	if req.Body == nil {
		return nil, ocpi.InvalidParameter("request body is required")
	}
	creds, err := s.svc.Register(ctx, ocpiRequestOf(ctx).caller, req.Body)
	out, err := s.exchanged(ctx, creds, err)
	if err != nil {
		return nil, err
	}
	return ocpigen.PostCredentials200JSONResponse{CredentialsExchangedJSONResponse: out}, nil
}

// PutCredentials answers PUT /ocpi/2.2.1/credentials: a credentials update.
func (s *ocpiServer) PutCredentials(ctx context.Context, req ocpigen.PutCredentialsRequestObject) (ocpigen.PutCredentialsResponseObject, error) {
	if req.Body == nil {
		return nil, ocpi.InvalidParameter("request body is required")
	}
	creds, err := s.svc.Update(ctx, ocpiRequestOf(ctx).caller, req.Body)
	out, err := s.exchanged(ctx, creds, err)
	if err != nil {
		return nil, err
	}
	return ocpigen.PutCredentials200JSONResponse{CredentialsExchangedJSONResponse: out}, nil
}

// DeleteCredentials answers DELETE /ocpi/2.2.1/credentials: unregistration.
func (s *ocpiServer) DeleteCredentials(ctx context.Context, _ ocpigen.DeleteCredentialsRequestObject) (ocpigen.DeleteCredentialsResponseObject, error) {
	if err := s.svc.Unregister(ctx, ocpiRequestOf(ctx).caller); err != nil {
		return nil, err
	}
	rid, cid := ids(ctx)
	msg := success
	return ocpigen.DeleteCredentials200JSONResponse{Body: ocpigen.StatusResponse{StatusCode: ocpi.StatusSuccess, StatusMessage: &msg,
		Timestamp: s.timestamp()}, Headers: ocpigen.DeleteCredentials200ResponseHeaders{XRequestID: rid, XCorrelationID: cid}}, nil
}

// GetLocations answers GET /ocpi/2.2.1/locations with one page.
func (s *ocpiServer) GetLocations(ctx context.Context, req ocpigen.GetLocationsRequestObject) (ocpigen.GetLocationsResponseObject, error) {
	p := req.Params
	page, err := s.svc.Locations(ctx, ocpi.ListQuery{DateFrom: p.DateFrom, DateTo: p.DateTo, Offset: p.Offset, Limit: p.Limit,
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
	page      *ocpi.LocationPage
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
func (s *ocpiServer) GetLocation(ctx context.Context, req ocpigen.GetLocationRequestObject) (ocpigen.GetLocationResponseObject, error) {
	l, err := s.svc.Location(ctx, req.LocationId)
	if err != nil {
		return nil, err
	}
	rid, cid := ids(ctx) // the routing headers are set already
	msg := success
	return ocpigen.GetLocation200JSONResponse{Body: ocpigen.LocationResponse{Data: *l, StatusCode: ocpi.StatusSuccess, StatusMessage: &msg,
		Timestamp: s.timestamp()}, Headers: ocpigen.GetLocation200ResponseHeaders{XRequestID: rid, XCorrelationID: cid}}, nil
}

// GetEvse answers GET /ocpi/2.2.1/locations/{location_id}/{evse_uid}.
func (s *ocpiServer) GetEvse(ctx context.Context, req ocpigen.GetEvseRequestObject) (ocpigen.GetEvseResponseObject, error) {
	e, err := s.svc.EVSE(ctx, req.LocationId, req.EvseUid)
	if err != nil {
		return nil, err
	}
	rid, cid := ids(ctx) // the routing headers are set already
	msg := success
	return ocpigen.GetEvse200JSONResponse{Body: ocpigen.EVSEResponse{Data: *e, StatusCode: ocpi.StatusSuccess, StatusMessage: &msg,
		Timestamp: s.timestamp()}, Headers: ocpigen.GetEvse200ResponseHeaders{XRequestID: rid, XCorrelationID: cid}}, nil
}

// GetConnector answers GET /ocpi/2.2.1/locations/{location_id}/{evse_uid}/{connector_id}.
func (s *ocpiServer) GetConnector(ctx context.Context, req ocpigen.GetConnectorRequestObject) (ocpigen.GetConnectorResponseObject, error) {
	c, err := s.svc.Connector(ctx, req.LocationId, req.EvseUid, req.ConnectorId)
	if err != nil {
		return nil, err
	}
	rid, cid := ids(ctx) // the routing headers are set already
	msg := success
	return ocpigen.GetConnector200JSONResponse{Body: ocpigen.ConnectorResponse{Data: *c, StatusCode: ocpi.StatusSuccess, StatusMessage: &msg,
		Timestamp: s.timestamp()}, Headers: ocpigen.GetConnector200ResponseHeaders{XRequestID: rid, XCorrelationID: cid}}, nil
}
