package chargenet

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"maps"
	"regexp"
	"slices"
	"time"
)

// Chargebox is a charge box registered to connect over OCPP (package ocpp): its
// identity, the state of its connection as recorded, what it told at its last boot,
// its EVSEs and the availability the operator asked of them.
type Chargebox struct {
	ID       int64
	Identity string
	// PasswordHash is the SHA-256 of its password (HashChargeboxPassword).
	PasswordHash [sha256.Size]byte
	CreatedAt    time.Time
	// Session identifies its recorded connection; empty when none is recorded. A
	// connection whose end was not recorded (the server holding it crashed) stays until
	// ExpireConnections ends it.
	Session     string
	Protocol    string // the subprotocol of the recorded connection
	ConnectedAt *time.Time
	LastSeenAt  *time.Time // when something last came from it, as last recorded
	Boot        *BootInfo  // nil before its first BootNotification
	// EVSEUIDs are the uids of its EVSEs, ascending (REMOVED ones included).
	EVSEUIDs []int64
	// Availability holds, for each of its EVSEs that was asked, the last request.
	Availability []AvailabilityRequest
}

// Connected reports whether a connection of the box is recorded.
func (c *Chargebox) Connected() bool { return c.Session != "" }

// BootInfo is what a charge box's BootNotification said about it.
type BootInfo struct {
	Vendor, Model, SerialNumber, FirmwareVersion string
	At                                           time.Time
}

// The OCPP subprotocols a charge box speaks.
const (
	ProtocolOCPP16  = "ocpp1.6"
	ProtocolOCPP201 = "ocpp2.0.1"
)

// Availability states (OCPP's Operative and Inoperative) and the answers to a request.
const (
	Operative        = "Operative"
	Inoperative      = "Inoperative"
	AnswerPending    = "pending" // not delivered or not answered yet
	AnswerAccepted   = "Accepted"
	AnswerRejected   = "Rejected"
	AnswerScheduled  = "Scheduled"
	maxIdentityChars = 48
)

// AvailabilityRequest is the last availability the operator asked of an EVSE through
// its charge box (ChangeAvailability), and the box's answer.
type AvailabilityRequest struct {
	EVSEUID     int64
	ChargeboxID int64
	State       string // Operative or Inoperative
	RequestedAt time.Time
	Answer      string // AnswerPending until the box answers
	AnsweredAt  *time.Time
}

// PendingRequests returns the requests of asked the box has not answered yet
// (AnswerPending), in their order; empty, not nil, when there is none.
func PendingRequests(asked []AvailabilityRequest) []AvailabilityRequest {
	out := []AvailabilityRequest{}
	for _, a := range asked {
		if a.Answer == AnswerPending {
			out = append(out, a)
		}
	}
	return out
}

