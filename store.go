package chargenet

import (
	"context"
	"crypto/sha256"
	"time"
)

// Store is everything a storage backend (sqlite, postgres) provides: one small service
// per aggregate, the store's own reports, and its administration. Methods return domain
// errors (*Error wrapping ErrNotFound, ErrInvalid, ...) for conditions a client caused,
// ErrUnavailable when the database cannot be reached, and other errors only for failures
// the client cannot act on.
//
// Every write takes the time of a change in its transaction, on the rows as it read
// them (locked where the database has row locks): an EVSE's, connector's or location's
// LastUpdated becomes NextUpdate(its previous one, now), so it grows with every version
// whatever the now a write is given (a replica's clock behind another's, a clock set
// back). The now of a write method is the caller's clock reading. A location is touched
// (Location.Touch) by every change of itself, of its list of EVSEs and of one of its
// EVSEs, in the transaction of that change, so that its LastUpdated is the newest of
// itself and its parts; no location event is recorded for a change of its parts. Times
// are kept and returned in UTC to the microsecond (Precision).
//
// The methods that change the network take the actor of the change (the name of the
// API key that made it, or "chargebox:<identity>"): the store sets it as the Actor of
// every event the change records.
type Store interface {
	EVSEService
	LocationService
	SiteReader
	ReadMemo
	WebhookService
	EventLog
	KeyService
	PartnerService
	IdempotencyService
	ChargeboxService
	Inspector
	ReadMemo

	// Import inserts the inventory in one transaction: all of it or, on any error, none.
	// Its EVSEs and locations get Version 1, their connectors their EVSE's LastUpdated,
	// and its locations a LastUpdated no earlier than their EVSEs'; an existing location
	// that gains EVSEs is touched with the newest of their LastUpdated
	// (Inventory.NewestEVSEUpdates). Errors name the record by list and index
	// ("evses[3].evseId"), the first one's when there are several: inv.Validate's
	// ErrInvalid; ErrConflict for an id, uid or evseId that already exists; ErrInvalid
	// invalid_body for an EVSE's location that is neither in inv nor stored.
	Import(ctx context.Context, inv *Inventory) error
	// Setting returns a stored setting, storing value first if the name has none yet; of
	// several concurrent callers (replicas) all get the value that was stored first.
	Setting(ctx context.Context, name, value string) (string, error)
	// Ping checks that the database answers. ErrUnavailable if it does not.
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}

// EVSEService reads and changes EVSEs with their connectors.
type EVSEService interface {
	// EVSE returns the EVSE with all its connectors. ErrNotFound if there is none.
	EVSE(ctx context.Context, uid int64) (*EVSE, error)
	// EVSEDoc returns the EVSE's contract JSON and its Version, read in one snapshot.
	// ErrNotFound if there is none.
	EVSEDoc(ctx context.Context, uid int64) ([]byte, int64, error)
	// ListEVSEs reads one keyset slice of EVSEs ordered by UID (see Seek).
	ListEVSEs(ctx context.Context, seek Seek[int64]) ([]EVSE, error)
	// ListEVSEChanges reads one slice of the EVSEs changed since seek.Since, removed ones
	// included, in change order, each with its ChangePos set.
	ListEVSEChanges(ctx context.Context, seek ChangeSeek[int64]) ([]EVSE, error)
	// UpdateConnector applies patch to one connector in a single transaction that locks
	// the EVSE, checks the rules through EVSE.UpdateConnector (so ErrNotFound,
	// ErrPreconditionFailed, ErrConflict and ErrInvalid come from there), writes only the
	// patched columns, increments the EVSE's Version, takes its LastUpdated, and the
	// connector's, as NextUpdate(LastUpdated, now) (EVSE.TouchConnector), touches its
	// location, and returns the EVSE as committed. ErrNotFound if the EVSE does not exist.
	UpdateConnector(ctx context.Context, uid, connectorID int64, patch ConnectorPatch, ifMatch, actor string, now time.Time) (*EVSE, error)
	// ApplyStatusNotification applies a charge box's status notification in one
	// transaction that locks the charge box's EVSEs, through ApplyStatusNotification (so
	// its errors come from there), touches the locations of the EVSEs whose Version it
	// changed, and records the events it produces in the same transaction. ErrNotFound if
	// the charge box has no EVSE.
	ApplyStatusNotification(ctx context.Context, n *StatusNotification, actor string, now time.Time) (*StatusResult, error)
	// CreateEVSE stores e, already checked by EVSE.PrepareNew, with a new UID (one more
	// than the highest in use), in one transaction with its evse.created event, the touch
	// of its location with e's LastUpdated, and idem's answer when idem is not nil. It
	// returns the EVSE as stored. Errors: ErrInvalid (locationId) when the location does
	// not exist; ErrConflict with code location_deleted when it is deleted, code conflict
	// (param evseId) when the evseId is taken, and code idempotency_key_in_use when
	// idem's key has an unexpired answer already.
	CreateEVSE(ctx context.Context, e *EVSE, idem *Idempotency, actor string, now time.Time) (*EVSE, error)
	// ChangeEVSE reads EVSE uid with everything the domain rules need (OperatorHold
	// included) in a write transaction, and lets change apply one of the domain's
	// changes to it (EVSE.ApplyPatch, Remove, AddConnector, DeleteConnector), which
	// returns the change's events or a domain error. When change leaves the Version as it
	// was, nothing is written and the EVSE is returned as read. Otherwise the store
	// writes the EVSE, all its connectors, the events, idem's answer when idem is not
	// nil, and the touch of its location with its new LastUpdated (of the old and the new
	// location when it moved), and returns the EVSE as committed. The domain's changes
	// take LastUpdated as NextUpdate of the EVSE as read. Errors: ErrNotFound (uid); change's
	// errors unchanged; ErrInvalid (locationId) when a new location does not exist,
	// ErrConflict location_deleted when it is deleted; ErrConflict idempotency_key_in_use
	// as for CreateEVSE. Nothing is written when an error is returned.
	ChangeEVSE(ctx context.Context, uid int64, change func(*EVSE) ([]Event, error), idem *Idempotency, actor string, now time.Time) (*EVSE, error)
}

