package chargenet

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"hash"
	"slices"
	"strings"
	"sync"
	"time"
)

// Page sizes of list operations.
const (
	DefaultPageSize = 25
	MaxPageSize     = 100
)

// Names of the paginated lists; a cursor is valid only for the list that issued it.
const (
	ListEVSEs     = "evses"
	ListLocations = "locations"
	ListWebhooks  = "webhooks"
	ListKeys      = "keys"
	// ListChargeboxes is the list of charge boxes registered for OCPP.
	ListChargeboxes = "chargeboxes"
)

// appendOnly are the lists whose items are never removed: no operation deletes an EVSE
// (a removed one stays, REMOVED, as a deleted connector stays, marked). A forward
// cursor's key is then always an item that still precedes the page, and Paginate needs
// no read to know that a previous page exists. A list whose items can be deleted (a
// deleted location leaves the list) must not be here.
var appendOnly = map[string]bool{ListEVSEs: true}

// CursorCodec signs and checks pagination cursors. A cursor is
// base64url(JSON{list, key, direction}) "." base64url(HMAC-SHA256(secret, JSON)), so a
// client can neither forge a position nor reuse a cursor on another list. Replicas that
// share a secret accept each other's cursors.
type CursorCodec struct {
	secret []byte
	macs   sync.Pool // of HMAC-SHA256 keyed with secret: keying one costs two hash blocks
}

// NewCursorCodec returns a codec signing with secret.
func NewCursorCodec(secret []byte) *CursorCodec {
	return &CursorCodec{secret: slices.Clone(secret)}
}

// cursorPayload is the signed content of a cursor. K is null for "from the start". A
// backward cursor with I set also takes its key's own item (the last of the page it
// designates). Cursors of change lists and the event log also carry the change position
// (P, with K its key; both absent for "from the start") and the filter they were issued
// with (F).
type cursorPayload struct {
	List      string          `json:"l"`
	Key       json.RawMessage `json:"k"`
	Backward  bool            `json:"b,omitempty"`
	Inclusive bool            `json:"i,omitempty"`
	Pos       *uint64         `json:"p,omitempty"`
	Filter    *string         `json:"f,omitempty"`
}

var b64 = base64.RawURLEncoding

func (c *CursorCodec) sign(payload []byte) []byte {
	m, ok := c.macs.Get().(hash.Hash)
	if ok {
		m.Reset()
	} else {
		m = hmac.New(sha256.New, c.secret)
	}
	m.Write(payload)
	sum := m.Sum(nil)
	c.macs.Put(m)
	return sum
}

// encode returns the cursor for a position in list. key nil means the start.
func (c *CursorCodec) encode(list string, key any, backward bool) string {
	return c.encodeSeek(list, key, backward, false)
}

// encodeSeek is encode for a cursor that may also take its key's own item (inclusive,
// backward cursors only).
func (c *CursorCodec) encodeSeek(list string, key any, backward, inclusive bool) string {
	raw := json.RawMessage("null")
	if key != nil {
		raw, _ = json.Marshal(key) // int64 and string keys always marshal
	}
	payload, _ := json.Marshal(cursorPayload{List: list, Key: raw, Backward: backward, Inclusive: inclusive && backward})
	return b64.EncodeToString(payload) + "." + b64.EncodeToString(c.sign(payload))
}

// Seal returns payload signed with the codec's secret, in the form of a cursor:
// base64url(payload) "." base64url(HMAC-SHA256). Other opaque positions (the OCPI
// Link's) use it, so that they survive restarts and pass between replicas as cursors do.
func (c *CursorCodec) Seal(payload []byte) string {
	return b64.EncodeToString(payload) + "." + b64.EncodeToString(c.sign(payload))
}

// Open returns the payload of s, made by Seal with the same secret; false when s is
// malformed or was not signed with it.
func (c *CursorCodec) Open(s string) ([]byte, bool) {
	enc, sig, ok := strings.Cut(s, ".")
	if !ok {
		return nil, false
	}
	payload, err1 := b64.DecodeString(enc)
	mac, err2 := b64.DecodeString(sig)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, c.sign(payload)) {
		return nil, false
	}
	return payload, true
}

// badCursor is the invalid_cursor error about the cursor parameter, saying why.
func badCursor(why string) error {
	return Errorf(ErrInvalid, CodeInvalidCursor, "cursor", "query parameter \"cursor\": %s", why)
}

// decode checks a cursor's signature and list and returns its payload. Any failure is an
// ErrInvalid *Error with code invalid_cursor about the cursor parameter.
func (c *CursorCodec) decode(list, cursor string) (*cursorPayload, error) {
	p, err := c.verify(cursor)
	if err != nil {
		return nil, err
	}
	if p.List != list {
		if changeListOf[list] == p.List {
			return nil, badCursor("the cursor was issued by the change list (with updated_since); pass the same updated_since with it")
		}
		return nil, badCursor("the cursor was issued for another list")
	}
	return p, nil
}

