package chargenet

import (
	"fmt"
	"time"
)

// Inventory is a set of locations and EVSEs loaded together, by `chargenet import` or as
// the demo data.
type Inventory struct {
	Locations []Location
	EVSEs     []EVSE
}

// Validate checks every record and the identifiers between them: unique location ids,
// unique EVSE uids and evseIds. (Whether an EVSE's location exists, in the file or
// already in the database, is checked by the Store on import.) The error is an
// ErrInvalid *Error whose Param names the first bad record by list, index and field, as
// in "evses[3].connectors[0].standard".
func (inv *Inventory) Validate() error {
	locs := make(map[string]bool, len(inv.Locations))
	for i := range inv.Locations {
		l := &inv.Locations[i]
		if err := l.Validate(); err != nil {
			return prefixParam(err, fmt.Sprintf("locations[%d].", i))
		}
		if locs[l.ID] {
			return Errorf(ErrInvalid, CodeInvalidBody, fmt.Sprintf("locations[%d].id", i), "locations[%d].id: location id %q appears twice", i, l.ID)
		}
		locs[l.ID] = true
	}
	uids := make(map[int64]bool, len(inv.EVSEs))
	evseIDs := make(map[string]bool, len(inv.EVSEs))
	for i := range inv.EVSEs {
		e := &inv.EVSEs[i]
		if err := e.Validate(); err != nil {
			return prefixParam(err, fmt.Sprintf("evses[%d].", i))
		}
		switch {
		case uids[e.UID]:
			return Errorf(ErrInvalid, CodeInvalidBody, fmt.Sprintf("evses[%d].uid", i), "evses[%d].uid: uid %d appears twice", i, e.UID)
		case evseIDs[e.EvseID]:
			return Errorf(ErrInvalid, CodeInvalidBody, fmt.Sprintf("evses[%d].evseId", i), "evses[%d].evseId: evseId %q appears twice", i, e.EvseID)
		case e.LocationID != "" && !ValidLocationID(e.LocationID):
			return Errorf(ErrInvalid, CodeInvalidBody, fmt.Sprintf("evses[%d].locationId", i), "evses[%d].locationId: %q is not a location id", i, e.LocationID)
		}
		uids[e.UID], evseIDs[e.EvseID] = true, true
	}
	return nil
}

// NewestEVSEUpdates returns, for each location the EVSEs of inv are at, the newest of
// their LastUpdated, to the microsecond. An import keeps a location's LastUpdated the
// newest of itself and its parts with it: a location of the inventory gets no earlier
// one, and an existing location that gains EVSEs is touched with it (Location.Touch).
func (inv *Inventory) NewestEVSEUpdates() map[string]time.Time {
	out := map[string]time.Time{}
	for i := range inv.EVSEs {
		e := &inv.EVSEs[i]
		if e.LocationID == "" {
			continue
		}
		t := Stamp(e.LastUpdated)
		if old, ok := out[e.LocationID]; !ok || t.After(old) {
			out[e.LocationID] = t
		}
	}
	return out
}
