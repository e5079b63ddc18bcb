package sqlite

import (
	"context"
	"database/sql"

	"github.com/chargenet/chargenet"
)

// Change lists read the positions that the triggers of migration 0011 keep in
// evse_changes and location_changes: one writer at a time takes them in its transaction,
// so they are unique and ordered as the changes were committed. A position is never
// given twice, so after (Pos, Key) is after Pos alone for every key a read returned; the
// key is still compared, so that the read is exactly the one ChangeSeek describes.
//
// Each read walks the unique index on pos from the seek's position: the first page and
// a page a million changes deep read the same number of index entries. The Since filter
// is checked on the rows the walk meets; items changed before Since are skipped, so a
// read whose Since is later than most changes walks past them (see README).

// changeSeekCond is the condition of a read after (Pos, Key) on alias c of a side table
// with key column key: its parameters are the position twice and the key. The range on
// pos stands alone, so that SQLite seeks the index to it (it does not for the
// equivalent "pos > ? OR (pos = ? AND key > ?)", and would walk from the first entry).
func changeSeekCond(key string) string {
	return `c.pos >= ? AND (c.pos > ? OR c.` + key + ` > ?)`
}

// listEVSEChangesQuery returns the read of one slice of the EVSE change list with the
// EVSEs' connectors, in one statement. Its parameters: the position twice and the key
// (when hasPos), Since (when since), the limit.
func listEVSEChangesQuery(hasPos, since bool) string {
	where := `WHERE true`
	if hasPos {
		where += ` AND ` + changeSeekCond("uid")
	}
	if since {
		where += ` AND e.last_updated >= ?`
	}
	return `WITH page AS (SELECT ` + evseColumnsOf("e") + `, c.pos FROM evse_changes c JOIN evses e ON e.uid = c.uid ` +
		where + ` ORDER BY c.pos LIMIT ?) ` +
		`SELECT ` + evseRowColumns + `, e.pos FROM page e LEFT JOIN connectors c ON c.evse_uid = e.uid ` +
		`ORDER BY e.pos, c.id`
}

// evseColumnsOf is evseColumns of table alias a.
func evseColumnsOf(a string) string {
	return a + `.uid, ` + a + `.evse_id, ` + a + `.chargebox_id, ` + a + `.location_id, ` + a + `.status, ` +
		a + `.last_updated, ` + a + `.version`
}

// listLocationChangesQuery is listEVSEChangesQuery for locations with their EVSE uids.
func listLocationChangesQuery(hasPos, since bool) string {
	where := `WHERE true`
	if hasPos {
		where += ` AND ` + changeSeekCond("id")
	}
	if since {
		where += ` AND l.last_updated >= ?`
	}
	return `SELECT ` + locationRowColumns + `, c.pos FROM location_changes c JOIN locations l ON l.id = c.id ` +
		where + ` ORDER BY c.pos LIMIT ?`
}

// changeArgs returns the parameters of a change list read (see listEVSEChangesQuery).
func changeArgs[K int64 | string](seek chargenet.ChangeSeek[K]) []any {
	args := make([]any, 0, 5)
	if seek.HasPos {
		args = append(args, int64(seek.Pos), int64(seek.Pos), seek.Key)
	}
	if !seek.Since.IsZero() {
		args = append(args, formatTime(seek.Since))
	}
	return append(args, seek.Limit)
}

// ListEVSEChanges implements chargenet.EventLog: one slice of the EVSEs in change order
// (REMOVED ones included), each with all its connectors as ListEVSEs gives them and its
// ChangePos, read in one statement. A position above the highest one SQLite can hold
// (2^63-1) is past the end. The result is empty, not nil, past the end. Errors are
// wrapped driver or context errors.
func (s *Store) ListEVSEChanges(ctx context.Context, seek chargenet.ChangeSeek[int64]) ([]chargenet.EVSE, error) {
	const op = "list evse changes"
	if seek.Limit <= 0 || (seek.HasPos && seek.Pos > maxPos) {
		return []chargenet.EVSE{}, nil
	}
	rows, err := s.changeList[0][b2i(seek.HasPos)][b2i(!seek.Since.IsZero())].QueryContext(ctx, changeArgs(seek)...)
	if err != nil {
		return nil, wrap(op, err)
	}
	evses, err := scanEVSEsAt(rows, min(seek.Limit, 1000), true)
	return evses, wrap(op, err)
}

// ListLocationChanges implements chargenet.EventLog: one slice of the locations in
// change order (deleted ones included), each with its EvseUIDs as Location gives them
// and its ChangePos, read in one statement. The result is empty, not nil, past the end.
// Errors are wrapped driver or context errors.
func (s *Store) ListLocationChanges(ctx context.Context, seek chargenet.ChangeSeek[string]) ([]chargenet.Location, error) {
	const op = "list location changes"
	if seek.Limit <= 0 || (seek.HasPos && seek.Pos > maxPos) {
		return []chargenet.Location{}, nil
	}
	rows, err := s.changeList[1][b2i(seek.HasPos)][b2i(!seek.Since.IsZero())].QueryContext(ctx, changeArgs(seek)...)
	if err != nil {
		return nil, wrap(op, err)
	}
	defer func() { _ = rows.Close() }()
	out := make([]chargenet.Location, 0, min(seek.Limit, 1000))
	var (
		l             chargenet.Location
		updated       string
		uids, deleted sql.NullString
		pos           int64
	)
	dest := []any{&l.ID, &l.Name, &l.Address, &l.City, &l.PostalCode, &l.Country, &l.Latitude, &l.Longitude,
		&l.TimeZone, &updated, &uids, &deleted, &pos}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, wrap(op, err)
		}
		loc, err := locationOf(l, updated, uids, deleted)
		if err != nil {
			return nil, wrap(op, err)
		}
		loc.ChangePos = uint64(pos)
		out = append(out, loc)
	}
	return out, wrap(op, rows.Err())
}

// maxPos is the highest position SQLite can hold.
const maxPos = 1<<63 - 1
