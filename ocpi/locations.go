package ocpi

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"time"

	"github.com/chargenet/chargenet"
	ocpigen "github.com/chargenet/chargenet/gen/ocpi"
)

// ListQuery is a request of the Locations list, its parameters as the client sent them
// (nil when absent).
type ListQuery struct {
	DateFrom, DateTo *string
	Offset, Limit    *int
	Position         *string
}

// LocationPage is one page of the Locations list.
type LocationPage struct {
	// Data is the page's Locations, a JSON array.
	Data []byte
	// Total is the number of Locations matching the filters (X-Total-Count); Limit is
	// the most chargenet returns on one page (X-Limit).
	Total, Limit int
	// Next is the URL of the next page (the Link), "" on the last.
	Next string
}

// position is the content of the opaque position written into a Link: the filters and
// the offset of the page it leads to, and the last Location before it.
type position struct {
	From   string `json:"f,omitempty"`
	To     string `json:"t,omitempty"`
	Offset int    `json:"o"`
	Nanos  int64  `json:"n"`
	ID     string `json:"i"`
}

// pageData is a page as read and encoded, with the URL of the next page ("" on the
// last), kept by the store's memo.
type pageData struct {
	data []byte
	next string
}

// Locations answers a page of the Locations list: the Locations whose last_updated is
// in [date_from, date_to), oldest first (then by id), from offset or, when the request
// carries a position chargenet wrote for these filters and this offset, from that
// position, which costs the same at any depth. Errors: 2001 for a malformed parameter
// or a position chargenet did not issue; the store's errors otherwise.
func (s *Service) Locations(ctx context.Context, q ListQuery) (*LocationPage, error) {
	var from, to time.Time
	var rawFrom, rawTo string
	var ok bool
	if q.DateFrom != nil {
		rawFrom = *q.DateFrom
		if from, ok = ParseDateTime(rawFrom); !ok {
			return nil, InvalidParameter("query parameter date_from: %q is not an OCPI DateTime", rawFrom)
		}
	}
	if q.DateTo != nil {
		rawTo = *q.DateTo
		if to, ok = ParseDateTime(rawTo); !ok {
			return nil, InvalidParameter("query parameter date_to: %q is not an OCPI DateTime", rawTo)
		}
	}
	offset, limit := 0, MaxLimit
	if q.Offset != nil {
		if offset = *q.Offset; offset < 0 {
			return nil, InvalidParameter("query parameter offset: %d is negative", offset)
		}
	}
	if q.Limit != nil {
		if *q.Limit < 1 {
			return nil, InvalidParameter("query parameter limit: %d is below 1", *q.Limit)
		}
		limit = min(*q.Limit, MaxLimit)
	}
	seek := chargenet.UpdateSeek{From: from, To: to, Offset: offset, Limit: limit + 1}
	if q.Position != nil {
		raw, ok := s.cfg.Cursors.Open(*q.Position)
		var p position
		if !ok || json.Unmarshal(raw, &p) != nil {
			return nil, InvalidParameter("query parameter position: not a position chargenet wrote; follow the Link header as it is")
		}
		// A position belongs to the filters and the offset it was written with; a client
		// that changed them gets what its own parameters say.
		if p.From == rawFrom && p.To == rawTo && p.Offset == offset {
			seek.HasAfter, seek.After = true, chargenet.UpdateKey{LastUpdated: time.Unix(0, p.Nanos).UTC(), ID: p.ID}
		}
	}
	key := "ocpi/page|" + rawFrom + "|" + rawTo + "|" + strconv.Itoa(offset) + "|" + strconv.Itoa(limit)
	if seek.HasAfter {
		key += "|" + strconv.FormatInt(seek.After.LastUpdated.UnixNano(), 10) + "|" + seek.After.ID
	}
	v, err := s.cfg.Store.Memo(ctx, key, func(ctx context.Context) (any, int, error) {
		items, last, more, err := s.page(ctx, seek)
		if err != nil {
			return nil, 0, err
		}
		p := &pageData{data: joinArray(items)}
		if more {
			next := position{From: rawFrom, To: rawTo, Offset: offset + len(items), Nanos: last.LastUpdated.UnixNano(), ID: last.ID}
			if p.next, err = s.nextURL(next, limit); err != nil {
				return nil, 0, err
			}
		}
		return p, len(p.data) + len(p.next), nil
	})
	if err != nil {
		return nil, err
	}
	page := v.(*pageData)
	total, err := s.cfg.Store.Memo(ctx, "ocpi/count|"+rawFrom+"|"+rawTo, func(ctx context.Context) (any, int, error) {
		n, err := s.cfg.Store.CountSites(ctx, from, to)
		return n, 8, err
	})
	if err != nil {
		return nil, err
	}
	return &LocationPage{Data: page.data, Total: total.(int), Limit: MaxLimit, Next: page.next}, nil
}

// nextURL returns the URL of the page that starts at next: its filters, offset and
// limit, and the position sealed so that chargenet can trust it when it comes back.
func (s *Service) nextURL(next position, limit int) (string, error) {
	raw, err := json.Marshal(next)
	if err != nil {
		return "", err
	}
	v := url.Values{}
	if next.From != "" {
		v.Set("date_from", next.From)
	}
	if next.To != "" {
		v.Set("date_to", next.To)
	}
	v.Set("offset", strconv.Itoa(next.Offset))
	v.Set("limit", strconv.Itoa(limit))
	v.Set("position", s.cfg.Cursors.Seal(raw))
	return s.detailsURL() + "/locations?" + v.Encode(), nil
}

