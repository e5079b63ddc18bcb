package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/chargenet/chargenet"
)

// Change lists read the positions that the triggers of migration 0011 keep in
// evse_changes and location_changes: one writer at a time takes them in its transaction,
// so they are unique and ordered as the changes were committed. A position is never
// given twice, so after (Pos, Key) is after Pos alone for every key a read returned; the
// key is still compared, so that the read is exactly the one ChangeSeek describes.
//
// Each read walks the unique index on pos from the seek's position: the first page and
// a page a million changes deep read the same number of index entries. A read with Since
// starts no earlier than the first position whose hw (see the migration) reaches Since:
// every item changed at or after Since is at or after it, and one seek of the index on
// (hw, pos) finds it. Items met on the walk that changed before Since (changed again
// with an older time than an earlier change, as out of order writers can) are skipped.

// changeWhere returns the WHERE clause of a change list read on alias c of side table
// table with key column key, and lastUpdated the item's column: after (Pos, Key) when
// hasPos, from the first position whose hw reaches Since when since. Its parameters come
// as changeArgs gives them. The lower bound on pos stands alone, so that SQLite seeks
// the index to it (it does not for the equivalent "pos > ? OR (pos = ? AND key > ?)",
// and would walk from the first entry).
func changeWhere(table, key, lastUpdated string, hasPos, since bool) string {
	start := `coalesce((SELECT pos FROM ` + table + ` WHERE hw >= ? ORDER BY hw, pos LIMIT 1), ` + maxPosText + `)`
	var conds []string
	switch {
	case hasPos && since:
		conds = append(conds, `c.pos >= max(?, `+start+`)`)
	case hasPos:
		conds = append(conds, `c.pos >= ?`)
	case since:
		conds = append(conds, `c.pos >= `+start)
	}
	if hasPos {
		conds = append(conds, `(c.pos > ? OR c.`+key+` > ?)`)
	}
	if since {
		conds = append(conds, lastUpdated+` >= ?`)
	}
	if len(conds) == 0 {
		return ``
	}
	return `WHERE ` + strings.Join(conds, ` AND `)
}

// listEVSEChangesQuery returns the read of one slice of the EVSE change list with the
// EVSEs' connectors, in one statement.
func listEVSEChangesQuery(hasPos, since bool) string {
	return `WITH page AS (SELECT ` + evseColumnsOf("e") + `, c.pos FROM evse_changes c JOIN evses e ON e.uid = c.uid ` +
		changeWhere("evse_changes", "uid", "e.last_updated", hasPos, since) + ` ORDER BY c.pos LIMIT ?) ` +
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
	return `SELECT ` + locationRowColumns + `, c.pos FROM location_changes c JOIN locations l ON l.id = c.id ` +
		changeWhere("location_changes", "id", "l.last_updated", hasPos, since) + ` ORDER BY c.pos LIMIT ?`
}

// changeArgs returns the parameters of a change list read (see changeWhere).
func changeArgs[K int64 | string](seek chargenet.ChangeSeek[K]) []any {
	args := make([]any, 0, 6)
	since := !seek.Since.IsZero()
	if seek.HasPos {
		args = append(args, int64(seek.Pos))
	}
	if since {
		args = append(args, formatTime(seek.Since))
	}
	if seek.HasPos {
		args = append(args, int64(seek.Pos), seek.Key)
	}
	if since {
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
	st, err := s.reads.get(ctx, listEVSEChangesQuery(seek.HasPos, !seek.Since.IsZero()))
	if err != nil {
		return nil, wrap("list evse changes", err)
	}
	rows, err := st.QueryContext(ctx, changeArgs(seek)...)
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
	st, err := s.reads.get(ctx, listLocationChangesQuery(seek.HasPos, !seek.Since.IsZero()))
	if err != nil {
		return nil, wrap("list location changes", err)
	}
	rows, err := st.QueryContext(ctx, changeArgs(seek)...)
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
		&l.TimeZone, &updated, &l.Version, &uids, &deleted, &pos}
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
const (
	maxPos     = 1<<63 - 1
	maxPosText = "9223372036854775807"
)
