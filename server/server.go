// Package server implements the contract's operations (gen.StrictServerInterface) over a
// store and wires them into Echo with authentication, request validation against the
// embedded contract, request ids, logging and error mapping. Each part of the server
// (the inventory, its life cycle, status notifications, webhooks, the event log, API
// keys, charge boxes) holds the few store methods it calls, declared beside it; Store
// is all of them. It serves the OCPI interface it is given (Config.OCPI, a Mount)
// under /ocpi behind the same common middleware.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/health"
	"github.com/chargenet/chargenet/intake"
	"github.com/chargenet/chargenet/internal/httpcheck"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/chargenet/chargenet/metrics"
	"github.com/chargenet/chargenet/openapi"
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/trace"
)

// DefaultBodyLimit is the largest request body accepted (1 MiB); larger ones get 413.
const DefaultBodyLimit = 1 << 20

// Store is what the server uses of a store: the methods of each of its parts, of the
// key cache (KeyStore) and of the idempotency guard, and, when Config.Readiness or
// Config.Intake is nil, those of the readiness checks (health.Store) or of the
// application path of the boxes' messages (intake.Store). A chargenet.Store has them
// all.
type Store interface {
	inventoryStore
	lifecycleStore
	intake.Store
	webhookStore
	eventLogStore
	keyAdminStore
	chargeboxStore
	idempotencyStore
	KeyStore
	health.Store
}

// Config holds what New needs. Store, Keys and Cursors are required.
type Config struct {
	Store   Store
	Keys    *Keys
	Cursors *chargenet.CursorCodec
	// Logger receives one line per request and the detail of internal errors.
	// Nil discards.
	Logger *slog.Logger
	// BodyLimit caps request bodies; 0 means DefaultBodyLimit.
	BodyLimit int64
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// RateLimit caps requests per API key on this replica; nil means DefaultRateLimit,
	// a zero RateLimit disables limiting.
	RateLimit *RateLimit
	// AllowInsecureWebhooks accepts webhook URLs with http and non-public hosts
	// (development only).
	AllowInsecureWebhooks bool
	// Notify is called after a webhook is enabled again, so that a dispatcher in the
	// same process delivers what waited for it at once; nil does nothing. (Events of
	// PATCH and status notifications are announced by the store: see
	// chargenet.Hooks.OnEvents.)
	Notify func()
	// Metrics, when set, records every request (see package metrics); nil records
	// nothing and costs nothing.
	Metrics *metrics.Metrics
	// Tracer, when set, runs every request in a span named by its operationId (see
	// observer); nil traces nothing.
	Tracer trace.Tracer
	// Readiness runs the checks of /readyz; nil checks the store alone (a process
	// without a webhook dispatcher).
	Readiness *health.Checker
	// OCPI, when set, is mounted under /ocpi (package ocpi); nil serves nothing there
	// (404).
	OCPI Mount
	// Intake is the application path of the charge boxes' messages (status
	// notifications), shared with the OCPP listener, and of the rule that passes the
	// operator's availability on to the boxes (after a PATCH moved an EVSE into or out
	// of INOPERATIVE). Nil builds one over Store with Metrics, Now and Logger and
	// without Deliver: the operator's availability is passed on to no box.
	Intake *intake.Service
}

// handlers implements the contract's operations, each through the part of the server
// it belongs to.
type handlers struct {
	inventory
	lifecycle
	statuses
	webhooks
	eventLog
	keyAdmin
	chargeboxes
	eventTypes encodedEventTypes // the catalogue, encoded once: it never changes while running
}

var _ gen.StrictServerInterface = (*handlers)(nil)

