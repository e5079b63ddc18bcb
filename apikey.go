package chargenet

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"regexp"
	"slices"
	"time"
)

// Scopes an API key can hold. Every operation of the contract needs one of them (its
// x-scopes), so a key grants exactly the operations of the scopes it holds.
const (
	ScopeInventoryRead  = "inventory:read"  // EVSE and location reads, and the change lists
	ScopeInventoryWrite = "inventory:write" // every inventory write
	ScopeEventsRead     = "events:read"     // the event log
	ScopeWebhooks       = "webhooks"        // the key's own webhooks, their test, replay and deliveries
	ScopeIngest         = "ingest"          // charge-box status notifications
	ScopeKeys           = "keys"            // key administration
	// ScopePartner is what a key held before scopes were split, and what a key gets
	// when none is named: every scope but ingest and keys.
	ScopePartner = "partner"
)

// Scopes lists every scope an operation can need, in the order the documentation
// gives them.
var Scopes = []string{ScopeInventoryRead, ScopeInventoryWrite, ScopeEventsRead, ScopeWebhooks, ScopeIngest, ScopeKeys}

// Grants is a set of scopes, one bit each (in the order of Scopes): what a key may do,
// checked on every request with one AND.
type Grants uint8

// partnerGrants are the scopes ScopePartner stands for.
const partnerGrants = Grants(1<<0 | 1<<1 | 1<<2 | 1<<3)

// GrantsOf returns the scopes a scope name stands for (ScopePartner stands for four),
// and false for a name that is not a scope.
func GrantsOf(scope string) (Grants, bool) {
	if scope == ScopePartner {
		return partnerGrants, true
	}
	i := slices.Index(Scopes, scope)
	if i < 0 {
		return 0, false
	}
	return 1 << i, true
}

// Has reports whether g holds every scope of want.
func (g Grants) Has(want Grants) bool { return g&want == want }