// ChargeboxService is the persistence of charge boxes that connect over OCPP. Both
// stores implement it. Unlike the network's write methods, its methods take no actor:
// every event they record (a connection, its end, EVSEs turning UNKNOWN) is the box's,
// with ChargeboxActor of its identity, whoever ended the connection. Errors are domain
// errors (*Error) for what a caller caused, ErrUnavailable when the database cannot be
// reached, other errors otherwise.
type ChargeboxService interface {
	// RegisterChargebox registers box id with identity and the hash of its password,
	// or replaces both for a box already registered (then created is false; the caller
	// ends its live connection). A box may be registered before it has EVSEs.
	// ErrConflict (param identity) when another registered box has the identity.
	RegisterChargebox(ctx context.Context, id int64, identity string, hash [sha256.Size]byte, now time.Time) (created bool, err error)
	// RevokeChargebox ends the registration of box id. ErrNotFound when it has none.
	RevokeChargebox(ctx context.Context, id int64, now time.Time) error
	// ChargeboxByIdentity returns the registered box with this identity, without its
	// EVSEs and availability. ErrNotFound when there is none.
	ChargeboxByIdentity(ctx context.Context, identity string) (*Chargebox, error)
	// Chargebox returns registered box id with its EVSE uids and availability requests.
	// ErrNotFound when it is not registered.
	Chargebox(ctx context.Context, id int64) (*Chargebox, error)
	// ListChargeboxes reads one keyset slice of the registered boxes ordered by id (see
	// Seek), each as Chargebox returns it.
	ListChargeboxes(ctx context.Context, seek Seek[int64]) ([]Chargebox, error)
	// RecordConnections applies changes in order, in one transaction (see
	// ConnectionChange). A change naming a session that is no longer the box's
	// recorded one (a newer connection took over) or a box that is not registered
	// changes nothing.
	RecordConnections(ctx context.Context, changes []ConnectionChange) error
	// ExpireConnections ends, as ConnectionChange with Kind Disconnected and reason
	// ReasonOffline would, the recorded connections last seen before seenBefore, at most
	// limit of them, and returns their boxes: their server stopped without recording
	// their end.
	ExpireConnections(ctx context.Context, seenBefore, now time.Time, limit int) ([]int64, error)
	// OweAvailability records what box id owes (OwedAvailability) as pending requests,
	// and returns every pending request of its EVSEs, ascending uid. ErrNotFound when it
	// is not registered.
	OweAvailability(ctx context.Context, id int64, now time.Time) ([]AvailabilityRequest, error)
	// PendingAvailability returns every pending request of every registered box, by box
	// and uid.
	PendingAvailability(ctx context.Context) ([]AvailabilityRequest, error)
	// AnswerAvailability records the box's answer to the request of EVSE uid made at
	// requestedAt; a newer request, or none, is left as it is.
	AnswerAvailability(ctx context.Context, uid int64, requestedAt time.Time, answer string, now time.Time) error
	// ChargeboxEpoch returns a number that changes whenever a registration is created,
	// replaced or revoked, so that servers notice what the command line did.
	ChargeboxEpoch(ctx context.Context) (int64, error)
}

// ChargeboxSignals is the source of a store's charge box signals (Hooks, given to the
// store when it was opened): f is called with a box's id whenever another server
// registered, revoked or connected it, or recorded availability it owes, so that the
// server holding its connection acts at once (Hooks.OnChargeboxSignal).
type ChargeboxSignals interface {
	OnChargeboxSignal(f func(id int64))
}

// ConnectionKind is what a ConnectionChange records.
type ConnectionKind int

// Kinds of connection change.
const (
	// Connected records Session as the box's connection, over Protocol, at At, with a
	// chargebox.connected event.
	Connected ConnectionKind = iota + 1
	// Seen records that something came from the box at At.
	Seen
	// Booted records Boot as the box's boot information.
	Booted
	// Disconnected ends the recorded connection at At with a chargebox.disconnected
	// event naming Reason, and turns the box's EVSEs in service UNKNOWN (Disconnect).
	Disconnected
)

// Reasons a connection ended, as a chargebox.disconnected event names them.
const (
	ReasonClosed  = "closed"  // the box or the network closed it
	ReasonOffline = "offline" // nothing came from the box for the offline timeout, or its server stopped
	ReasonRevoked = "revoked" // its registration was revoked or its password replaced
)

// ConnectionChange is one change of a box's recorded connection.
type ConnectionChange struct {
	Kind      ConnectionKind
	Chargebox int64
	Session   string
	Protocol  string    // Connected
	Reason    string    // Disconnected
	Boot      *BootInfo // Booted
	At        time.Time
}

// ChangedLocations returns the locations of changed (EVSEs whose version a change
// moved), each with the newest LastUpdated of its EVSEs, in ascending id order: what
// the change touches (Location.Touch), once each. EVSEs at no location are skipped.
func ChangedLocations(changed []*EVSE) (ids []string, newest map[string]time.Time) {
	newest = map[string]time.Time{}
	for _, e := range changed {
		if e.LocationID == "" {
			continue
		}
		if t, ok := newest[e.LocationID]; !ok || e.LastUpdated.After(t) {
			newest[e.LocationID] = e.LastUpdated
		}
	}
	ids = slices.Sorted(maps.Keys(newest))
	return ids, newest
}