// inventoryStore is what the inventory's reads, its change lists and connector PATCHes
// use of a store.
type inventoryStore interface {
	Location(ctx context.Context, id string) (*chargenet.Location, error)
	ListLocationDocs(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.LocationDoc, error)
	ListLocationChanges(ctx context.Context, seek chargenet.ChangeSeek[string]) ([]chargenet.Location, error)
	EVSEDoc(ctx context.Context, uid int64) ([]byte, int64, error)
	ListEVSEs(ctx context.Context, seek chargenet.Seek[int64]) ([]chargenet.EVSE, error)
	ListEVSEChanges(ctx context.Context, seek chargenet.ChangeSeek[int64]) ([]chargenet.EVSE, error)
	UpdateConnector(ctx context.Context, uid, connectorID int64, patch chargenet.ConnectorPatch, ifMatch, actor string, now time.Time) (*chargenet.EVSE, error)
}

// inventory answers the reads of locations and EVSEs, their change lists, and PATCHes
// of connectors.
type inventory struct {
	store   inventoryStore
	cursors *chargenet.CursorCodec
	now     func() time.Time
}

// New returns the HTTP handler of the service: the contract's operations behind
// authentication and request validation, plus the unauthenticated /healthz, /readyz and
// /openapi.yaml. It returns an error if the configuration is incomplete or the embedded
// contract or event type catalogue cannot be loaded.
func New(cfg Config) (*echo.Echo, error) {
	if cfg.Store == nil || cfg.Keys == nil || cfg.Cursors == nil {
		return nil, errors.New("server: Store, Keys and Cursors are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	types, err := chargenet.EventTypes()
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.Notify == nil {
		cfg.Notify = func() {}
	}
	if cfg.Intake == nil {
		var err error
		if cfg.Intake, err = intake.New(intake.Config{Store: cfg.Store, Metrics: cfg.Metrics, Now: cfg.Now, Logger: cfg.Logger}); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	typeIndex := make(map[string]*chargenet.EventType, len(types))
	for i := range types {
		typeIndex[types[i].Type] = &types[i]
	}
	s := &handlers{
		inventory: inventory{store: cfg.Store, cursors: cfg.Cursors, now: cfg.Now},
		lifecycle: lifecycle{store: cfg.Store, now: cfg.Now, intake: cfg.Intake},
		statuses:  statuses{intake: cfg.Intake},
		webhooks: webhooks{store: cfg.Store, cursors: cfg.Cursors, now: cfg.Now, catalogue: types,
			allowInsecureWebhooks: cfg.AllowInsecureWebhooks, notify: cfg.Notify},
		eventLog:    eventLog{store: cfg.Store, cursors: cfg.Cursors, now: cfg.Now, catalogue: types, typeIndex: typeIndex},
		keyAdmin:    keyAdmin{store: cfg.Store, keys: cfg.Keys, cursors: cfg.Cursors, now: cfg.Now},
		chargeboxes: chargeboxes{store: cfg.Store, cursors: cfg.Cursors},
	}
	var list gen.EventTypeList
	for _, t := range types {
		list.EventTypes = append(list.EventTypes, gen.EventType{Type: t.Type, ApiVersions: t.APIVersions, Latest: t.Latest})
	}
	if s.eventTypes, err = json.Marshal(list); err != nil {
		return nil, fmt.Errorf("server: encoding the event type catalogue: %w", err)
	}
	doc, err := gen.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("server: loading the embedded contract: %w", err)
	}
	limit := DefaultRateLimit
	if cfg.RateLimit != nil {
		limit = *cfg.RateLimit
	}
	scopes, err := operationScopes(doc)
	if err != nil {
		return nil, fmt.Errorf("server: the embedded contract: %w", err)
	}
	v, err := httpcheck.NewValidator(doc, authenticationFunc(cfg.Keys, scopes, newLimiter(limit, cfg.Now), cfg.Now))
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = errorHandler(cfg.Logger)
	var o *observer
	if cfg.Metrics != nil || cfg.Tracer != nil {
		if o, err = newObserver(cfg.Metrics, cfg.Tracer); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		e.Use(o.middleware)
	}
	e.Use(requestIDMiddleware, logMiddleware(cfg.Logger), recoverMiddleware(cfg.Logger))
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Response().Header().Set("Cache-Control", "no-store")
			return next(c)
		}
	})

	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	readiness := cfg.Readiness
	if readiness == nil {
		readiness = &health.Checker{Store: cfg.Store}
	}
	e.GET("/readyz", func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		defer cancel()
		return readyz(c, readiness.Run(ctx))
	})
	e.GET("/openapi.yaml", func(c echo.Context) error {
		return c.Blob(http.StatusOK, "application/yaml", openapi.Spec)
	})
	registerDocs(e) // GET /docs/: the API reference (Swagger UI over /openapi.yaml), unauthenticated

	guard := &idempotencyGuard{store: cfg.Store, now: cfg.Now, running: map[string]bool{}}
	validate := []echo.MiddlewareFunc{bodyLimitMiddleware(cfg.BodyLimit), validation(v), guard.middleware}
	if cfg.Metrics != nil {
		validate = append([]echo.MiddlewareFunc{countRefusals(cfg.Metrics)}, validate...)
	}
	gen.RegisterHandlers(applied{e, validate}, gen.NewStrictHandler(s, nil))
	// What a group with validate would route to its own 404 (see echo.Group.Use): the
	// path "/" (every other path is the notFound below).
	e.RouteNotFound("", apply(echo.NotFoundHandler, validate))
	if cfg.OCPI != nil {
		if err := mount(e, ocpiPrefix, cfg.OCPI, bodyLimitMiddleware(cfg.BodyLimit), o); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	// Paths outside the contract still get the contract's error body from the validator.
	notFound := validation(v)(func(echo.Context) error { return echo.ErrNotFound })
	if cfg.Metrics != nil {
		notFound = countRefusals(cfg.Metrics)(notFound)
	}
	e.RouteNotFound("/*", notFound)
	return e, nil
}

