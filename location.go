package chargenet

import (
	"context"
	"regexp"
	"sync"
	"sync/atomic"
	"time"
)

// Location is a site that holds EVSEs, modelled on the OCPI 2.2.1 Location.
type Location struct {
	ID         string
	Name       string
	Address    string
	City       string
	PostalCode string // empty where the country has none
	Country    string // ISO 3166-1 alpha-3
	Latitude   float64
	Longitude  float64
	TimeZone   string // IANA name
	EvseUIDs   []int64
	// LastUpdated is when the location, its list of EVSEs or one of its EVSEs last
	// changed: never earlier than any of its EVSEs' LastUpdated. Version counts those
	// changes; LastUpdated grows with every Version (see NextUpdate).
	LastUpdated time.Time
	Version     int64
	DeletedAt   *time.Time // nil while the location exists
	// ChangePos is the position of the location's last change in the change order (see
	// ChangeSeek); only ListLocationChanges sets it.
	ChangePos uint64
	// IfVersion, when not 0, is the precondition of a write (the version of a PUT body):
	// PutLocation writes only if the location exists at this Version (CheckVersion).
	// Never set on a location read.
	IfVersion int64
}

// CheckVersion checks l's precondition against the stored location current (nil when
// there is none): with l.IfVersion set, current must exist at that Version.
// ErrPreconditionFailed (param version) otherwise.
func (l *Location) CheckVersion(current *Location) error {
	switch {
	case l.IfVersion == 0:
		return nil
	case current == nil:
		return Errorf(ErrPreconditionFailed, CodePreconditionFailed, "version",
			"version %d: location %s does not exist", l.IfVersion, l.ID)
	case current.Version != l.IfVersion:
		return Errorf(ErrPreconditionFailed, CodePreconditionFailed, "version",
			"version %d is not the current version %d of location %s", l.IfVersion, current.Version, l.ID)
	}
	return nil
}

// Touch records a change of l made at now: of its own fields, of its list of EVSEs, or
// of one of its EVSEs (now is then the newest LastUpdated of the EVSEs that changed).
// l gets Version + 1 and LastUpdated NextUpdate, so that it stays the newest time of
// itself and its parts, and grows with every version whatever the clock says.
func (l *Location) Touch(now time.Time) {
	l.Version++
	l.LastUpdated = NextUpdate(l.LastUpdated, now)
}

