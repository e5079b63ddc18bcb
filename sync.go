package chargenet

import (
	"context"
	"slices"
	"time"
)

// Names of the change lists and the event log (cursor lists, see CursorCodec).
const (
	ListEVSEChanges     = "evses.changes"
	ListLocationChanges = "locations.changes"
	ListEvents          = "events"
)

// EventWebhookPing is the type of the event the test operation sends to one webhook. It
// is in the catalogue and the callbacks, but never in the event log and never fanned
// out to subscribers.
const EventWebhookPing = "webhook.ping"

// UnloggedTypes are the event types the event log never lists (stores keep them for
// delivery only): webhook.ping, and the charge boxes' connection events, which tell
// about the connection rather than the network; the EVSE statuses a connection changes
// are logged as evse.status.changed.
var UnloggedTypes = []string{EventWebhookPing, EventChargeboxConnected, EventChargeboxDisconnected}

// Logged reports whether the event log lists events of type typ.
func Logged(typ string) bool { return !slices.Contains(UnloggedTypes, typ) }

// OutcomeExpired records a delivery given up because its event left the retention
// window before it could be delivered (for example while its webhook was disabled).
const OutcomeExpired = "expired"

// ChangeSeek describes one forward read of a change list (EVSEs or locations changed
// since a time, or the event log): at most Limit items whose LastUpdated (an event's
// Time) is at or after Since (zero: every item), ordered by their change position
// (ChangePos, then Key), after (Pos, Key) when HasPos is true.
//
// A change position orders changes as they were committed: a change that commits after
// a read never gets a position at or before the positions that read returned. On SQLite
// (one writer at a time) it is a sequence number taken in the writing transaction; on
// PostgreSQL it is the id of the writing transaction, and a read returns only changes of
// transactions below the oldest one still running, so that none can later commit behind
// it. A reader that resumes after the last position it saw therefore misses nothing.
type ChangeSeek[K int64 | string] struct {
	Since  time.Time
	Pos    uint64
	Key    K
	HasPos bool
	Limit  int
}

// Replay selects the events of the log that ReplayEvents queues again for one webhook:
// those with Since <= Time < Until (Until zero: no upper bound) whose type is in Types
// (empty: every type) and that the webhook subscribes to.
type Replay struct {
	Since, Until time.Time
	Types        []string
}

// Pruned counts what one PruneEvents call removed.
type Pruned struct {
	Events   int // events deleted from the log
	Attempts int // delivery attempts deleted
	Expired  int // pending deliveries given up (recorded as OutcomeExpired)
}

// EventLog keeps every event for the retention window.
type EventLog interface {
	// ListEvents reads one slice of the event log in change order (each event's Pos and
	// Seq set; Key is the Seq), only events of types when types is not empty, and only
	// events whose Actor is actor when actor is not empty. webhook.ping events are never
	// listed.
	ListEvents(ctx context.Context, seek ChangeSeek[int64], types []string, actor string) ([]Event, error)
	// Event returns the logged event with this id. ErrNotFound if there is none (pruned,
	// never produced, or a webhook.ping).
	Event(ctx context.Context, id string) (*Event, error)
	// PruneEvents removes, in one short transaction, at most limit of each: pending
	// deliveries of events older than before (each recorded as an OutcomeExpired attempt),
	// delivery attempts made before before, and events older than before that no
	// delivery still needs. A store may take the events in log order: then an event older
	// than before waits while an event before it in the log is not (times only run
	// backwards between events written at about the same moment). A caller repeats it
	// while it removed something.
	PruneEvents(ctx context.Context, before time.Time, limit int) (Pruned, error)
}