// LocationService reads and changes locations.
type LocationService interface {
	// Location returns the location with its EvseUIDs. ErrNotFound if there is none.
	Location(ctx context.Context, id string) (*Location, error)
	// ListLocations reads one keyset slice of locations ordered by ID (see Seek).
	ListLocations(ctx context.Context, seek Seek[string]) ([]Location, error)
	// ListLocationDocs reads the same slice as ListLocations, as the locations' contract
	// JSON.
	ListLocationDocs(ctx context.Context, seek Seek[string]) ([]LocationDoc, error)
	// ListLocationChanges reads one slice of the locations changed since seek.Since,
	// deleted ones included, in change order, each with its ChangePos and EvseUIDs set.
	ListLocationChanges(ctx context.Context, seek ChangeSeek[string]) ([]Location, error)
	// PutLocation creates location l (EvseUIDs, LastUpdated, Version and DeletedAt are
	// ignored; created true, Version 1, LastUpdated now, event location.created) or
	// replaces the fields a client sets of the existing one, which is touched
	// (Location.Touch; event location.updated), in one transaction. A replacement with
	// the same fields (Location.SameFields) writes nothing and returns the location as
	// stored. ErrConflict location_deleted when the location was deleted; otherwise,
	// with l.IfVersion set, ErrPreconditionFailed (Location.CheckVersion) when there is
	// no location at that version, and nothing is written.
	PutLocation(ctx context.Context, l *Location, actor string, now time.Time) (loc *Location, created bool, err error)
	// DeleteLocation marks location id deleted, touched (Location.Touch) and with
	// DeletedAt its new LastUpdated, with its location.deleted event. A location already
	// deleted is returned as it is.
	// ErrNotFound when there is none; ErrConflict location_in_use (chargenet.LocationInUse)
	// while an EVSE at it is not REMOVED.
	DeleteLocation(ctx context.Context, id, actor string, now time.Time) (*Location, error)
}