var (
	locationIDRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,36}$`)
	countryRe    = regexp.MustCompile(`^[A-Z]{3}$`)
)

// ValidLocationID reports whether id has the contract's LocationId format.
func ValidLocationID(id string) bool { return locationIDRe.MatchString(id) }

// Validate checks the location's fields. It returns an ErrInvalid *Error naming the first
// offending field. EvseUIDs is derived from the EVSEs and is not checked here.
func (l *Location) Validate() error {
	switch {
	case !ValidLocationID(l.ID):
		return Errorf(ErrInvalid, CodeInvalidBody, "id", "id %q must be 1 to 36 letters, digits, '-' or '_'", l.ID)
	case l.Name == "" || len(l.Name) > 255:
		return Errorf(ErrInvalid, CodeInvalidBody, "name", "name must be 1 to 255 characters")
	case l.Address == "" || len(l.Address) > 45:
		return Errorf(ErrInvalid, CodeInvalidBody, "address", "address must be 1 to 45 characters")
	case l.City == "" || len(l.City) > 45:
		return Errorf(ErrInvalid, CodeInvalidBody, "city", "city must be 1 to 45 characters")
	case len(l.PostalCode) > 10:
		return Errorf(ErrInvalid, CodeInvalidBody, "postalCode", "postalCode must be at most 10 characters")
	case !countryRe.MatchString(l.Country):
		return Errorf(ErrInvalid, CodeInvalidBody, "country", "country %q must be an ISO 3166-1 alpha-3 code", l.Country)
	case !(l.Latitude >= -90 && l.Latitude <= 90):
		return Errorf(ErrInvalid, CodeInvalidBody, "coordinates.latitude", "latitude %v must be between -90 and 90", l.Latitude)
	case !(l.Longitude >= -180 && l.Longitude <= 180):
		return Errorf(ErrInvalid, CodeInvalidBody, "coordinates.longitude", "longitude %v must be between -180 and 180", l.Longitude)
	case l.TimeZone == "" || len(l.TimeZone) > 255:
		return Errorf(ErrInvalid, CodeInvalidBody, "timeZone", "timeZone must be 1 to 255 characters")
	}
	if !validTimeZone(l.TimeZone) {
		return Errorf(ErrInvalid, CodeInvalidBody, "timeZone", "timeZone %q is not an IANA time zone", l.TimeZone)
	}
	return nil
}

// timeZones caches the outcome of time.LoadLocation per name: loading reads and parses
// the zone database each time, which dominates a large import. The set of names is
// bounded by the IANA database plus the invalid names seen, each at most 255 bytes.
var timeZones sync.Map // string -> bool

func validTimeZone(name string) bool {
	if ok, cached := timeZones.Load(name); cached {
		return ok.(bool)
	}
	_, err := time.LoadLocation(name)
	if err == nil || timeZonesSize.Add(1) <= maxCachedInvalidZones {
		timeZones.Store(name, err == nil)
	}
	return err == nil
}

// maxCachedInvalidZones bounds how many names the cache holds, so that a stream of
// distinct invalid names cannot grow it without limit.
const maxCachedInvalidZones = 10000

var timeZonesSize atomic.Int64

// Site is a location with its EVSEs (ascending uid) and their connectors, read in one
// snapshot: what an OCPI Location shows.
type Site struct {
	Location Location
	EVSEs    []EVSE
}

// UpdateKey is a position in the locations ordered by LastUpdated, then ID.
type UpdateKey struct {
	LastUpdated time.Time
	ID          string
}

// UpdateSeek describes one read of the locations, deleted ones included, ordered by
// LastUpdated, then ID (bytewise): those whose LastUpdated is at or after From (when
// not zero) and before To (when not zero), after the position After when HasAfter,
// else after skipping Offset of them; at most Limit. A read after a position costs the
// same at any depth; Offset costs what it skips.
type UpdateSeek struct {
	From, To time.Time
	After    UpdateKey
	HasAfter bool
	Offset   int
	Limit    int
}

// SiteVersion names one state of a site: its location's id, version and LastUpdated.
// Every change of the location, of its list of EVSEs or of one of its EVSEs or their
// connectors gives the location a new version, so what is made of a site can be kept
// under its version.
type SiteVersion struct {
	ID          string
	Version     int64
	LastUpdated time.Time
}

// SiteReader reads the locations with their EVSEs, as the OCPI Locations module
// serves them.
type SiteReader interface {
	// Site returns the location with this id, deleted or not, with its EVSEs and their
	// connectors (deleted ones included). ErrNotFound if there is none.
	Site(ctx context.Context, id string) (*Site, error)
	// ListSites reads the locations seek selects, each with its EVSEs and their
	// connectors, in one snapshot. The result is empty, not nil, past the end.
	ListSites(ctx context.Context, seek UpdateSeek) ([]Site, error)
	// ListSiteVersions reads the versions of the locations ListSites would read for
	// seek, in the same order, without their EVSEs: a page's sites can then be taken
	// from what was kept of them. Empty, not nil, past the end.
	ListSiteVersions(ctx context.Context, seek UpdateSeek) ([]SiteVersion, error)
	// CountSites counts the locations, deleted ones included, whose LastUpdated is at
	// or after from and before to (each bound unless zero).
	CountSites(ctx context.Context, from, to time.Time) (int, error)
}

// ReadMemo keeps the answer of a read for as long as nothing changed the locations or
// the EVSEs: Memo returns the value read kept under key, or calls read and keeps what
// it returns (size is its cost in bytes against the store's read cache bound). A store
// without such a cache (PostgreSQL, an in-memory SQLite database) calls read every
// time. Errors are read's; nothing is kept then.
type ReadMemo interface {
	Memo(ctx context.Context, key string, read func(ctx context.Context) (value any, size int, err error)) (any, error)
}