// verify checks a cursor's signature and returns its payload, whatever its list.
func (c *CursorCodec) verify(cursor string) (*cursorPayload, error) {
	bad := badCursor
	enc, sig, ok := strings.Cut(cursor, ".")
	if !ok {
		return nil, bad("malformed cursor; pass back a next_cursor or previous_cursor exactly as received")
	}
	payload, err1 := b64.DecodeString(enc)
	mac, err2 := b64.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return nil, bad("malformed cursor; pass back a next_cursor or previous_cursor exactly as received")
	}
	if !hmac.Equal(mac, c.sign(payload)) {
		return nil, bad("the cursor was altered or was not issued by this service")
	}
	var p cursorPayload
	if err := json.Unmarshal(payload, &p); err != nil || len(p.Key) == 0 {
		return nil, bad("malformed cursor")
	}
	return &p, nil
}

// Page is one page of a list.
type Page[T any] struct {
	Items    []T
	Next     string // empty exactly when HasMore is false
	Previous string // empty on the first page
	HasMore  bool
}

// Paginate reads the page of list that cursor (empty for the first page) designates,
// with limit items at most, through read, a keyset reader such as Store.ListLocations.
// key returns an item's sort key. A cursor that fails to decode, or whose key is not
// of type K, is an invalid_cursor ErrInvalid; limit must already be in 1..MaxPageSize.
//
// Walking Next from the first page and then Previous back yields the same pages; items
// inserted or deleted during a walk do not cause others to repeat or be skipped.
func Paginate[T any, K int64 | string](ctx context.Context, codec *CursorCodec, list, cursor string, limit int,
	read func(context.Context, Seek[K]) ([]T, error), key func(*T) K) (*Page[T], error) {
	var seek Seek[K]
	if cursor != "" {
		p, err := codec.decode(list, cursor)
		if err != nil {
			return nil, err
		}
		if string(p.Key) != "null" {
			if err := json.Unmarshal(p.Key, &seek.Key); err != nil {
				return nil, Errorf(ErrInvalid, CodeInvalidCursor, "cursor", "query parameter \"cursor\": malformed cursor")
			}
			seek.HasKey = true
		}
		seek.Backward = p.Backward
		seek.Inclusive = p.Inclusive && p.Backward && seek.HasKey
	}
	seek.Limit = limit + 1
	// A forward page of a list whose items can be deleted is read from the cursor's own
	// item: while that item is there, it precedes the page, and knowing that a previous
	// page exists takes no second read.
	fromKey := seek.HasKey && !seek.Backward && !appendOnly[list]
	if fromKey {
		seek.Inclusive = true
		seek.Limit++
	}
	items, err := read(ctx, seek)
	if err != nil {
		return nil, err
	}
	startsAtKey := fromKey && len(items) > 0 && key(&items[0]) == seek.Key
	if startsAtKey {
		items = items[1:]
	}
	more := len(items) > limit
	if more {
		items = items[:limit]
	}
	page := &Page[T]{Items: items}
	// exists reports whether any item lies beyond from in the given direction (from
	// excluded; a nil from means the whole list).
	exists := func(from *K, backward bool) (bool, error) {
		s := Seek[K]{Backward: backward, Limit: 1}
		if from != nil {
			s.Key, s.HasKey = *from, true
		}
		found, err := read(ctx, s)
		return len(found) > 0, err
	}
	if !seek.Backward {
		if more {
			page.HasMore = true
			page.Next = codec.encode(list, key(&items[len(items)-1]), false)
		}
		switch {
		case seek.HasKey && len(items) > 0 && (appendOnly[list] || startsAtKey):
			// The cursor's key is an item of this list, before this page, and it is
			// still there: no need to look.
			page.Previous = codec.encode(list, key(&items[0]), true)
		case startsAtKey:
			// An empty page after the cursor's own item (every item after it was
			// deleted): the previous page ends with that item.
			page.Previous = codec.encodeSeek(list, seek.Key, true, true)
		case seek.HasKey: // reached through a cursor: there may be items before
			boundary := seek.Key
			if len(items) > 0 {
				boundary = key(&items[0])
			}
			ok, err := exists(&boundary, true)
			if err != nil {
				return nil, err
			}
			if ok {
				page.Previous = codec.encode(list, boundary, true)
			}
		}
		return page, nil
	}
	slices.Reverse(items)
	if more {
		page.Previous = codec.encode(list, key(&items[0]), true)
	}
	// Items after this page: after its last item, or at/after the cursor's key if empty.
	var after *K
	var nextKey any
	if len(items) > 0 {
		k := key(&items[len(items)-1])
		after, nextKey = &k, k
	}
	ok, err := exists(after, false)
	if err != nil {
		return nil, err
	}
	if ok {
		page.HasMore = true
		page.Next = codec.encode(list, nextKey, false)
	}
	return page, nil
}

