// Package ocpi is chargenet's OCPI 2.2.1 interface as a Charge Point Operator (CPO).
// It answers the Versions and Credentials modules and the Locations module in the
// SENDER role, runs the credentials handshake in both directions, maps the inventory
// onto OCPI's objects, and makes the pushes to partners' Locations RECEIVER that the
// webhook dispatcher hands it. Service is the protocol logic, which the commands use
// too; HTTP is its HTTP layer (routing, token authentication, envelopes, validation
// against the OCPI contract, error answers), which the REST server mounts under /ocpi
// and the only place it uses Echo. It speaks OCPI through the types and the client
// generated from openapi/ocpi-2.2.1.yaml (package gen/ocpi).
package ocpi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/chargenet/chargenet"
	ocpigen "github.com/chargenet/chargenet/gen/ocpi"
)

// Version is the only OCPI version chargenet speaks.
const Version = "2.2.1"

// OCPI status codes chargenet answers or reads.
const (
	StatusSuccess           = 1000 // generic success
	StatusClientError       = 2000 // generic client error: authentication, method not allowed
	StatusInvalidParameters = 2001 // invalid or missing parameters
	StatusUnknownObject     = 2003 // unknown Location, EVSE or Connector
	StatusServerError       = 3000 // generic server error
	StatusUnusableAPI       = 3001 // unable to use the client's API (registration)
	StatusNoCommonVersion   = 3003 // no matching endpoints or no common version (registration)
)

// MaxLimit is the most Locations one page holds (X-Limit).
const MaxLimit = 100

// Error is an OCPI failure: the HTTP status and the OCPI status code of the answer, and
// a message for status_message. Registration failures (3001, 3003) are HTTP 200.
type Error struct {
	HTTPStatus int
	Code       int
	Message    string
	// Allow is the Allow header of a 405: the methods the caller may use.
	Allow string
}

func (e *Error) Error() string { return fmt.Sprintf("OCPI %d: %s", e.Code, e.Message) }