// encodedEventTypes is the 200 response of ListEventTypes, an EventTypeList already
// encoded as JSON.
type encodedEventTypes []byte

// VisitListEventTypesResponse writes the encoded list.
func (b encodedEventTypes) VisitListEventTypesResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b)
	return err
}

// evseDoc is the 200 response of GetEvse built from the EVSE's stored JSON.
type evseDoc struct {
	doc  []byte
	etag string
}

// VisitGetEvseResponse writes the EVSE with its ETag.
func (r evseDoc) VisitGetEvseResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("ETag", r.etag)
	w.WriteHeader(http.StatusOK)
	// The line is assembled in a pooled buffer: the document is the store's, held by
	// its cache and shared by every reader. One Write keeps the answer one piece.
	pb := pageBuffers.Get().(*[]byte)
	defer pageBuffers.Put(pb)
	buf := append(append((*pb)[:0], r.doc...), '\n')
	_, err := w.Write(buf) // copied or sent before Write returns: the buffer can be reused
	*pb = buf
	return err
}

// locationDocPage is the 200 response of ListLocations built from stored location JSON:
// the contract's LocationPage, as the generated response would encode it.
type locationDocPage struct {
	items      []chargenet.LocationDoc
	pagination gen.Pagination
}

// VisitListLocationsResponse writes {"data": [...], "pagination": {...}}.
func (p locationDocPage) VisitListLocationsResponse(w http.ResponseWriter) error {
	pg, err := json.Marshal(p.pagination)
	if err != nil {
		return err
	}
	n := len(`{"data":[],"pagination":}`) + len(pg) + 2
	for _, it := range p.items {
		n += len(it.JSON) + 1
	}
	pb := pageBuffers.Get().(*[]byte)
	defer pageBuffers.Put(pb)
	buf := slices.Grow((*pb)[:0], n)
	buf = append(buf, `{"data":[`...)
	for i, it := range p.items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, it.JSON...)
	}
	buf = append(buf, `],"pagination":`...)
	buf = append(buf, pg...)
	buf = append(buf, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(buf) // copied or sent before Write returns: the buffer can be reused
	*pb = buf
	return err
}

// pageBuffers holds the buffers pages and EVSEs are assembled in (a 25-item page is
// about 8 KB).
var pageBuffers = sync.Pool{New: func() any { return new([]byte) }}

// ListEventTypes answers GET /emsp/v1/webhooks/event_types from the embedded catalogue.
func (s *handlers) ListEventTypes(context.Context, gen.ListEventTypesRequestObject) (gen.ListEventTypesResponseObject, error) {
	return s.eventTypes, nil
}