// ChargeboxActor returns the actor (Event.Actor) of what charge box identity does over
// OCPP: its status notifications, its connections and their end, and its EVSEs
// turning UNKNOWN when a connection ends. It cannot be the name of an API key, which
// has no ':' (CheckKeyName).
func ChargeboxActor(identity string) string { return "chargebox:" + identity }

// identityRe is the form of a charge box identity: the unreserved characters of a URL
// (RFC 3986) and '*', 1 to 48 of them (OCPP 2.0.1's bound), so that it appears in the
// URL as it is and can be the user name of Basic auth.
var identityRe = regexp.MustCompile(`^[A-Za-z0-9._~*-]{1,48}$`)

// ValidIdentity reports whether s can be a charge box identity.
func ValidIdentity(s string) bool { return identityRe.MatchString(s) }

// CheckIdentity returns an ErrInvalid *Error (param identity) when s cannot be an
// identity.
func CheckIdentity(s string) error {
	if !ValidIdentity(s) {
		return Errorf(ErrInvalid, CodeInvalidParameter, "identity",
			"identity %q must be 1 to %d letters, digits or the characters . _ ~ * -", s, maxIdentityChars)
	}
	return nil
}

// Bounds of a charge box password: OCPP 2.0.1's BasicAuthPassword is 16 to 40
// characters.
const (
	MinChargeboxPassword = 16
	MaxChargeboxPassword = 40
)

// passwordAlphabet makes passwords any charge box can store and send: 32 characters of
// 62 carry 190 bits.
const passwordAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// NewChargeboxPassword returns a new random password of 32 letters and digits.
func NewChargeboxPassword() string {
	b := make([]byte, 32)
	for i := range b {
		var r [1]byte
		for {
			_, _ = rand.Read(r[:])
			if int(r[0]) < 256-256%len(passwordAlphabet) { // no modulo bias
				break
			}
		}
		b[i] = passwordAlphabet[int(r[0])%len(passwordAlphabet)]
	}
	return string(b)
}

// HashChargeboxPassword returns the SHA-256 of a password, the only form in which
// passwords are stored. A plain hash is enough for passwords with the entropy of
// NewChargeboxPassword, and lets thousands of boxes connect per second.
func HashChargeboxPassword(password string) [sha256.Size]byte {
	return sha256.Sum256([]byte(password))
}

// CheckPassword reports, in constant time, whether password hashes to c's hash.
func (c *Chargebox) CheckPassword(password string) bool {
	h := HashChargeboxPassword(password)
	return subtle.ConstantTimeCompare(h[:], c.PasswordHash[:]) == 1
}

// StationConnector maps OCPP 2.0.1 numbering onto the box-wide connector number of
// StatusNotification.ConnectorID: the station's EVSE k (k ≥ 1) is the k-th of evses
// (the box's EVSEs in ascending UID), and its connector j (j ≥ 1) the j-th connector of
// that EVSE in ascending ID, deleted ones included, as 1.6 counts them. EVSE 0 is the
// station as a whole (connector number 0).
//
// Errors: ErrInvalid for a negative number or connector 0 of an EVSE; ErrNotFound when
// the box has no EVSE k or EVSE k has no connector j.
func StationConnector(evses []EVSE, chargebox int64, evse, connector int) (int, error) {
	switch {
	case evse < 0 || connector < 0:
		return 0, Errorf(ErrInvalid, CodeInvalidBody, "evseId", "evseId %d and connectorId %d must not be negative", evse, connector)
	case evse == 0:
		return 0, nil
	case connector == 0:
		return 0, Errorf(ErrInvalid, CodeInvalidBody, "connectorId", "connectorId must be 1 or more for evseId %d", evse)
	case evse > len(evses):
		return 0, Errorf(ErrNotFound, CodeNotFound, "evseId", "evseId %d does not exist: charge box %d has %d EVSEs", evse, chargebox, len(evses))
	}
	n := 0
	for i := range evse - 1 {
		n += len(evses[i].Connectors)
	}
	e := &evses[evse-1]
	if connector > len(e.Connectors) {
		return 0, Errorf(ErrNotFound, CodeNotFound, "connectorId", "connectorId %d of evseId %d does not exist: EVSE %d of charge box %d has %d connectors",
			connector, evse, e.UID, chargebox, len(e.Connectors))
	}
	return n + connector, nil
}