// page returns the encoded Locations of the page seek selects (seek.Limit is one more
// than the page holds, to tell whether more follow), the key of the last one and whether
// more follow. It reads the versions of the page and encodes only the sites whose
// version it does not keep (siteCache), each read alone; when many are missing, or one
// changed between the two reads, it reads the whole page in one snapshot instead.
func (s *Service) page(ctx context.Context, seek chargenet.UpdateSeek) ([][]byte, chargenet.UpdateKey, bool, error) {
	versions, err := s.cfg.Store.ListSiteVersions(ctx, seek)
	if err != nil {
		return nil, chargenet.UpdateKey{}, false, err
	}
	more := len(versions) >= seek.Limit
	versions = versions[:min(len(versions), seek.Limit-1)]
	items := make([][]byte, len(versions))
	var missing []int
	for i, v := range versions {
		if b, ok := s.sites.get(v); ok {
			items[i] = b
		} else {
			missing = append(missing, i)
		}
	}
	if len(missing) > 4 && len(missing) > len(versions)/8 {
		return s.readPage(ctx, seek)
	}
	for _, i := range missing {
		site, err := s.cfg.Store.Site(ctx, versions[i].ID)
		if errors.Is(err, chargenet.ErrNotFound) || err == nil && site.Location.Version != versions[i].Version {
			return s.readPage(ctx, seek) // changed since the versions were read
		}
		if err != nil {
			return nil, chargenet.UpdateKey{}, false, err
		}
		if items[i], err = s.encodeSite(site); err != nil {
			return nil, chargenet.UpdateKey{}, false, err
		}
	}
	var last chargenet.UpdateKey
	if n := len(versions); n > 0 {
		last = chargenet.UpdateKey{LastUpdated: versions[n-1].LastUpdated, ID: versions[n-1].ID}
	}
	return items, last, more, nil
}

// readPage is page's read of the whole page in one snapshot, each site encoded afresh.
func (s *Service) readPage(ctx context.Context, seek chargenet.UpdateSeek) ([][]byte, chargenet.UpdateKey, bool, error) {
	sites, err := s.cfg.Store.ListSites(ctx, seek)
	if err != nil {
		return nil, chargenet.UpdateKey{}, false, err
	}
	more := len(sites) >= seek.Limit
	sites = sites[:min(len(sites), seek.Limit-1)]
	items := make([][]byte, len(sites))
	for i := range sites {
		if items[i], err = s.encodeSite(&sites[i]); err != nil {
			return nil, chargenet.UpdateKey{}, false, err
		}
	}
	var last chargenet.UpdateKey
	if n := len(sites); n > 0 {
		l := sites[n-1].Location
		last = chargenet.UpdateKey{LastUpdated: l.LastUpdated, ID: l.ID}
	}
	return items, last, more, nil
}

// encodeSite returns the Location of site as JSON, and keeps it under its version.
func (s *Service) encodeSite(site *chargenet.Site) ([]byte, error) {
	b, err := json.Marshal(s.location(site))
	if err != nil {
		return nil, err
	}
	l := &site.Location
	s.sites.put(chargenet.SiteVersion{ID: l.ID, Version: l.Version, LastUpdated: l.LastUpdated}, b)
	return b, nil
}

// joinArray returns the JSON array of the encoded items.
func joinArray(items [][]byte) []byte {
	n := 2
	for _, b := range items {
		n += len(b) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, b := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	return append(out, ']')
}

// site returns the location with this id with its EVSEs; 2003 when there is none.
func (s *Service) site(ctx context.Context, id string) (*chargenet.Site, error) {
	site, err := s.cfg.Store.Site(ctx, id)
	if errors.Is(err, chargenet.ErrNotFound) {
		return nil, UnknownObject("unknown Location %q", id)
	}
	return site, err
}

// Location answers one Location with its EVSEs; 2003 when there is none.
func (s *Service) Location(ctx context.Context, id string) (*ocpigen.Location, error) {
	site, err := s.site(ctx, id)
	if err != nil {
		return nil, err
	}
	l := s.location(site)
	return &l, nil
}

// EVSE answers one EVSE of a Location; 2003 when the Location does not exist or does
// not show an EVSE with this uid.
func (s *Service) EVSE(ctx context.Context, id, uid string) (*ocpigen.EVSE, error) {
	site, err := s.site(ctx, id)
	if err != nil {
		return nil, err
	}
	for i := range site.EVSEs {
		e := &site.EVSEs[i]
		if strconv.FormatInt(e.UID, 10) == uid {
			if out, ok := evse(e, site.Location.DeletedAt != nil); ok {
				return &out, nil
			}
			return nil, UnknownObject("EVSE %s of Location %q has no connector in service, which OCPI cannot show", uid, id)
		}
	}
	return nil, UnknownObject("unknown EVSE %q in Location %q", uid, id)
}

// Connector answers one Connector of an EVSE; 2003 when the Location, the EVSE in it or
// the Connector in that EVSE does not exist (a deleted connector does not).
func (s *Service) Connector(ctx context.Context, id, uid, connectorID string) (*ocpigen.Connector, error) {
	e, err := s.EVSE(ctx, id, uid)
	if err != nil {
		return nil, err
	}
	for _, c := range e.Connectors {
		if c.Id == connectorID {
			return &c, nil
		}
	}
	return nil, UnknownObject("unknown Connector %q of EVSE %q in Location %q", connectorID, uid, id)
}