// ListLocations answers GET /v1/locations with one page of the locations' contract
// JSON as the store reads it. With updated_since it answers the change list instead.
func (s *inventory) ListLocations(ctx context.Context, req gen.ListLocationsRequestObject) (gen.ListLocationsResponseObject, error) {
	if req.Params.UpdatedSince != nil {
		return s.listLocationChanges(ctx, req)
	}
	page, err := chargenet.Paginate(ctx, s.cursors, chargenet.ListLocations, deref(req.Params.Cursor), limit(req.Params.Limit),
		s.store.ListLocationDocs, func(d *chargenet.LocationDoc) string { return d.ID })
	if err != nil {
		return nil, err
	}
	return locationDocPage{items: page.Items, pagination: pagination(page)}, nil
}

// GetLocation answers GET /v1/locations/{id}.
func (s *inventory) GetLocation(ctx context.Context, req gen.GetLocationRequestObject) (gen.GetLocationResponseObject, error) {
	l, err := s.store.Location(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return gen.GetLocation200JSONResponse{Body: wire.Location(l)}, nil
}

// ListEvses answers GET /v2/evses with one page; with updated_since, one page of the
// change list.
func (s *inventory) ListEvses(ctx context.Context, req gen.ListEvsesRequestObject) (gen.ListEvsesResponseObject, error) {
	if req.Params.UpdatedSince != nil {
		return s.listEVSEChanges(ctx, req)
	}
	page, err := chargenet.Paginate(ctx, s.cursors, chargenet.ListEVSEs, deref(req.Params.Cursor), limit(req.Params.Limit),
		s.store.ListEVSEs, func(e *chargenet.EVSE) int64 { return e.UID })
	if err != nil {
		return nil, err
	}
	out := gen.EvsePage{Data: make([]gen.EVSE, len(page.Items)), Pagination: pagination(page)}
	for i := range page.Items {
		out.Data[i] = wire.EVSE(&page.Items[i])
	}
	return gen.ListEvses200JSONResponse{Body: out}, nil
}

// GetEvse answers GET /v2/evses/{uid} with the EVSE's contract JSON as the store reads
// it, and its ETag.
func (s *inventory) GetEvse(ctx context.Context, req gen.GetEvseRequestObject) (gen.GetEvseResponseObject, error) {
	doc, version, err := s.store.EVSEDoc(ctx, req.Uid)
	if err != nil {
		return nil, err
	}
	return evseDoc{doc: doc, etag: chargenet.ETag(version)}, nil
}

// UpdateConnector answers PATCH /v2/evses/{uid}/connectors/{connectorId}.
func (s *inventory) UpdateConnector(ctx context.Context, req gen.UpdateConnectorRequestObject) (gen.UpdateConnectorResponseObject, error) {
	if req.Body == nil { // the validator requires a body; this guards a misconfiguration
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "", "request body is required")
	}
	if req.Body.Id != nil && *req.Body.Id != req.ConnectorId {
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "id", "id %d in the body differs from connectorId %d in the path", *req.Body.Id, req.ConnectorId)
	}
	e, err := s.store.UpdateConnector(ctx, req.Uid, req.ConnectorId, patchFromAPI(req.Body), deref(req.Params.IfMatch), actor(ctx), s.now().UTC())
	if err != nil {
		return nil, err
	}
	etag := e.ETag()
	return gen.UpdateConnector200JSONResponse{Body: wire.EVSE(e), Headers: gen.UpdateConnector200ResponseHeaders{ETag: &etag}}, nil
}

func pagination[T any](p *chargenet.Page[T]) gen.Pagination {
	out := gen.Pagination{HasMore: p.HasMore}
	if p.Next != "" {
		out.NextCursor = &p.Next
	}
	if p.Previous != "" {
		out.PreviousCursor = &p.Previous
	}
	return out
}

func limit(l *int) int {
	if l == nil {
		return chargenet.DefaultPageSize
	}
	return *l
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
