package chargenet

import (
	"context"
	"crypto/sha256"
	"time"
)

// Store is the persistence every backend (sqlite, postgres) implements. Methods return
// domain errors (*Error wrapping ErrNotFound, ErrInvalid, ...) for conditions a client
// caused, ErrUnavailable when the database cannot be reached, and other errors only for
// failures the client cannot act on.
type Store interface {
	// EVSE returns the EVSE with all its connectors. ErrNotFound if there is none.
	EVSE(ctx context.Context, uid int64) (*EVSE, error)
	// ListEVSEs reads one keyset slice of EVSEs ordered by UID (see Seek).
	ListEVSEs(ctx context.Context, seek Seek[int64]) ([]EVSE, error)
	// UpdateConnector applies patch to one connector in a single transaction that locks
	// the EVSE, checks the rules through EVSE.UpdateConnector (so ErrNotFound,
	// ErrPreconditionFailed, ErrConflict and ErrInvalid come from there), writes only the
	// patched columns, increments the EVSE's Version, sets LastUpdated to now, and returns
	// the EVSE as committed. ErrNotFound if the EVSE does not exist.
	UpdateConnector(ctx context.Context, uid, connectorID int64, patch ConnectorPatch, ifMatch string, now time.Time) (*EVSE, error)

	// Location returns the location with its EvseUIDs. ErrNotFound if there is none.
	Location(ctx context.Context, id string) (*Location, error)
	// ListLocations reads one keyset slice of locations ordered by ID (see Seek).
	ListLocations(ctx context.Context, seek Seek[string]) ([]Location, error)

	// Import inserts the inventory in one transaction: all of it or, on any error, none.
	// An identifier that already exists is ErrConflict naming the record.
	Import(ctx context.Context, inv *Inventory) error

	// CreateAPIKey stores a key by its hash. ErrConflict if the name is taken.
	CreateAPIKey(ctx context.Context, key APIKey) error
	// RevokeAPIKey marks the named key revoked. ErrNotFound if no active key has the name.
	RevokeAPIKey(ctx context.Context, name string, now time.Time) error
	// APIKeyByHash returns the active (not revoked) key with this hash. ErrNotFound otherwise.
	APIKeyByHash(ctx context.Context, hash [sha256.Size]byte) (*APIKey, error)

	// Setting returns a stored setting, storing value first if the name has none yet; of
	// several concurrent callers (replicas) all get the value that was stored first.
	Setting(ctx context.Context, name, value string) (string, error)

	// Ping checks that the database answers. ErrUnavailable if it does not.
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}

// Seek describes one keyset read of a list: at most Limit items, in ascending key order
// after After when Backward is false, or in descending key order before After when
// Backward is true. Without a key (HasKey false) the read starts at the first item
// (forward) or the last one (backward). Keyset reads cost the same at any depth.
type Seek[K int64 | string] struct {
	Key      K
	HasKey   bool
	Backward bool
	Limit    int
}

// APIKey is a stored API key. Only its SHA-256 hash is kept.
type APIKey struct {
	Name      string
	Hash      [sha256.Size]byte
	Scope     string
	CreatedAt time.Time
}

// Scopes an API key can have.
const (
	ScopePartner = "partner" // the public API
	ScopeIngest  = "ingest"  // charge-box status ingestion
)

// HashAPIKey returns the SHA-256 of a key, the only form in which keys are stored.
func HashAPIKey(key string) [sha256.Size]byte { return sha256.Sum256([]byte(key)) }