// WebhookService keeps each API key's webhooks and the deliveries queued for them (the
// outbox).
type WebhookService interface {
	// CreateWebhook stores a new webhook, and idem's answer when idem is not nil (kept
	// as of w.CreatedAt), in one transaction. ErrConflict if the ID is taken, and
	// idempotency_key_in_use as for CreateEVSE.
	CreateWebhook(ctx context.Context, w *Webhook, idem *Idempotency) error
	// Webhook returns the webhook of owner with this id. ErrNotFound if there is none.
	Webhook(ctx context.Context, owner, id string) (*Webhook, error)
	// ListWebhooks reads one keyset slice of owner's webhooks ordered by ID.
	ListWebhooks(ctx context.Context, owner string, seek Seek[string]) ([]Webhook, error)
	// UpdateWebhook applies patch (already checked) to owner's webhook and sets UpdatedAt
	// to now; a patch that sets Enabled true clears DisabledReason. ErrNotFound if there
	// is none.
	UpdateWebhook(ctx context.Context, owner, id string, patch WebhookPatch, now time.Time) (*Webhook, error)
	// RotateWebhookSecret makes secret the webhook's signing secret and keeps the
	// current one as PreviousSecret until now + SecretOverlap. ErrNotFound if there is none.
	RotateWebhookSecret(ctx context.Context, owner, id, secret string, now time.Time) (*Webhook, error)
	// DeleteWebhook deletes owner's webhook, its pending deliveries and its attempts.
	// ErrNotFound if there is none.
	DeleteWebhook(ctx context.Context, owner, id string) error
	// ListDeliveryAttempts reads one keyset slice of the attempts made for owner's
	// webhook, ordered by ID (Seek.Backward for newest first). ErrNotFound if there is no
	// such webhook.
	ListDeliveryAttempts(ctx context.Context, owner, webhookID string, seek Seek[int64]) ([]DeliveryAttempt, error)
	// SendTestEvent stores ev (a webhook.ping) and queues it, due now, for owner's
	// webhook webhookID only, in payload version PingVersion, and announces it. ErrNotFound if
	// there is no such webhook.
	SendTestEvent(ctx context.Context, owner, webhookID string, ev Event, now time.Time) error
	// ReplayEvents queues the logged events r selects for owner's webhook again, due now,
	// each in the payload version of the webhook's subscription to its type, also events
	// still pending for it (their earlier delivery may still fail for good; receivers
	// drop the duplicate by its id), and returns how many it queued. ErrNotFound if there
	// is no such webhook.
	ReplayEvents(ctx context.Context, owner, webhookID string, r Replay, now time.Time) (int, error)
	// ClaimDeliveries leases up to limit due deliveries (next attempt at or before now,
	// webhook enabled, no unexpired lease) until now + lease and returns them, oldest due
	// first. A delivery is leased to one caller at a time, also across replicas; a lease
	// that expires (the caller died) makes it due again.
	ClaimDeliveries(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]Delivery, error)
	// RecordAttempts stores each attempt and settles its delivery, all in one
	// transaction: a delivery is removed when its attempt succeeded or no retry is
	// scheduled, otherwise due again at NextAttemptAt; OutcomeGone also disables the
	// webhook; when the attempt says the receiver is down (ReceiverDown), the webhook's
	// other deliveries that are not leased become due no earlier than NextAttemptAt. A
	// delivery whose webhook was deleted meanwhile is dropped without error.
	RecordAttempts(ctx context.Context, records ...AttemptRecord) error
}

// KeyService keeps the API keys, by the hashes of their secrets.
type KeyService interface {
	// CreateAPIKey stores a key by its hash. ErrConflict if the name is taken (also by a
	// revoked key) or the hash is.
	CreateAPIKey(ctx context.Context, key APIKey) error
	// RevokeAPIKey marks the named key revoked: none of its secrets works any more.
	// ErrNotFound if no active key has the name.
	RevokeAPIKey(ctx context.Context, name string, now time.Time) error
	// APIKeyByHash returns the key, not revoked, whose current or previous secret has
	// this hash, also when that secret has expired (APIKey.SecretExpiry says until when
	// it works). ErrNotFound otherwise.
	APIKeyByHash(ctx context.Context, hash [sha256.Size]byte) (*APIKey, error)
	// ListAPIKeys reads one keyset slice of the keys not revoked, expired ones
	// included, ordered by name (see Seek).
	ListAPIKeys(ctx context.Context, seek Seek[string]) ([]APIKey, error)
	// RotateAPIKey gives the named key the secret whose hash is r.Hash. The current
	// secret keeps working until r.PreviousUntil; the one an earlier rotation replaced
	// stops at once. r.ExpiresAt, when set, becomes the key's expiry. It returns the key
	// as stored. ErrNotFound if no active key has the name; ErrConflict (param hash) if
	// a key has that hash.
	RotateAPIKey(ctx context.Context, name string, r KeyRotation) (*APIKey, error)
	// RecordAPIKeyUse sets each named key's LastUsedAt to its use's time, unless it is
	// later already, in one transaction. Unknown and revoked names are skipped.
	RecordAPIKeyUse(ctx context.Context, uses []KeyUse) error
}

