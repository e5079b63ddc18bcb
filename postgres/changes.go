package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/chargenet/chargenet"
	"github.com/jackc/pgx/v5"
)

// Change lists read the change_xid that the triggers of migrations 0011 and 0014 set on
// locations and, for EVSEs, in evse_changes: the id of the transaction that last changed
// the row (or an EVSE's connectors). Only rows whose
// change_xid is below the xmin of the read's snapshot are returned: every transaction
// below it has ended, and every transaction that commits later has an id at or above
// it, so a change never commits behind a position already read. The cost: a change is
// listed only once every write transaction that started before it has ended (a long
// import holds back the lists until it commits).
//
// A read walks the index on (change_xid, key) from the seek's position to the horizon,
// checking Since on the rows it meets (for EVSEs, in evse_changes, joining each to its
// row in evses); when the statistics say that few rows changed since Since, the planner
// reads those from the index on last_updated and sorts them.
// A Since that most rows changed after but that the first changes in the list predate
// (the lists are roughly in time order) can still make the walk skip many rows.

// changeQuery returns the read of one slice of a change list and its arguments:
// selectFrom is a SELECT ... FROM clause whose table with alias a has the columns
// change_xid, last_updated and key (its columns end with the position, named pos).
func changeQuery[K int64 | string](selectFrom, a, key string, seek chargenet.ChangeSeek[K]) (string, []any) {
	xid := a + `.change_xid`
	// Keeps the rows whose change can no longer be passed.
	q := selectFrom + ` WHERE ` + xid + ` < pg_snapshot_xmin(pg_current_snapshot())`
	// Planned for each read with its values (the simple protocol, one round trip):
	// which index serves a read depends on Since, and a cached generic plan would use
	// one for every Since.
	args := []any{pgx.QueryExecModeSimpleProtocol}
	if seek.HasPos {
		args = append(args, strconv.FormatUint(seek.Pos, 10), seek.Key)
		q += ` AND (` + xid + `, ` + a + `.` + key + `) > ($1::text::xid8, $2)`
	}
	if !seek.Since.IsZero() {
		args = append(args, seek.Since)
		q += ` AND ` + a + `.last_updated >= $` + strconv.Itoa(len(args)-1)
	}
	args = append(args, seek.Limit)
	// Qualified: a bare change_xid would name the output column (its text).
	return q + ` ORDER BY ` + xid + `, ` + a + `.` + key + ` LIMIT $` + strconv.Itoa(len(args)-1), args
}

// evseChangesFrom is the selectFrom of changeQuery for EVSEs: the columns of evseColumns
// and the position, from evse_changes joined to evses.
var evseChangesFrom = `SELECT e.` + strings.ReplaceAll(evseColumns, ", ", ", e.") +
	`, c.change_xid::text AS pos FROM evse_changes c JOIN evses e ON e.uid = c.uid`

// ListEVSEChanges implements chargenet.EventLog: one slice of the EVSEs in change order
// (REMOVED ones included), each with all its connectors and its operator hold as
// ListEVSEs gives them and its ChangePos. It reads the page, then the page's connectors,
// in one REPEATABLE READ transaction. The result is empty, not nil, past the end. Errors
// are wrapped driver or context errors, wrapping chargenet.ErrUnavailable if the
// database cannot be reached.
func (s *Store) ListEVSEChanges(ctx context.Context, seek chargenet.ChangeSeek[int64]) ([]chargenet.EVSE, error) {
	if seek.Limit <= 0 {
		return []chargenet.EVSE{}, nil
	}
	var out []chargenet.EVSE
	err := pgx.BeginTxFunc(ctx, s.pool, snapshot, func(tx pgx.Tx) error {
		query, args := changeQuery(evseChangesFrom, "c", "uid", seek)
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		var (
			er  evseRow
			pos string
		)
		dest := append(er.dest(), &pos)
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (chargenet.EVSE, error) {
			if err := row.Scan(dest...); err != nil {
				return chargenet.EVSE{}, err
			}
			e := er.evse()
			e.ChangePos, err = strconv.ParseUint(pos, 10, 64)
			return e, err
		})
		if err != nil || len(out) == 0 {
			return err
		}
		return loadConnectors(ctx, tx, out)
	})
	if err != nil {
		return nil, s.wrap("list evse changes", err)
	}
	if out == nil {
		out = []chargenet.EVSE{}
	}
	return out, nil
}

// ListLocationChanges implements chargenet.EventLog: one slice of the locations in
// change order (deleted ones included), each with its EvseUIDs as Location gives them
// and its ChangePos, read in one statement. The result is empty, not nil, past the end.
// Errors are wrapped driver or context errors, wrapping chargenet.ErrUnavailable if the
// database cannot be reached.
func (s *Store) ListLocationChanges(ctx context.Context, seek chargenet.ChangeSeek[string]) ([]chargenet.Location, error) {
	if seek.Limit <= 0 {
		return []chargenet.Location{}, nil
	}
	query, args := changeQuery(selectLocationColumns+`, l.change_xid::text AS pos FROM locations l`, "l", "id", seek)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, s.wrap("list location changes", err)
	}
	var pos string
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chargenet.Location, error) {
		l, err := scanLocationWith(row, &pos)
		if err != nil {
			return l, err
		}
		l.ChangePos, err = strconv.ParseUint(pos, 10, 64)
		return l, err
	})
	if err != nil {
		return nil, s.wrap("list location changes", err)
	}
	if out == nil {
		out = []chargenet.Location{}
	}
	return out, nil
}
