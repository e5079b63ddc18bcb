package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/intake"
	"github.com/chargenet/chargenet/internal/wire"
)

// lifecycleStore is what the life cycle of locations and EVSEs uses of a store.
type lifecycleStore interface {
	PutLocation(ctx context.Context, l *chargenet.Location, actor string, now time.Time) (loc *chargenet.Location, created bool, err error)
	DeleteLocation(ctx context.Context, id, actor string, now time.Time) (*chargenet.Location, error)
	CreateEVSE(ctx context.Context, e *chargenet.EVSE, idem *chargenet.Idempotency, actor string, now time.Time) (*chargenet.EVSE, error)
	ChangeEVSE(ctx context.Context, uid int64, change func(*chargenet.EVSE) ([]chargenet.Event, error), idem *chargenet.Idempotency,
		actor string, now time.Time) (*chargenet.EVSE, error)
}

// lifecycle creates, replaces and deletes locations, and creates, changes and removes
// EVSEs and their connectors.
type lifecycle struct {
	store  lifecycleStore
	now    func() time.Time
	intake *intake.Service // the rule that passes the operator's availability on to the boxes
}

// PutLocation answers PUT /v1/locations/{id}: 201 with the new location, or 200 with the
// replaced (or unchanged) one.
func (s *lifecycle) PutLocation(ctx context.Context, req gen.PutLocationRequestObject) (gen.PutLocationResponseObject, error) {
	if req.Body == nil {
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "", "request body is required")
	}
	if req.Body.Id != nil && *req.Body.Id != req.Id {
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "id", "id %q in the body differs from %q in the path", *req.Body.Id, req.Id)
	}
	l := locationFromInput(req.Id, req.Body)
	l.IfVersion = derefInt(req.Body.Version) // the rest a read carries is computed: ignored
	if err := l.Validate(); err != nil {
		return nil, err
	}
	for _, f := range []struct{ param, value string }{{"name", l.Name}, {"address", l.Address}, {"city", l.City}, {"postalCode", l.PostalCode}} {
		if err := chargenet.CheckText(f.param, f.value); err != nil {
			return nil, err
		}
	}
	stored, created, err := s.store.PutLocation(ctx, &l, actor(ctx), chargenet.Stamp(s.now()))
	if err != nil {
		return nil, err
	}
	if created {
		location := "/v1/locations/" + stored.ID
		return gen.PutLocation201JSONResponse{Body: wire.Location(stored), Headers: gen.PutLocation201ResponseHeaders{Location: &location}}, nil
	}
	return gen.PutLocation200JSONResponse{Body: wire.Location(stored)}, nil
}

// DeleteLocation answers DELETE /v1/locations/{id}.
func (s *lifecycle) DeleteLocation(ctx context.Context, req gen.DeleteLocationRequestObject) (gen.DeleteLocationResponseObject, error) {
	l, err := s.store.DeleteLocation(ctx, req.Id, actor(ctx), chargenet.Stamp(s.now()))
	if err != nil {
		return nil, err
	}
	return gen.DeleteLocation200JSONResponse{Body: wire.Location(l)}, nil
}

// CreateEvse answers POST /v2/evses: 201 with the new EVSE, its ETag and its path.
func (s *lifecycle) CreateEvse(ctx context.Context, req gen.CreateEvseRequestObject) (gen.CreateEvseResponseObject, error) {
	if req.Body == nil {
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "", "request body is required")
	}
	now := chargenet.Stamp(s.now()) // as every store keeps times
	e := evseFromCreate(req.Body)
	if err := e.PrepareNew(now); err != nil {
		return nil, err
	}
	idem := idempotency(ctx, func(created any) ([]byte, error) {
		r := createdEVSE(created.(*chargenet.EVSE))
		return keptAnswer(http.StatusCreated, r.Body, map[string]string{"ETag": *r.Headers.ETag, "Location": *r.Headers.Location})
	})
	stored, err := s.store.CreateEVSE(ctx, &e, idem, actor(ctx), now)
	if err != nil {
		return nil, err
	}
	return createdEVSE(stored), nil
}

func createdEVSE(e *chargenet.EVSE) gen.CreateEvse201JSONResponse {
	etag, location := e.ETag(), "/v2/evses/"+strconv.FormatInt(e.UID, 10)
	return gen.CreateEvse201JSONResponse{Body: wire.EVSE(e), Headers: gen.CreateEvse201ResponseHeaders{ETag: &etag, Location: &location}}
}

// UpdateEvse answers PATCH /v2/evses/{uid}: the operator's status, charge box or
// location change, through the transition table (chargenet.EVSE.ApplyPatch).
func (s *lifecycle) UpdateEvse(ctx context.Context, req gen.UpdateEvseRequestObject) (gen.UpdateEvseResponseObject, error) {
	if req.Body == nil {
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "", "request body is required")
	}
	if req.Body.Uid != nil && *req.Body.Uid != req.Uid {
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "uid", "uid %d in the body differs from %d in the path", *req.Body.Uid, req.Uid)
	}
	patch := chargenet.EVSEPatch{ChargeboxID: req.Body.ChargeboxId, LocationID: req.Body.LocationId,
		IfVersion: derefInt(req.Body.Version), EvseID: req.Body.EvseId}
	if req.Body.Status != nil {
		st := chargenet.EvseStatus(*req.Body.Status)
		patch.Status = &st
	}
	if req.Body.Connectors != nil {
		patch.Connectors = wire.ParseEVSE(&gen.EVSE{Connectors: *req.Body.Connectors}).Connectors
	}
	now := chargenet.Stamp(s.now()) // as every store keeps times
	var before chargenet.EvseStatus
	e, err := s.store.ChangeEVSE(ctx, req.Uid, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
		before = e.Status
		return e.ApplyPatch(patch, deref(req.Params.IfMatch), now)
	}, nil, actor(ctx), now)
	if err != nil {
		return nil, err
	}
	s.intake.EVSEChanged(ctx, before, e)
	etag := e.ETag()
	return gen.UpdateEvse200JSONResponse{Body: wire.EVSE(e), Headers: gen.UpdateEvse200ResponseHeaders{ETag: &etag}}, nil
}

