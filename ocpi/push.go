package ocpi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/chargenet/chargenet"
	ocpigen "github.com/chargenet/chargenet/gen/ocpi"
	"github.com/chargenet/chargenet/internal/wire"
)

// pushPartnerTTL is how long a push trusts the partner it read (its token and roles):
// a partner's new token is used within it.
const pushPartnerTTL = 2 * time.Second

// pusherCache keeps the partners pushes were made to, for a short while.
type pusherCache struct {
	mu sync.Mutex
	m  map[string]cachedPartner
}

type cachedPartner struct {
	p       *chargenet.Partner
	expires time.Time
}

func (c *pusherCache) get(id string, now time.Time) (*chargenet.Partner, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	return e.p, ok && now.Before(e.expires)
}

func (c *pusherCache) put(p *chargenet.Partner, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedTokens {
		c.m = map[string]cachedPartner{}
	}
	c.m[p.ID] = cachedPartner{p: p, expires: expires}
}

func (c *pusherCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

// Push makes the OCPI push of one delivery of a partner's subscription (Webhook.Partner
// set) through client, to the partner's Locations RECEIVER (Webhook.URL), with the
// partner's token. The event says what changed; the push carries that object as it is
// now, read from the store, so that a partner that missed pushes, or gets them again,
// ends with the inventory as it is:
//
//   - location.created, .updated, .deleted: PUT of the Location with its EVSEs (every
//     EVSE REMOVED for a deleted location);
//   - evse.status.changed, evse.removed: PATCH of the EVSE with status and last_updated;
//   - evse.created, evse.updated: PUT of the EVSE, and PUT of the Location it left when it
//     moved;
//   - evse.connector.created, .updated: PUT of the Connector; .deleted: PUT of the EVSE
//     without it.
//
// An EVSE that OCPI cannot show (no connector in service), one whose location was
// deleted, and any push the partner answers with "unknown object" (HTTP 404 or 2003)
// become a PUT of the whole Location. An object that no longer exists in chargenet, or
// an EVSE without a location, is pushed as nothing. It returns the HTTP status of the
// last request and an error unless the partner took every request (HTTP 2xx, OCPI
// 1xxx).
func (s *Service) Push(ctx context.Context, client *http.Client, dl *chargenet.Delivery) (int, error) {
	p, err := s.pushPartner(ctx, dl.Webhook.Partner)
	if err != nil {
		return 0, err
	}
	ev := dl.Event
	if ev.Payload, err = wire.EventPayload(&ev); err != nil { // an inventory event's, or an error
		return 0, err
	}
	location := chargenet.EventSubject(&ev) // the location, or the EVSE's
	var uid, connectorID int64
	var previous string // the location an EVSE left
	switch payload := ev.Payload.(type) {
	case chargenet.EVSEPayload:
		uid, previous = payload.EVSE.UID, payload.PreviousLocationID
	case chargenet.ConnectorPayload:
		uid, connectorID = payload.EVSE.UID, payload.ConnectorID
	case chargenet.StatusPayload:
		uid = payload.EVSE.UID
	}
	push := &push{s: s, client: partnerClient(client, p.Token, map[string]string{partnerLocations: dl.Webhook.URL}),
		correlation: ev.ID, to: p.Roles}
	switch ev.Type {
	case chargenet.EventLocationCreated, chargenet.EventLocationUpdated, chargenet.EventLocationDeleted:
		return push.location(ctx, location)
	case chargenet.EventStatusChanged, chargenet.EventEVSERemoved:
		return push.evse(ctx, uid, location, patchEVSE)
	case chargenet.EventEVSECreated, chargenet.EventEVSEUpdated, chargenet.EventConnectorDeleted:
		status, err := push.evse(ctx, uid, location, putEVSE)
		if err == nil && previous != "" {
			return push.location(ctx, previous)
		}
		return status, err
	case chargenet.EventConnectorCreated, chargenet.EventConnectorUpdated:
		return push.connector(ctx, uid, location, connectorID)
	}
	return 0, fmt.Errorf("event %s: %s is not pushed to partners", ev.ID, ev.Type)
}

// pushPartner returns the partner of a subscription, read at most pushPartnerTTL ago.
func (s *Service) pushPartner(ctx context.Context, id string) (*chargenet.Partner, error) {
	now := s.cfg.Now()
	if p, ok := s.pushers.get(id, now); ok {
		return p, nil
	}
	p, err := s.cfg.Store.Partner(ctx, id)
	if errors.Is(err, chargenet.ErrNotFound) {
		return nil, errors.New("the partner is no longer registered")
	}
	if err != nil {
		return nil, err
	}
	s.pushers.put(p, now.Add(pushPartnerTTL))
	return p, nil
}

// evseMethod is how a push sends an EVSE.
type evseMethod int

const (
	patchEVSE evseMethod = iota // status and last_updated
	putEVSE                     // the whole EVSE
)

// push is the requests of one delivery.
type push struct {
	s           *Service
	client      *ocpigen.Client
	correlation string
	to          []chargenet.PartnerRole
}

// params returns the headers of a push: new request ID, the delivery's correlation ID,
// chargenet as sender and the partner's first role as receiver.
func (p *push) params() (id, correlation, fromCC, fromParty, toCC, toParty string) {
	party := p.s.cfg.Party
	toCC, toParty = party.CountryCode, party.PartyID
	for _, r := range p.to {
		if countryCodeRe.MatchString(r.CountryCode) && partyIDRe.MatchString(r.PartyID) {
			toCC, toParty = r.CountryCode, r.PartyID
			break
		}
	}
	return newUUID(), p.correlation, party.CountryCode, party.PartyID, toCC, toParty
}

// location PUTs the Location id as it is now; nothing when there is none.
func (p *push) location(ctx context.Context, id string) (int, error) {
	site, err := p.s.cfg.Store.Site(ctx, id)
	if errors.Is(err, chargenet.ErrNotFound) {
		return http.StatusOK, nil
	}
	if err != nil {
		return 0, err
	}
	return p.putLocation(ctx, site)
}

func (p *push) putLocation(ctx context.Context, site *chargenet.Site) (int, error) {
	id, corr, fcc, fp, tcc, tp := p.params()
	party := p.s.cfg.Party
	return answer(nil)(p.client.PutPartnerLocation(ctx, party.CountryCode, party.PartyID, site.Location.ID,
		&ocpigen.PutPartnerLocationParams{XRequestID: id, XCorrelationID: corr, OCPIFromCountryCode: fcc, OCPIFromPartyId: fp,
			OCPIToCountryCode: tcc, OCPIToPartyId: tp}, p.s.location(site)))
}

// current reads EVSE uid as it is now with its location (the one it is at now, else
// the event's), or nil when either is gone.
func (p *push) current(ctx context.Context, uid int64, eventLocation string) (*chargenet.Site, *chargenet.EVSE, error) {
	e, err := p.s.cfg.Store.EVSE(ctx, uid)
	if errors.Is(err, chargenet.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	loc := e.LocationID
	if loc == "" {
		loc = eventLocation
	}
	if loc == "" {
		return nil, nil, nil
	}
	site, err := p.s.cfg.Store.Site(ctx, loc)
	if errors.Is(err, chargenet.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for i := range site.EVSEs {
		if site.EVSEs[i].UID == uid {
			return site, &site.EVSEs[i], nil
		}
	}
	return site, nil, nil // it left the location: the Location is what changed
}

// evse pushes EVSE uid as it is now, by method.
func (p *push) evse(ctx context.Context, uid int64, eventLocation string, method evseMethod) (int, error) {
	site, e, err := p.current(ctx, uid, eventLocation)
	if err != nil || site == nil {
		return http.StatusOK, err
	}
	if e == nil || site.Location.DeletedAt != nil {
		return p.putLocation(ctx, site)
	}
	m, ok := evse(e, false)
	if !ok {
		return p.putLocation(ctx, site)
	}
	id, corr, fcc, fp, tcc, tp := p.params()
	party := p.s.cfg.Party
	uidText := strconv.FormatInt(uid, 10)
	var status int
	if method == patchEVSE {
		status, err = answer(nil)(p.client.PatchPartnerEvse(ctx, party.CountryCode, party.PartyID, site.Location.ID, uidText,
			&ocpigen.PatchPartnerEvseParams{XRequestID: id, XCorrelationID: corr, OCPIFromCountryCode: fcc, OCPIFromPartyId: fp,
				OCPIToCountryCode: tcc, OCPIToPartyId: tp}, ocpigen.EVSEPatch{Status: &m.Status, LastUpdated: m.LastUpdated}))
	} else {
		status, err = answer(nil)(p.client.PutPartnerEvse(ctx, party.CountryCode, party.PartyID, site.Location.ID, uidText,
			&ocpigen.PutPartnerEvseParams{XRequestID: id, XCorrelationID: corr, OCPIFromCountryCode: fcc, OCPIFromPartyId: fp,
				OCPIToCountryCode: tcc, OCPIToPartyId: tp}, m))
	}
	if unknownObject(err) {
		return p.putLocation(ctx, site)
	}
	return status, err
}

// connector PUTs connector connectorID of EVSE uid as it is now; the EVSE when the
// connector was deleted since.
func (p *push) connector(ctx context.Context, uid int64, eventLocation string, connectorID int64) (int, error) {
	site, e, err := p.current(ctx, uid, eventLocation)
	if err != nil || site == nil {
		return http.StatusOK, err
	}
	if e == nil || site.Location.DeletedAt != nil {
		return p.putLocation(ctx, site)
	}
	c := e.Connector(connectorID)
	if c == nil || c.DeletedAt != nil {
		return p.evse(ctx, uid, eventLocation, putEVSE)
	}
	id, corr, fcc, fp, tcc, tp := p.params()
	party := p.s.cfg.Party
	status, err := answer(nil)(p.client.PutPartnerConnector(ctx, party.CountryCode, party.PartyID, site.Location.ID,
		strconv.FormatInt(uid, 10), strconv.FormatInt(connectorID, 10),
		&ocpigen.PutPartnerConnectorParams{XRequestID: id, XCorrelationID: corr, OCPIFromCountryCode: fcc, OCPIFromPartyId: fp,
			OCPIToCountryCode: tcc, OCPIToPartyId: tp}, connector(c)))
	if unknownObject(err) {
		return p.putLocation(ctx, site)
	}
	return status, err
}
