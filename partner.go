package chargenet

import (
	"context"
	"crypto/sha256"
	"slices"
	"time"
)

// Partner is an OCPI roaming partner (an eMSP, a hub, a navigation service): the tokens
// chargenet issued to it, and the credentials it handed to chargenet in the OCPI
// credentials exchange. Tokens chargenet accepts are kept only as SHA-256 hashes;
// Token, which chargenet sends, is kept as it is.
type Partner struct {
	ID   string // "ptn_" + 26 characters (NewID)
	Name string // chosen by the operator; unique
	// RegistrationHash is the hash of the registration token (OCPI's token A) chargenet
	// issued, while the partner has not registered with it; nil afterwards.
	RegistrationHash *[sha256.Size]byte
	// TokenHash is the hash of the credentials token chargenet issued in the exchange
	// (token C when the partner registered, token B when chargenet connected to the
	// partner); nil before.
	TokenHash *[sha256.Size]byte
	// Registered is true once the credentials were exchanged: then TokenHash opens every
	// module. Before, it opens only the versions and the credentials.
	Registered bool
	PartnerCredentials
	CreatedAt time.Time
	UpdatedAt time.Time
}

// PartnerCredentials is what a partner handed to chargenet in the credentials
// exchange: the token to call it with, its versions URL, the endpoints of its OCPI
// 2.2.1 details and its roles.
type PartnerCredentials struct {
	Token       string
	VersionsURL string
	Endpoints   []PartnerEndpoint
	Roles       []PartnerRole
}

// PartnerEndpoint is one module endpoint of a partner's 2.2.1 version details.
type PartnerEndpoint struct {
	Module string // OCPI module identifier: credentials, locations, ...
	Role   string // SENDER or RECEIVER
	URL    string
}

// PartnerRole is one role of a partner's credentials.
type PartnerRole struct {
	Role        string // CPO, EMSP, HUB, NAP, NSP, OTHER, SCSP
	CountryCode string // ISO 3166-1 alpha-2
	PartyID     string // three letters or digits
	Name        string // the business name
}

// OCPI module identifiers and interface roles chargenet reads in partners' details.
const (
	ModuleCredentials = "credentials"
	ModuleLocations   = "locations"
	RoleSender        = "SENDER"
	RoleReceiver      = "RECEIVER"
)

// Endpoint returns the URL of the partner's endpoint of module in role, "" when it has
// none. The role of a credentials endpoint means nothing: for module credentials any
// role matches.
func (c *PartnerCredentials) Endpoint(module, role string) string {
	for _, e := range c.Endpoints {
		if e.Module == module && (e.Role == role || module == ModuleCredentials) {
			return e.URL
		}
	}
	return ""
}

// ReceiverURL returns the URL of the partner's Locations RECEIVER, "" when it has none
// (then chargenet pushes nothing to it).
func (c *PartnerCredentials) ReceiverURL() string { return c.Endpoint(ModuleLocations, RoleReceiver) }

// Clone returns a copy of c that shares no slice with it.
func (c PartnerCredentials) Clone() PartnerCredentials {
	c.Endpoints, c.Roles = slices.Clone(c.Endpoints), slices.Clone(c.Roles)
	return c
}

// HashToken returns the SHA-256 of an OCPI token, the only form in which chargenet keeps
// the tokens it accepts.
func HashToken(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }

// PushAPIVersion is the payload version of a partner's subscription to the inventory
// events (see PushEventTypes): its deliveries are OCPI 2.2.1 requests to the partner's
// Locations RECEIVER, made from the event, instead of signed webhook events.
const PushAPIVersion = "ocpi/2.2.1"

// PushEventTypes are the event types pushed to the Locations RECEIVER of every
// registered partner that has one.
var PushEventTypes = []string{
	EventConnectorCreated, EventConnectorDeleted, EventConnectorUpdated, EventEVSECreated, EventEVSERemoved,
	EventEVSEUpdated, EventStatusChanged, EventLocationCreated, EventLocationDeleted, EventLocationUpdated,
}

// PartnerService keeps the OCPI partners and, for each registered partner with a
// Locations RECEIVER, its subscription to the inventory events: a webhook owned by no
// API key (Owner ""), with the partner's ID as ID and Partner, the receiver's URL as
// URL, and PushEventTypes in PushAPIVersion. Its deliveries go through the outbox like
// any webhook's, ordered per location (see EventSubject).
type PartnerService interface {
	// CreatePartner stores a new partner, with its RegistrationHash or its TokenHash.
	// ErrConflict (param name) when the name is taken, (param token) when a token hash
	// is.
	CreatePartner(ctx context.Context, p *Partner) error
	// Partner returns the partner with this ID. ErrNotFound if there is none.
	Partner(ctx context.Context, id string) (*Partner, error)
	// PartnerByName returns the partner with this name. ErrNotFound if there is none.
	PartnerByName(ctx context.Context, name string) (*Partner, error)
	// PartnerByToken returns the partner that holds the token with this hash, as its
	// registration token (registration true) or as its credentials token. ErrNotFound if
	// no partner holds it.
	PartnerByToken(ctx context.Context, hash [sha256.Size]byte) (p *Partner, registration bool, err error)
	// ListPartners returns every partner, by name.
	ListPartners(ctx context.Context) ([]Partner, error)
	// SetPartnerCredentials completes a credentials exchange with partner id, in one
	// transaction: if the partner still holds held (as its registration or credentials
	// token hash) it stores c, marks the partner registered, drops its registration
	// token, makes token its credentials token hash, sets UpdatedAt, and creates, updates
	// or deletes its receiver subscription to follow c.ReceiverURL() (a deleted one takes
	// its pending pushes with it). It returns the partner as stored. ErrNotFound if there
	// is no such partner; ErrConflict when it no longer holds held (another exchange
	// came first), or when token is held by another partner.
	SetPartnerCredentials(ctx context.Context, id string, held [sha256.Size]byte, c PartnerCredentials, token [sha256.Size]byte, now time.Time) (*Partner, error)
	// DeletePartner deletes the partner, its receiver subscription, its pending pushes
	// and their attempts. ErrNotFound if there is none.
	DeletePartner(ctx context.Context, id string) error
}

// EventSubject returns the location an inventory event is about: the location of a
// location event, the location of the EVSE of an EVSE event ("" when the EVSE has none).
// A partner's pushes of one subject are made one after the other, in event order; ""
// for other events.
func EventSubject(ev *Event) string {
	switch p := ev.Payload.(type) {
	case LocationPayload:
		return p.Location.ID
	case EVSEPayload:
		return p.EVSE.LocationID
	case ConnectorPayload:
		return p.EVSE.LocationID
	case StatusPayload:
		return p.EVSE.LocationID
	}
	return ""
}