// RemoveEvse answers DELETE /v2/evses/{uid}: the EVSE becomes REMOVED.
func (s *lifecycle) RemoveEvse(ctx context.Context, req gen.RemoveEvseRequestObject) (gen.RemoveEvseResponseObject, error) {
	now := chargenet.Stamp(s.now()) // as every store keeps times
	e, err := s.store.ChangeEVSE(ctx, req.Uid, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
		return e.Remove(deref(req.Params.IfMatch), now)
	}, nil, actor(ctx), now)
	if err != nil {
		return nil, err
	}
	etag := e.ETag()
	return gen.RemoveEvse200JSONResponse{Body: wire.EVSE(e), Headers: gen.RemoveEvse200ResponseHeaders{ETag: &etag}}, nil
}

// CreateConnector answers POST /v2/evses/{uid}/connectors: 201 with the EVSE.
func (s *lifecycle) CreateConnector(ctx context.Context, req gen.CreateConnectorRequestObject) (gen.CreateConnectorResponseObject, error) {
	if req.Body == nil {
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "", "request body is required")
	}
	c := connectorFromCreate(req.Body)
	ifVersion := derefInt(req.Body.Version)
	idem := idempotency(ctx, func(created any) ([]byte, error) {
		r := createdConnector(created.(*chargenet.EVSE))
		return keptAnswer(http.StatusCreated, r.Body, map[string]string{"ETag": *r.Headers.ETag})
	})
	now := chargenet.Stamp(s.now()) // as every store keeps times
	e, err := s.store.ChangeEVSE(ctx, req.Uid, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
		if err := e.CheckPreconditions(deref(req.Params.IfMatch), ifVersion); err != nil {
			return nil, err
		}
		return e.AddConnector(c, "", now)
	}, idem, actor(ctx), now)
	if err != nil {
		return nil, err
	}
	return createdConnector(e), nil
}

func createdConnector(e *chargenet.EVSE) gen.CreateConnector201JSONResponse {
	etag := e.ETag()
	return gen.CreateConnector201JSONResponse{Body: wire.EVSE(e), Headers: gen.CreateConnector201ResponseHeaders{ETag: &etag}}
}

// DeleteConnector answers DELETE /v2/evses/{uid}/connectors/{connectorId}.
func (s *lifecycle) DeleteConnector(ctx context.Context, req gen.DeleteConnectorRequestObject) (gen.DeleteConnectorResponseObject, error) {
	now := chargenet.Stamp(s.now()) // as every store keeps times
	e, err := s.store.ChangeEVSE(ctx, req.Uid, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
		return e.DeleteConnector(req.ConnectorId, deref(req.Params.IfMatch), now)
	}, nil, actor(ctx), now)
	if err != nil {
		return nil, err
	}
	etag := e.ETag()
	return gen.DeleteConnector200JSONResponse{Body: wire.EVSE(e), Headers: gen.DeleteConnector200ResponseHeaders{ETag: &etag}}, nil
}

func locationFromInput(id string, in *gen.LocationInput) chargenet.Location {
	return chargenet.Location{ID: id, Name: in.Name, Address: in.Address, City: in.City, PostalCode: deref(in.PostalCode),
		Country: in.Country, Latitude: in.Coordinates.Latitude, Longitude: in.Coordinates.Longitude, TimeZone: in.TimeZone}
}

func evseFromCreate(in *gen.EVSECreate) chargenet.EVSE {
	e := chargenet.EVSE{EvseID: in.EvseId, ChargeboxID: in.ChargeboxId, LocationID: in.LocationId,
		Connectors: make([]chargenet.Connector, len(in.Connectors))}
	if in.Status != nil {
		e.Status = chargenet.EvseStatus(*in.Status)
	}
	for i, c := range in.Connectors {
		e.Connectors[i] = chargenet.Connector{ID: c.Id, Standard: chargenet.Standard(c.Standard), Format: chargenet.Format(c.Format),
			PowerType: chargenet.PowerType(c.PowerType), MaxElectricPower: c.MaxElectricPower, MaxAmperage: c.MaxAmperage,
			MaxVoltage: c.MaxVoltage, TariffIDs: derefSlice(c.TariffIds)}
	}
	return e
}

func connectorFromCreate(c *gen.ConnectorCreate) chargenet.Connector {
	return chargenet.Connector{Standard: chargenet.Standard(c.Standard), Format: chargenet.Format(c.Format),
		PowerType: chargenet.PowerType(c.PowerType), MaxElectricPower: c.MaxElectricPower, MaxAmperage: c.MaxAmperage,
		MaxVoltage: c.MaxVoltage, TariffIDs: derefSlice(c.TariffIds)}
}

func derefInt(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}

func derefSlice(s *[]string) []string {
	if s == nil {
		return []string{}
	}
	return *s
}

// optional returns a pointer to s, or nil for the empty string.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