// ParseScopes checks a key's scope names and returns them as a key stores them:
// ScopePartner alone when names is empty, otherwise each name once, in the order of
// Scopes with ScopePartner first. A name that is not a scope is ErrInvalid with Param
// "scopes[i]".
func ParseScopes(names []string) ([]string, error) {
	if len(names) == 0 {
		return []string{ScopePartner}, nil
	}
	order := append([]string{ScopePartner}, Scopes...)
	for i, n := range names {
		if !slices.Contains(order, n) {
			return nil, Errorf(ErrInvalid, CodeInvalidBody, fmt.Sprintf("scopes[%d]", i),
				"scopes[%d]: %q is not a scope; the scopes are partner, %s", i, n, joinScopes())
		}
	}
	out := make([]string, 0, len(names))
	for _, s := range order {
		if slices.Contains(names, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

func joinScopes() string {
	s := ""
	for i, sc := range Scopes {
		if i > 0 {
			s += ", "
		}
		s += sc
	}
	return s
}

// keyNameRe is the form of a key name: the name is the key's actor in events and logs,
// and part of the admin operations' paths.
var keyNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// DevKeyName is the name of every development key (CHARGENET_API_KEYS): the owner of
// the webhooks they create and the actor of their changes.
const DevKeyName = "env"

// CheckKeyName returns an ErrInvalid (Param "name") unless name can name a new key: 1
// to 64 letters, digits, '.', '_' and '-', starting with a letter or digit, and not
// DevKeyName. Without ':' a key name never looks like a charge box's actor
// ("chargebox:<identity>").
func CheckKeyName(name string) error {
	if !keyNameRe.MatchString(name) || name == DevKeyName {
		return Errorf(ErrInvalid, CodeInvalidBody, "name",
			"name %q: a key name is 1 to 64 letters, digits, '.', '_' and '-', starts with a letter or digit, and is not %q", name, DevKeyName)
	}
	return nil
}

// RateLimit is a number of requests allowed per window. A zero Requests means no limit.
type RateLimit struct {
	Requests int
	Window   time.Duration
}

// String writes r as N/DURATION ("600/1m0s"), or "0" when it limits nothing.
func (r RateLimit) String() string {
	if r.Requests <= 0 {
		return "0"
	}
	return fmt.Sprintf("%d/%s", r.Requests, r.Window)
}

// MaxKeyRateWindow bounds the window of a key's own rate limit.
const MaxKeyRateWindow = 24 * time.Hour

// CheckKeyRateLimit returns an ErrInvalid (Param "rateLimit") unless r can be a key's
// own rate limit: zero (none), or at least one request per window of whole seconds,
// from 1 s to MaxKeyRateWindow.
func CheckKeyRateLimit(r RateLimit) error {
	if r == (RateLimit{}) {
		return nil
	}
	if r.Requests < 1 || r.Window < time.Second || r.Window > MaxKeyRateWindow || r.Window%time.Second != 0 {
		return Errorf(ErrInvalid, CodeInvalidBody, "rateLimit",
			"rateLimit %s: a key's rate limit is at least 1 request per window of whole seconds, 1 s to %s", r, MaxKeyRateWindow)
	}
	return nil
}

// APIKey is a stored API key. Only the SHA-256 hashes of its secrets are kept.
type APIKey struct {
	Name string
	// Hash is the current secret's.
	Hash [sha256.Size]byte
	// Scopes are the scope names the key holds, as ParseScopes returns them; never
	// empty.
	Scopes    []string
	CreatedAt time.Time
	// ExpiresAt is when the key stops working; zero: never.
	ExpiresAt time.Time
	// RateLimit is the key's own limit, which replaces the server's default; zero: the
	// default applies.
	RateLimit RateLimit
	// LastUsedAt is the minute of the key's last recorded use (see RecordAPIKeyUse);
	// zero: no use recorded.
	LastUsedAt time.Time
	// PreviousHash is the hash of the secret the last rotation replaced, accepted until
	// PreviousUntil; both zero when no rotation's overlap is running.
	PreviousHash  [sha256.Size]byte
	PreviousUntil time.Time
}

// Grants returns the scopes k holds. Names that are not scopes (none are stored) grant
// nothing.
func (k *APIKey) Grants() Grants {
	var g Grants
	for _, s := range k.Scopes {
		b, _ := GrantsOf(s)
		g |= b
	}
	return g
}

// SecretExpiry returns when the secret with this hash stops working: ExpiresAt for the
// current secret; for the one a rotation replaced, the end of the overlap, or ExpiresAt
// when that is earlier. Zero means never. ok is false when neither secret has this hash.
// The hashes are compared in constant time.
func (k *APIKey) SecretExpiry(hash [sha256.Size]byte) (expiry time.Time, rotated, ok bool) {
	if subtle.ConstantTimeCompare(k.Hash[:], hash[:]) == 1 {
		return k.ExpiresAt, false, true
	}
	if k.PreviousUntil.IsZero() || subtle.ConstantTimeCompare(k.PreviousHash[:], hash[:]) != 1 {
		return time.Time{}, false, false
	}
	if !k.ExpiresAt.IsZero() && k.ExpiresAt.Before(k.PreviousUntil) {
		return k.ExpiresAt, true, true
	}
	return k.PreviousUntil, true, true
}

// KeyRotation is what RotateAPIKey changes.
type KeyRotation struct {
	// Hash is the new secret's.
	Hash [sha256.Size]byte
	// PreviousUntil is when the secret being replaced stops working (the rotation's time
	// for no overlap).
	PreviousUntil time.Time
	// ExpiresAt, when not nil, is the key's new expiry; nil keeps the one it has.
	ExpiresAt *time.Time
}

// KeyUse is a use of a key to record: its name and the minute of the use.
type KeyUse struct {
	Name string
	At   time.Time
}

// HashAPIKey returns the SHA-256 of a key, the only form in which keys are stored.
func HashAPIKey(key string) [sha256.Size]byte { return sha256.Sum256([]byte(key)) }
