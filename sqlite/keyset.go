package sqlite

import (
	"strings"

	"github.com/chargenet/chargenet"
)

// filteredSeek returns the keyset read of seek over the rows of selectFrom that meet
// filter (whose parameters are filterArgs), ordered by key, and its arguments.
func filteredSeek[K int64 | string](selectFrom, filter, key string, filterArgs []any, seek chargenet.Seek[K]) (string, []any) {
	where, dir := keyset(key, filter, seek.Backward, keyModeOf(seek))
	args := filterArgs
	if seek.HasKey {
		args = append(args, seek.Key)
	}
	return selectFrom + " " + where + "ORDER BY " + key + " " + dir + " LIMIT ?", append(args, seek.Limit)
}

// placeholders returns n comma-separated "?".
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// prefixed qualifies each of the comma-separated columns with prefix ("w.").
func prefixed(columns, prefix string) string {
	return prefix + strings.ReplaceAll(columns, ", ", ", "+prefix)
}

// keyMode is how a keyset read uses its key (see chargenet.Seek).
type keyMode int

const (
	noKey   keyMode = iota // from the first row (the last, backward)
	pastKey                // the rows after the key (before it, backward)
	atKey                  // the key's row too (Seek.Inclusive)
)

// keyModeOf returns the keyMode of seek.
func keyModeOf[K int64 | string](seek chargenet.Seek[K]) keyMode {
	switch {
	case !seek.HasKey:
		return noKey
	case seek.Inclusive:
		return atKey
	}
	return pastKey
}

// keyset returns the WHERE clause (empty without a key) and the ORDER BY direction of a
// keyset read on column: the rows after the key in ascending order, or before it in
// descending order when backward, the key's row too when mode is atKey. filter, when
// not empty, is a condition the rows must also meet (its parameters come before the
// key's).
func keyset(column, filter string, backward bool, mode keyMode) (where, dir string) {
	cmp, dir := ">", "ASC"
	if backward {
		cmp, dir = "<", "DESC"
	}
	if mode == atKey {
		cmp += "="
	}
	var conds []string
	if filter != "" {
		conds = append(conds, filter)
	}
	if mode != noKey {
		conds = append(conds, column+" "+cmp+" ?")
	}
	if len(conds) > 0 {
		where = "WHERE " + strings.Join(conds, " AND ") + " "
	}
	return where, dir
}