// changeListOf maps each plain list to its change list, for the messages that tell a
// caller which list a cursor belongs to.
var changeListOf = map[string]string{ListEVSEs: ListEVSEChanges, ListLocations: ListLocationChanges}

// ChangePage is one page of a change list or of the event log. They are read forward
// only: there is no previous page.
type ChangePage[T any] struct {
	Items   []T
	Next    string // empty exactly when HasMore is false
	HasMore bool
	// Resume is the cursor of the position after the last item, or, on an empty page,
	// of the position the request started from. Set on every page: a reader keeps the
	// last one and reads on from it later, missing no change committed meanwhile.
	Resume string
}

// ChangeFilter is the filter a change list cursor is bound to: its updated_since, in
// UTC to the nanosecond.
func ChangeFilter(since time.Time) string { return since.UTC().Format(time.RFC3339Nano) }

// EventFilter is the filter an event log cursor is bound to: its types (in any order,
// repeats ignored), since (zero: none) and actor (empty: none). Without an actor it is
// what it was before the actor filter existed, so that earlier cursors stay valid.
func EventFilter(types []string, since time.Time, actor string) string {
	t := slices.Clone(types)
	slices.Sort(t)
	t = slices.Compact(t)
	s := ""
	if !since.IsZero() {
		s = ChangeFilter(since)
	}
	f := strings.Join(t, ",") + "|" + s
	if actor != "" {
		f += "|" + actor
	}
	return f
}

// PaginateChanges reads the page of a change list or of the event log (list: one of
// ListEVSEChanges, ListLocationChanges, ListEvents) that cursor (empty for the first
// page) designates, with limit items at most (already in 1..MaxPageSize), through read,
// a change-ordered reader such as Store.ListEVSEChanges. filter is what the request
// filters on (ChangeFilter, EventFilter) and since its lower bound on the items' time;
// pos returns an item's change position and key.
//
// A cursor that fails to decode, was issued by another list, or with another filter, is
// an invalid_cursor ErrInvalid.
func PaginateChanges[T any, K int64 | string](ctx context.Context, codec *CursorCodec, list, filter, cursor string,
	since time.Time, limit int, read func(context.Context, ChangeSeek[K]) ([]T, error), pos func(*T) (uint64, K)) (*ChangePage[T], error) {
	seek := ChangeSeek[K]{Since: since}
	if cursor != "" {
		p, err := codec.verify(cursor)
		if err != nil {
			return nil, err
		}
		switch {
		case p.List != list:
			for plain, changes := range changeListOf {
				if p.List == plain && changes == list {
					return nil, badCursor("the cursor was issued by the list without updated_since; a change list takes only its own cursors")
				}
			}
			return nil, badCursor("the cursor was issued for another list")
		case p.Filter == nil || p.Backward:
			return nil, badCursor("malformed cursor")
		case *p.Filter != filter:
			return nil, badCursor("the cursor was issued with other filters; pass the same filters (" + filterNames[list] + ") as the request that returned it")
		}
		if p.Pos != nil {
			if err := json.Unmarshal(p.Key, &seek.Key); err != nil {
				return nil, badCursor("malformed cursor")
			}
			seek.Pos, seek.HasPos = *p.Pos, true
		}
	}
	seek.Limit = limit + 1
	items, err := read(ctx, seek)
	if err != nil {
		return nil, err
	}
	page := &ChangePage[T]{Items: items}
	if len(items) > limit {
		page.Items, page.HasMore = items[:limit], true
	}
	if n := len(page.Items); n > 0 {
		seek.Pos, seek.Key = pos(&page.Items[n-1])
		seek.HasPos = true
	}
	page.Resume = codec.encodeChange(list, filter, seek.Pos, seek.Key, seek.HasPos)
	if page.HasMore {
		page.Next = page.Resume
	}
	return page, nil
}

// filterNames names the query parameters each change-ordered list's cursors are bound to.
var filterNames = map[string]string{
	ListEVSEChanges:     "updated_since",
	ListLocationChanges: "updated_since",
	ListEvents:          "type and since",
}

// encodeChange returns the cursor of a change-ordered list at (pos, key), or at the
// start when hasPos is false, bound to filter.
func (c *CursorCodec) encodeChange(list, filter string, pos uint64, key any, hasPos bool) string {
	p := cursorPayload{List: list, Key: json.RawMessage("null"), Filter: &filter}
	if hasPos {
		p.Key, _ = json.Marshal(key) // int64 and string keys always marshal
		p.Pos = &pos
	}
	payload, _ := json.Marshal(p)
	return b64.EncodeToString(payload) + "." + b64.EncodeToString(c.sign(payload))
}
