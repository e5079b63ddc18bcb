package ocpi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/chargenet/chargenet"
	ocpigen "github.com/chargenet/chargenet/gen/ocpi"
)

// Caller is the partner a request's token belongs to.
type Caller struct {
	Partner *chargenet.Partner
	// Token is the token as the partner holds it (decoded from Base64 when it was sent
	// so), and Hash its SHA-256.
	Token string
	Hash  [32]byte
	// Registration is true for the registration token (A) of a partner that has not
	// registered yet.
	Registration bool
}

// Registered reports whether the caller holds the credentials token of a registered
// partner: only that token opens the Locations module.
func (c *Caller) Registered() bool { return !c.Registration && c.Partner.Registered }

// maxHeaderToken bounds the Authorization header's token.
const maxHeaderToken = 512

// Authenticate returns the partner whose token the Authorization header values carry:
// "Token <token in Base64>" as OCPI 2.2.1 requires, or the token unencoded, as many
// peers still send it. Checked tokens are trusted for TokenCacheTTL. Errors: a 401
// *Error for a missing, repeated, malformed or unknown token; the store's otherwise.
func (s *Service) Authenticate(ctx context.Context, header []string) (*Caller, error) {
	switch {
	case len(header) == 0:
		return nil, Unauthorized(`header Authorization is missing; send "Authorization: Token <token in Base64>"`)
	case len(header) > 1:
		return nil, Unauthorized("header Authorization is repeated; send it once")
	}
	scheme, raw, ok := strings.Cut(strings.TrimSpace(header[0]), " ")
	raw = strings.TrimSpace(raw)
	if !ok || !strings.EqualFold(scheme, "Token") || raw == "" || len(raw) > maxHeaderToken || !printable(raw) {
		return nil, Unauthorized(`header Authorization is malformed; send "Authorization: Token <token in Base64>"`)
	}
	candidates := make([]string, 0, 2)
	if b, err := base64.StdEncoding.DecodeString(raw); err == nil && len(b) > 0 && printable(string(b)) {
		candidates = append(candidates, string(b))
	}
	candidates = append(candidates, raw)
	now := s.cfg.Now()
	for _, token := range candidates {
		h := chargenet.HashToken(token)
		if t, ok := s.tokens.get(h, now); ok {
			return &Caller{Partner: t.partner, Token: token, Hash: h, Registration: t.registration}, nil
		}
		p, registration, err := s.cfg.Store.PartnerByToken(ctx, h)
		if errors.Is(err, chargenet.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if s.cfg.TokenCacheTTL > 0 {
			s.tokens.put(h, cachedToken{partner: p, registration: registration, expires: now.Add(s.cfg.TokenCacheTTL)})
		}
		return &Caller{Partner: p, Token: token, Hash: h, Registration: registration}, nil
	}
	return nil, Unauthorized("header Authorization: unknown token")
}

// printable reports whether s holds only printable non-whitespace ASCII (U+0021 to
// U+007E), OCPI's token characters.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Register answers POST of the credentials: the partner holding a registration token
// hands over its credentials, chargenet reads its versions and details with the token
// in them, and answers with its own credentials holding a new token; the registration
// token is dead from then on. Errors: 405 for a partner that is registered (or that
// chargenet is connecting to), 400 (2001) for a URL the address guard refuses, 200 with
// 3001 or 3003 when the partner's versions are unusable (nothing is registered then),
// 401 when another exchange used the token first.
func (s *Service) Register(ctx context.Context, c *Caller, creds *ocpigen.Credentials) (*ocpigen.Credentials, error) {
	if !c.Registration {
		return nil, MethodNotAllowed("DELETE, GET, PUT", "already registered; PUT updates the credentials")
	}
	return s.exchange(ctx, c, creds)
}

// Update answers PUT of the credentials: as Register, for a registered partner, whose
// previous token is dead afterwards. 405 for a partner that is not registered.
func (s *Service) Update(ctx context.Context, c *Caller, creds *ocpigen.Credentials) (*ocpigen.Credentials, error) {
	if !c.Registered() {
		return nil, MethodNotAllowed("GET, POST", "not registered; POST with the registration token registers")
	}
	return s.exchange(ctx, c, creds)
}

// Unregister answers DELETE of the credentials: chargenet forgets the partner, its
// token and its pending pushes. 405 for a partner that is not registered.
func (s *Service) Unregister(ctx context.Context, c *Caller) error {
	if !c.Registered() {
		return MethodNotAllowed("GET, POST", "not registered; there is nothing to unregister")
	}
	err := s.cfg.Store.DeletePartner(ctx, c.Partner.ID)
	s.tokens.forget(c.Partner.ID)
	if errors.Is(err, chargenet.ErrNotFound) {
		return Unauthorized("header Authorization: unknown token")
	}
	return err
}

// exchange reads the partner's endpoints with the credentials it handed over, and
// stores them with a new token for it.
func (s *Service) exchange(ctx context.Context, c *Caller, creds *ocpigen.Credentials) (*ocpigen.Credentials, error) {
	if uerr := s.checkURL("url", creds.Url); uerr != nil {
		return nil, uerr
	}
	endpoints, derr := s.discover(ctx, creds.Url, creds.Token)
	if derr != nil {
		return nil, derr
	}
	token := NewToken()
	stored := chargenet.PartnerCredentials{Token: creds.Token, VersionsURL: creds.Url, Endpoints: endpoints, Roles: roles(creds.Roles)}
	_, err := s.cfg.Store.SetPartnerCredentials(ctx, c.Partner.ID, c.Hash, stored, chargenet.HashToken(token), s.cfg.Now())
	s.tokens.forget(c.Partner.ID)
	s.pushers.forget(c.Partner.ID)
	if errors.Is(err, chargenet.ErrConflict) || errors.Is(err, chargenet.ErrNotFound) {
		return nil, Unauthorized("header Authorization: the token is no longer valid; another credentials exchange used it first")
	}
	if err != nil {
		return nil, err
	}
	out := s.Credentials(token)
	return &out, nil
}

// checkURL applies the outbound address guard to a URL a partner gave (field names it);
// a 400 (2001) *Error when it refuses.
func (s *Service) checkURL(field, raw string) *Error {
	if refused := s.refusal(raw); refused != "" {
		return InvalidParameter("%s: %s", field, refused)
	}
	return nil
}

// refusal says why the outbound address guard refuses raw, "" when it does not.
func (s *Service) refusal(raw string) string {
	err := chargenet.CheckWebhookURL(raw, s.cfg.AllowInsecure)
	if err == nil {
		return ""
	}
	if de := (*chargenet.Error)(nil); errors.As(err, &de) {
		return strings.TrimPrefix(de.Message, "url: ")
	}
	return err.Error()
}

// roles returns the roles of a partner's credentials as stored.
func roles(rs []ocpigen.CredentialsRole) []chargenet.PartnerRole {
	out := make([]chargenet.PartnerRole, len(rs))
	for i, r := range rs {
		out[i] = chargenet.PartnerRole{Role: string(r.Role), CountryCode: strings.ToUpper(r.CountryCode),
			PartyID: strings.ToUpper(r.PartyId), Name: r.BusinessDetails.Name}
	}
	return out
}

// discover reads the partner's versions at versionsURL with token, then the details
// of 2.2.1, and returns its endpoints. Errors: HTTP 200 *Error with 3001 when either
// cannot be read, 3003 when the partner offers no 2.2.1 or its details list no
// credentials endpoint.
func (s *Service) discover(ctx context.Context, versionsURL, token string) ([]chargenet.PartnerEndpoint, *Error) {
	unusable := func(format string, args ...any) *Error {
		return Errorf(http.StatusOK, StatusUnusableAPI, format, args...)
	}
	correlation := newUUID()
	client := partnerClient(s.cfg.Client, token, map[string]string{partnerVersions: versionsURL})
	var versions []ocpigen.Version
	if _, err := answer(&versions)(client.GetPartnerVersions(ctx, &ocpigen.GetPartnerVersionsParams{XRequestID: newUUID(),
		XCorrelationID: correlation})); err != nil {
		return nil, unusable("GET %s: %v", versionsURL, err)
	}
	var detailsURL string
	var offered []string
	for _, v := range versions {
		offered = append(offered, string(v.Version))
		if v.Version == Version {
			detailsURL = v.Url
		}
	}
	if detailsURL == "" {
		return nil, Errorf(http.StatusOK, StatusNoCommonVersion, "no common version: chargenet speaks OCPI %s, the partner offers %s",
			Version, strings.Join(offered, ", "))
	}
	if err := s.checkURL("version "+Version+" url", detailsURL); err != nil {
		return nil, unusable("%s", err.Message)
	}
	client = partnerClient(s.cfg.Client, token, map[string]string{partnerVersionDetails: detailsURL})
	var details ocpigen.VersionDetails
	if _, err := answer(&details)(client.GetPartnerVersionDetails(ctx, &ocpigen.GetPartnerVersionDetailsParams{XRequestID: newUUID(),
		XCorrelationID: correlation})); err != nil {
		return nil, unusable("GET %s: %v", detailsURL, err)
	}
	endpoints := make([]chargenet.PartnerEndpoint, 0, len(details.Endpoints))
	for _, e := range details.Endpoints {
		endpoints = append(endpoints, chargenet.PartnerEndpoint{Module: string(e.Identifier), Role: string(e.Role), URL: e.Url})
	}
	found := chargenet.PartnerCredentials{Endpoints: endpoints}
	if found.Endpoint(chargenet.ModuleCredentials, "") == "" {
		return nil, Errorf(http.StatusOK, StatusNoCommonVersion, "the partner's %s details list no credentials endpoint", Version)
	}
	for _, use := range []string{found.Endpoint(chargenet.ModuleCredentials, ""), found.ReceiverURL()} {
		if use == "" {
			continue
		}
		if err := s.checkURL("endpoint url", use); err != nil {
			return nil, unusable("%s", err.Message)
		}
	}
	return endpoints, nil
}

// partnerNameRe is the form of a partner's name.
var partnerNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckPartnerName checks a partner's name. Errors: a *FieldError about "name".
func CheckPartnerName(name string) error {
	if !partnerNameRe.MatchString(name) {
		return fieldError("name", "%q must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// NewPartner creates a partner named name holding a new registration token (OCPI's
// token A), and returns the token, which is not kept: only its hash is. The partner
// registers by POSTing its credentials with it to chargenet's versions URL's
// credentials endpoint. Errors: a *FieldError about name; ErrConflict when it is taken.
func (s *Service) NewPartner(ctx context.Context, name string) (string, *chargenet.Partner, error) {
	if err := CheckPartnerName(name); err != nil {
		return "", nil, err
	}
	token := NewToken()
	h := chargenet.HashToken(token)
	now := s.cfg.Now().UTC()
	p := &chargenet.Partner{ID: chargenet.NewID("ptn_", now), Name: name, RegistrationHash: &h, CreatedAt: now, UpdatedAt: now}
	if err := s.cfg.Store.CreatePartner(ctx, p); err != nil {
		return "", nil, err
	}
	return token, p, nil
}

// DefaultPartnerName derives a partner's name from its versions URL when the command
// is not given one: the host, and the port when there is one ("emsp.example.com",
// "127.0.0.1-9001").
func DefaultPartnerName(versionsURL string) string {
	u, err := url.Parse(versionsURL)
	if err != nil || u.Hostname() == "" {
		return "partner"
	}
	name := u.Hostname()
	if u.Port() != "" {
		name += "-" + u.Port()
	}
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, strings.Trim(name, "-._"))
	if len(name) > 64 {
		name = name[:64]
	}
	if !partnerNameRe.MatchString(name) {
		return "partner"
	}
	return name
}

// Connect registers chargenet with a partner that handed out a registration token:
// it reads the partner's versions and 2.2.1 details with tokenA, stores the partner
// (named name) with a new token for it, POSTs chargenet's credentials holding that
// token, and stores the credentials the partner answers with. The partner may call
// chargenet with the new token while it answers. Errors: a *FieldError naming a bad
// argument (name, versionsURL, tokenA); the partner's versions, details or answer
// unusable (nothing is kept then); ErrConflict when the name is taken.
func (s *Service) Connect(ctx context.Context, name, versionsURL, tokenA string) (*chargenet.Partner, error) {
	if err := CheckPartnerName(name); err != nil {
		return nil, err
	}
	if refused := s.refusal(versionsURL); refused != "" {
		return nil, fieldError("versionsURL", "is refused: %s", refused)
	}
	if tokenA == "" || len(tokenA) > 64 || !printable(tokenA) {
		return nil, fieldError("tokenA", "must be 1 to 64 printable characters without spaces")
	}
	endpoints, derr := s.discover(ctx, versionsURL, tokenA)
	if derr != nil {
		return nil, fmt.Errorf("the partner's versions: %s", derr.Message)
	}
	found := chargenet.PartnerCredentials{Endpoints: endpoints}
	token := NewToken()
	h := chargenet.HashToken(token)
	now := s.cfg.Now().UTC()
	p := &chargenet.Partner{ID: chargenet.NewID("ptn_", now), Name: name, TokenHash: &h, CreatedAt: now, UpdatedAt: now}
	if err := s.cfg.Store.CreatePartner(ctx, p); err != nil {
		return nil, err
	}
	creds, err := s.postCredentials(ctx, found.Endpoint(chargenet.ModuleCredentials, ""), tokenA, token)
	if err == nil && !slices.ContainsFunc(creds.Roles, func(r chargenet.PartnerRole) bool { return r.CountryCode != "" }) {
		err = errors.New("the partner's credentials name no role")
	}
	if err != nil {
		_ = s.cfg.Store.DeletePartner(context.WithoutCancel(ctx), p.ID)
		return nil, err
	}
	creds.Endpoints = endpoints
	return s.cfg.Store.SetPartnerCredentials(ctx, p.ID, h, *creds, h, s.cfg.Now())
}

// postCredentials POSTs chargenet's credentials holding token to the partner's
// credentials endpoint with its registration token, and returns what the partner
// answers.
func (s *Service) postCredentials(ctx context.Context, endpoint, tokenA, token string) (*chargenet.PartnerCredentials, error) {
	client := partnerClient(s.cfg.Client, tokenA, map[string]string{partnerCredentials: endpoint})
	var theirs ocpigen.Credentials
	if _, err := answer(&theirs)(client.PostPartnerCredentials(ctx, &ocpigen.PostPartnerCredentialsParams{XRequestID: newUUID(),
		XCorrelationID: newUUID()}, s.Credentials(token))); err != nil {
		return nil, fmt.Errorf("POST %s: %w", endpoint, err)
	}
	if theirs.Token == "" || len(theirs.Token) > 64 || !printable(theirs.Token) {
		return nil, fmt.Errorf("POST %s: the partner's token is not 1 to 64 printable characters", endpoint)
	}
	if err := s.checkURL("url", theirs.Url); err != nil {
		return nil, fmt.Errorf("POST %s: the partner's %s", endpoint, err.Message)
	}
	return &chargenet.PartnerCredentials{Token: theirs.Token, VersionsURL: theirs.Url, Roles: roles(theirs.Roles)}, nil
}

// Disconnect unregisters the partner named name: when it is registered, chargenet
// first tells it (DELETE of its credentials endpoint with its token), then forgets it,
// whatever the partner answered. It returns the partner's failure to take the DELETE
// (nil when it did, or was not asked) apart from err, which says nothing was removed.
func (s *Service) Disconnect(ctx context.Context, name string) (told error, err error) {
	p, err := s.cfg.Store.PartnerByName(ctx, name)
	if err != nil {
		return nil, err
	}
	if endpoint := p.Endpoint(chargenet.ModuleCredentials, ""); p.Registered && endpoint != "" {
		client := partnerClient(s.cfg.Client, p.Token, map[string]string{partnerCredentials: endpoint})
		_, told = answer(nil)(client.DeletePartnerCredentials(ctx, &ocpigen.DeletePartnerCredentialsParams{XRequestID: newUUID(),
			XCorrelationID: newUUID()}))
		if told != nil {
			told = fmt.Errorf("DELETE %s: %w", endpoint, told)
		}
	}
	if err := s.cfg.Store.DeletePartner(ctx, p.ID); err != nil {
		return told, err
	}
	s.tokens.forget(p.ID)
	s.pushers.forget(p.ID)
	return told, nil
}