// IdempotencyService reads the answers kept for Idempotency-Keys; the writes that
// create something keep them (see Idempotency).
type IdempotencyService interface {
	// IdempotentAnswer returns the answer kept for owner's idempotency key, when it was
	// kept less than IdempotencyTTL before now. ErrNotFound otherwise.
	IdempotentAnswer(ctx context.Context, owner, key string, now time.Time) (*IdempotentAnswer, error)
}

// IdempotencyTTL is how long the answer to an Idempotency-Key is kept.
const IdempotencyTTL = 24 * time.Hour

// Idempotency is the Idempotency-Key of a request that creates something: the store
// keeps the answer, made by Answer from what it created, in the transaction that
// creates it, so that the key and the creation are committed together or not at all.
// The key is checked before anything else in that transaction: a key with an unexpired
// answer makes the write fail with IdempotencyKeyInUse whatever else is wrong with it.
// The store keeps Fingerprint and the write's time with the answer.
type Idempotency struct {
	Owner       string            // the API key's name: keys are per API key
	Key         string            // the Idempotency-Key header
	Fingerprint [sha256.Size]byte // of the operation and the request body
	// Answer returns the answer to keep for what the store created (*EVSE or
	// *Webhook), in a form only its maker reads: the store keeps the bytes as they are.
	Answer func(created any) ([]byte, error)
}

// IdempotentAnswer is the answer kept for an idempotency key.
type IdempotentAnswer struct {
	Fingerprint [sha256.Size]byte
	Answer      []byte // as Idempotency.Answer made it
	CreatedAt   time.Time
}

// IdempotencyKeyInUse is the error a store returns when idem's key already has an
// answer that has not expired: another request with the key committed first.
func IdempotencyKeyInUse(key string) error {
	return Errorf(ErrConflict, CodeIdempotencyKeyInUse, "Idempotency-Key", "Idempotency-Key %q is used by another request", key)
}

// LocationDoc is a location's ID and its contract JSON.
type LocationDoc struct {
	ID   string
	JSON []byte
}

// Seek describes one keyset read of a list: at most Limit items, in ascending key order
// after Key when Backward is false, or in descending key order before Key when
// Backward is true. With Inclusive, the item whose key is Key, if the list holds it,
// is read too, first. Without a key (HasKey false) the read starts at the first item
// (forward) or the last one (backward), and Inclusive means nothing. Keyset reads cost
// the same at any depth.
type Seek[K int64 | string] struct {
	Key       K
	HasKey    bool
	Inclusive bool
	Backward  bool
	Limit     int
}

// Delivery is one event to deliver to one webhook (a row of the outbox).
type Delivery struct {
	ID         int64
	Event      Event
	Webhook    Webhook // with its secrets
	APIVersion string  // the payload version the webhook subscribed to
	Attempt    int     // the number of this attempt: 1 for the first
}

// AttemptRecord is an attempt made for a delivery, to be recorded.
type AttemptRecord struct {
	Delivery *Delivery
	Attempt  *DeliveryAttempt
}

// Outcomes of a delivery attempt.
const (
	OutcomeSucceeded = "succeeded" // the receiver answered 2xx
	OutcomeFailed    = "failed"    // another answer or no answer
	OutcomeGone      = "gone"      // 410: the webhook is disabled
)

// DeliveryAttempt records one attempt to deliver an event to a webhook.
type DeliveryAttempt struct {
	ID            int64
	WebhookID     string
	EventID       string
	EventType     string
	Attempt       int
	AttemptedAt   time.Time
	Outcome       string
	HTTPStatus    int    // 0 when no answer came
	Error         string // empty on success
	Duration      time.Duration
	NextAttemptAt *time.Time // nil when no retry is scheduled
}

// ReceiverDown reports whether the attempt failed in a way that says the receiver as a
// whole is unwell (no answer, a 5xx or 429) and a retry is scheduled. Then the
// webhook's other pending deliveries wait for that retry too, instead of each being
// tried against a receiver that is down.
func (a *DeliveryAttempt) ReceiverDown() bool {
	return a.Outcome == OutcomeFailed && a.NextAttemptAt != nil &&
		(a.HTTPStatus == 0 || a.HTTPStatus >= 500 || a.HTTPStatus == 429)
}