// Errorf returns an *Error.
func Errorf(httpStatus, code int, format string, args ...any) *Error {
	return &Error{HTTPStatus: httpStatus, Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidParameter returns the 400 (2001) error about a parameter.
func InvalidParameter(format string, args ...any) *Error {
	return Errorf(http.StatusBadRequest, StatusInvalidParameters, format, args...)
}

// Unauthorized returns the 401 (2000) error.
func Unauthorized(format string, args ...any) *Error {
	return Errorf(http.StatusUnauthorized, StatusClientError, format, args...)
}

// UnknownObject returns the 404 (2003) error.
func UnknownObject(format string, args ...any) *Error {
	return Errorf(http.StatusNotFound, StatusUnknownObject, format, args...)
}

// MethodNotAllowed returns the 405 (2000) error of the credentials module, with the
// methods the caller may use (allow).
func MethodNotAllowed(allow, format string, args ...any) *Error {
	e := Errorf(http.StatusMethodNotAllowed, StatusClientError, format, args...)
	e.Allow = allow
	return e
}

// Party is chargenet's own OCPI identity: its CPO role's country code (ISO 3166-1
// alpha-2) and party ID, both upper case, and the business name sent with it.
type Party struct {
	CountryCode string
	PartyID     string
	Name        string
}

var (
	countryCodeRe = regexp.MustCompile(`^[A-Z]{2}$`)
	partyIDRe     = regexp.MustCompile(`^[A-Z0-9]{3}$`)
)

// FieldError is a value the package cannot use, of a configuration field or of an
// argument: Field names it as a Go caller sets it ("Party.CountryCode", "versionsURL")
// and Reason says what is wrong with the value. A command words it with its own name
// for the field (a flag).
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + " " + e.Reason }

// fieldError returns a *FieldError about field.
func fieldError(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Validate checks the party's codes and name. Errors: a *FieldError naming the field
// of Config ("Party.CountryCode", "Party.PartyID", "Party.Name").
func (p Party) Validate() error {
	switch {
	case !countryCodeRe.MatchString(p.CountryCode):
		return fieldError("Party.CountryCode", "%q must be an ISO 3166-1 alpha-2 code (two letters)", p.CountryCode)
	case !partyIDRe.MatchString(p.PartyID):
		return fieldError("Party.PartyID", "%q must be three letters or digits", p.PartyID)
	case p.Name == "" || len(p.Name) > 100 || strings.ContainsFunc(p.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fieldError("Party.Name", "%q must be 1 to 100 printable characters", p.Name)
	}
	return nil
}

// Store is what the OCPI interface needs of a store: the sites it shows (and the read
// memo of its pages), the EVSEs its pushes read, and the partners with their tokens.
type Store interface {
	chargenet.SiteReader
	chargenet.ReadMemo
	// EVSE returns the EVSE with this uid (see chargenet.EVSEService).
	EVSE(ctx context.Context, uid int64) (*chargenet.EVSE, error)
	chargenet.PartnerService
}

// Config configures a Service. Store and PublicURL are required, and Party for
// everything but Disconnect.
type Config struct {
	Store Store
	Party Party
	// PublicURL is the base of every URL chargenet hands out (versions, endpoints,
	// Link), without a trailing slash: "https://chargenet.example.com".
	PublicURL string
	// Client makes the requests of the handshake; nil means an outbound client (see
	// internal/outbound) with a 10 s timeout and the address guard.
	Client *http.Client
	// AllowInsecure accepts partner URLs with http and non-public hosts (development
	// only), as the webhook dispatcher's AllowInsecure does for webhooks.
	AllowInsecure bool
	// Cursors signs the positions written into Link; nil means a random key (positions
	// then do not survive a restart, and replicas do not share them).
	Cursors *chargenet.CursorCodec
	// TokenCacheTTL is how long a checked token is trusted before the store is asked
	// again: a dead token is refused within it on every replica. Zero asks every time.
	TokenCacheTTL time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Logger receives a line per failed push and handshake; nil discards.
	Logger *slog.Logger
}

// Service is chargenet's OCPI interface over a store. Create it with New; it is safe
// for concurrent use.
type Service struct {
	cfg     Config
	base    string // PublicURL + "/ocpi"
	tokens  tokenCache
	pushers pusherCache
	sites   *siteCache
}

// New returns a Service. It returns an error when the configuration is incomplete.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.PublicURL == "" {
		return nil, errors.New("ocpi: Store and PublicURL are required")
	}
	if cfg.Party != (Party{}) {
		if err := cfg.Party.Validate(); err != nil {
			return nil, fmt.Errorf("ocpi: %w", err)
		}
	}
	if cfg.Client == nil {
		cfg.Client = defaultClient(cfg.AllowInsecure)
	}
	if cfg.Cursors == nil {
		var key [32]byte
		_, _ = rand.Read(key[:])
		cfg.Cursors = chargenet.NewCursorCodec(key[:])
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	return &Service{cfg: cfg, base: cfg.PublicURL + "/ocpi", tokens: tokenCache{m: map[[32]byte]cachedToken{}},
		sites: newSiteCache(siteCacheBytes)}, nil
}

// VersionsURL is the URL of chargenet's versions list, the one a partner receives with
// its registration token.
func (s *Service) VersionsURL() string { return s.base + "/versions" }

// detailsURL is the URL of chargenet's 2.2.1 version details.
func (s *Service) detailsURL() string { return s.base + "/" + Version }

// Party returns chargenet's own identity.
func (s *Service) Party() Party { return s.cfg.Party }

// Versions returns the data of GET /ocpi/versions.
func (s *Service) Versions() []ocpigen.Version {
	return []ocpigen.Version{{Version: ocpigen.VersionNumberN221, Url: s.detailsURL()}}
}

// Details returns the data of GET /ocpi/2.2.1: credentials and locations, both as
// SENDER.
func (s *Service) Details() ocpigen.VersionDetails {
	return ocpigen.VersionDetails{Version: ocpigen.VersionNumberN221, Endpoints: []ocpigen.Endpoint{
		{Identifier: ocpigen.ModuleIDCredentials, Role: ocpigen.InterfaceRoleSENDER, Url: s.detailsURL() + "/credentials"},
		{Identifier: ocpigen.ModuleIDLocations, Role: ocpigen.InterfaceRoleSENDER, Url: s.detailsURL() + "/locations"},
	}}
}

// Credentials returns chargenet's credentials holding token: its versions URL and its
// CPO role.
func (s *Service) Credentials(token string) ocpigen.Credentials {
	p := s.cfg.Party
	return ocpigen.Credentials{Token: token, Url: s.VersionsURL(), Roles: []ocpigen.CredentialsRole{{
		Role: ocpigen.RoleCPO, CountryCode: p.CountryCode, PartyId: p.PartyID,
		BusinessDetails: ocpigen.BusinessDetails{Name: p.Name},
	}}}
}

// NewToken returns a new credentials or registration token: 43 characters of base64url
// (256 random bits), within OCPI's printable ASCII and 64 characters.
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// newUUID returns a random (version 4) UUID, for X-Request-ID and X-Correlation-ID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// NewRequestID returns a new X-Request-ID (or X-Correlation-ID) value.
func NewRequestID() string { return newUUID() }

// DateTime formats t as chargenet writes OCPI DateTimes: UTC, milliseconds (truncated),
// "Z" (24 characters, within OCPI's 25, which leave no room for the stored
// microseconds). Truncation keeps a date_from taken from a last_updated inclusive of
// that change.
func DateTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// ParseDateTime reads an OCPI DateTime: RFC 3339 in UTC, "Z" optional, fractional
// seconds optional, no offset. It reports false for anything else.
func ParseDateTime(s string) (time.Time, bool) {
	if len(s) > 25 || strings.ContainsAny(s, "+ ") || strings.Count(s, "-") != 2 {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05.999999999", strings.TrimSuffix(s, "Z"), time.UTC)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// tokenCache keeps the partners found by token hash for a while.
type tokenCache struct {
	mu sync.Mutex
	m  map[[32]byte]cachedToken
}

type cachedToken struct {
	partner      *chargenet.Partner
	registration bool
	expires      time.Time
}

const maxCachedTokens = 10000

func (c *tokenCache) get(h [32]byte, now time.Time) (cachedToken, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[h]
	return t, ok && now.Before(t.expires)
}

func (c *tokenCache) put(h [32]byte, t cachedToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCachedTokens {
		clear(c.m)
	}
	c.m[h] = t
}

// forget drops every entry of partner id: its tokens changed on this replica.
func (c *tokenCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, t := range c.m {
		if t.partner.ID == id {
			delete(c.m, h)
		}
	}
}
