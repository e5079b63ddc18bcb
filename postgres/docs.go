package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/chargenet/chargenet"
	"github.com/jackc/pgx/v5"
)

// evseDocQuery reads an EVSE's stored JSON, NULL when there is none for its version.
const evseDocQuery = `SELECT CASE WHEN doc_version = version THEN doc END, version FROM evses WHERE uid = $1`

// selectLocationDocs selects each location's id and its stored JSON, NULL when there is
// none (the triggers of migration 0010 clear it when the location's EVSEs change).
const selectLocationDocs = `SELECT l.id, l.doc FROM locations l`

// EVSEDoc returns the EVSE's stored contract JSON (chargenet.EVSEJSON) and its Version,
// read in one statement. An EVSE whose JSON is missing or was written for another
// version (a row changed by a program that does not keep it) is read and encoded
// instead. If there is no EVSE with this uid it returns an ErrNotFound
// *chargenet.Error with Param "uid"; other errors are wrapped driver errors, wrapping
// chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) EVSEDoc(ctx context.Context, uid int64) ([]byte, int64, error) {
	var doc []byte
	var version int64
	err := s.pool.QueryRow(ctx, evseDocQuery, uid).Scan(&doc, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, evseNotFound(uid)
	}
	if err != nil {
		return nil, 0, s.wrap("evse doc", err)
	}
	if doc != nil {
		return doc, version, nil
	}
	e, err := s.EVSE(ctx, uid)
	if err != nil {
		return nil, 0, err
	}
	doc, err = chargenet.EVSEJSON(e)
	return doc, e.Version, s.wrap("evse doc", err)
}

// ListLocationDocs reads one keyset slice of locations (see ListLocations) as their
// stored contract JSON (chargenet.LocationJSON), in one statement, without decoding
// them. A location whose JSON is missing is read and encoded instead. Errors are
// wrapped driver or context errors, wrapping chargenet.ErrUnavailable if the database
// cannot be reached.
func (s *Store) ListLocationDocs(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.LocationDoc, error) {
	const op = "list location docs"
	if seek.Limit <= 0 {
		return []chargenet.LocationDoc{}, nil
	}
	query, args := seekQuery(selectLocationDocs, `l.id COLLATE "C"`, seek)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	out := make([]chargenet.LocationDoc, 0, min(seek.Limit, 1000))
	var missing []int
	for rows.Next() {
		var d chargenet.LocationDoc
		if err := rows.Scan(&d.ID, &d.JSON); err != nil {
			rows.Close()
			return nil, s.wrap(op, err)
		}
		if d.JSON == nil {
			missing = append(missing, len(out))
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(op, err)
	}
	for _, i := range missing {
		l, err := s.Location(ctx, out[i].ID)
		if err != nil {
			return nil, err
		}
		if out[i].JSON, err = chargenet.LocationJSON(l); err != nil {
			return nil, s.wrap(op, err)
		}
	}
	return out, nil
}

var (
	_ chargenet.EVSEDocs     = (*Store)(nil)
	_ chargenet.LocationDocs = (*Store)(nil)
)

// evseDoc returns the JSON of e as it will be read back once stored: times in UTC to
// the microsecond, connectors in ascending id.
func evseDoc(e *chargenet.EVSE) ([]byte, error) {
	cp := *e
	cp.LastUpdated = stamp(e.LastUpdated)
	cp.Connectors = slices.Clone(e.Connectors)
	slices.SortFunc(cp.Connectors, func(a, b chargenet.Connector) int { return cmp.Compare(a.ID, b.ID) })
	for i := range cp.Connectors {
		if d := cp.Connectors[i].DeletedAt; d != nil {
			t := stamp(*d)
			cp.Connectors[i].DeletedAt = &t
		}
	}
	return chargenet.EVSEJSON(&cp)
}

// locationDoc returns the JSON of l as it will be read back once stored, and the EVSE
// uids it lists.
func locationDoc(l chargenet.Location) ([]byte, []int64, error) {
	l.LastUpdated = stamp(l.LastUpdated)
	if l.EvseUIDs == nil {
		l.EvseUIDs = []int64{}
	}
	doc, err := chargenet.LocationJSON(&l)
	return doc, l.EvseUIDs, err
}

// fillDocs writes the JSON of every EVSE and location that has none (rows written
// before the columns existed, or EVSEs changed by a program that does not keep it), a
// thousand per transaction. Replicas opening together may write the same JSON twice,
// which is harmless: a row changed meanwhile is left to the read path. Errors are
// wrapped driver errors.
func (s *Store) fillDocs(ctx context.Context) error {
	var after int64 = -1 << 63
	for {
		var evses []chargenet.EVSE
		err := pgx.BeginTxFunc(ctx, s.pool, snapshot, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT `+evseColumns+` FROM evses WHERE uid > $1 AND (doc IS NULL OR doc_version IS DISTINCT FROM version) `+
				`ORDER BY uid LIMIT 1000`, after)
			if err != nil {
				return err
			}
			var er evseRow
			evses, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (chargenet.EVSE, error) {
				err := row.Scan(er.dest()...)
				return er.evse(), err
			})
			if err != nil || len(evses) == 0 {
				return err
			}
			return loadConnectors(ctx, tx, evses)
		})
		if err != nil {
			return s.wrap("filling EVSE docs", err)
		}
		if len(evses) == 0 {
			break
		}
		var b pgx.Batch
		for i := range evses {
			doc, err := chargenet.EVSEJSON(&evses[i])
			if err != nil {
				return s.wrap("filling EVSE docs", err)
			}
			b.Queue(`UPDATE evses SET doc = $1, doc_version = version WHERE uid = $2 AND version = $3`,
				string(doc), evses[i].UID, evses[i].Version)
		}
		if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
			return s.wrap("filling EVSE docs", err)
		}
		after = evses[len(evses)-1].UID
	}
	for after := ""; ; {
		rows, err := s.pool.Query(ctx, selectLocations+` WHERE l.doc IS NULL AND l.id > $1 ORDER BY l.id LIMIT 1000`, after)
		if err != nil {
			return s.wrap("filling location docs", err)
		}
		locs, err := pgx.CollectRows(rows, scanLocation)
		if err != nil {
			return s.wrap("filling location docs", err)
		}
		if len(locs) == 0 {
			return nil
		}
		var b pgx.Batch
		for _, l := range locs {
			doc, uids, err := locationDoc(l)
			if err != nil {
				return s.wrap("filling location docs", err)
			}
			b.Queue(`UPDATE locations SET doc = $1, doc_uids = $2 WHERE id = $3`, string(doc), uids, l.ID)
		}
		if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
			return s.wrap("filling location docs", err)
		}
		after = locs[len(locs)-1].ID
	}
}