// AvailabilityTargets returns how a charge box addresses EVSE uid, one of evses (the
// box's EVSEs in ascending UID): its number on the station (OCPP 2.0.1), and the
// box-wide numbers of its connectors not deleted (OCPP 1.6). ok is false when uid is
// not one of evses.
func AvailabilityTargets(evses []EVSE, uid int64) (station int, connectors []int, ok bool) {
	n := 0
	for i := range evses {
		for j := range evses[i].Connectors {
			n++
			if evses[i].UID == uid && evses[i].Connectors[j].DeletedAt == nil {
				connectors = append(connectors, n)
			}
		}
		if evses[i].UID == uid {
			return i + 1, connectors, true
		}
	}
	return 0, nil, false
}

// wantedAvailability returns the availability the operator's status of e asks of its
// charge box: Inoperative while the operator holds it INOPERATIVE, Operative while it is
// in service (not PLANNED or REMOVED), and "" otherwise.
func wantedAvailability(e *EVSE) string {
	switch {
	case e.Status == StatusInoperative && e.OperatorHold:
		return Inoperative
	case e.Status == StatusPlanned || e.Status == StatusRemoved:
		return ""
	}
	return Operative
}

// OwedAvailability returns the requests a charge box owes its EVSEs, given evses (its
// EVSEs) and last (the last request of each EVSE asked before, by UID): Inoperative for
// an EVSE the operator set INOPERATIVE that was not asked so last; Operative for one
// back in service whose last request was Inoperative. An EVSE never asked and in
// service owes nothing: charge boxes start operative.
func OwedAvailability(evses []EVSE, last map[int64]AvailabilityRequest, now time.Time) []AvailabilityRequest {
	var out []AvailabilityRequest
	for i := range evses {
		e := &evses[i]
		want := wantedAvailability(e)
		prev, asked := last[e.UID]
		if want == "" || (asked && prev.State == want) || (!asked && want == Operative) {
			continue
		}
		out = append(out, AvailabilityRequest{EVSEUID: e.UID, ChargeboxID: e.ChargeboxID, State: want,
			RequestedAt: now.UTC(), Answer: AnswerPending})
	}
	return out
}

// Disconnect turns the EVSEs in service of a charge box whose connection ended
// UNKNOWN, in place, and returns those it changed (Version + 1, LastUpdated
// NextUpdate) with their evse.status.changed events (source connection, actor the
// box's: ChargeboxActor). EVSEs whose status the operator holds (Held) and EVSEs
// already UNKNOWN are left as they are. The status time stays: the box's next
// notification after it reconnects restores its status.
func Disconnect(evses []EVSE, actor string, now time.Time) ([]*EVSE, []Event) {
	var changed []*EVSE
	var events []Event
	for i := range evses {
		e := &evses[i]
		if _, held := e.Held(); held || e.Status == StatusUnknown {
			continue
		}
		previous := e.Status
		e.Status = StatusUnknown
		e.touch(now)
		changed, events = append(changed, e), append(events, NewConnectionStatusChangedEvent(e, previous, actor, now))
	}
	return changed, events
}
