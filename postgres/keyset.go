package postgres

import (
	"strconv"
	"strings"

	"github.com/chargenet/chargenet"
)

// seekQuery returns the keyset read of seek over the rows of selectFrom, a SELECT ...
// FROM clause, ordered by key, and its arguments: rows with key after seek.Key in
// ascending order, or before it in descending order when seek.Backward, the key's row
// too when seek.Inclusive; from the first or the last row when seek has no key. No
// OFFSET: each read costs the same at any depth.
func seekQuery[K int64 | string](selectFrom, key string, seek chargenet.Seek[K]) (string, []any) {
	return filteredSeek(selectFrom, "", key, nil, seek)
}

// filteredSeek is seekQuery over the rows that also meet filter, a condition whose
// parameters ($1, ...) are filterArgs.
//
// The limit is written into the statement, not passed as a parameter. Given LIMIT $n,
// PostgreSQL estimates a generic plan far above a custom one and so plans every read
// again with its values; for a read with a key that planning costs more than the read
// (it looks up the key's selectivity, probing the index's end for a key near it).
// With the limit written in, the generic plan is estimated as the custom one is,
// chosen after five executions of the prepared statement, and a read costs the same
// with or without a key. A client uses a few page sizes, so there are few statements.
//
// A string key holding NUL, which text cannot hold, is read as withoutNUL maps it.
func filteredSeek[K int64 | string](selectFrom, filter, key string, filterArgs []any, seek chargenet.Seek[K]) (string, []any) {
	if s, ok := any(seek).(chargenet.Seek[string]); ok {
		seek = any(withoutNUL(s)).(chargenet.Seek[K])
	}
	cmp, dir := ">", "ASC"
	if seek.Backward {
		cmp, dir = "<", "DESC"
	}
	if seek.Inclusive {
		cmp += "="
	}
	args := append(make([]any, 0, len(filterArgs)+1), filterArgs...)
	var conds []string
	if filter != "" {
		conds = append(conds, filter)
	}
	if seek.HasKey {
		args = append(args, seek.Key)
		conds = append(conds, key+" "+cmp+" $"+strconv.Itoa(len(args)))
	}
	q := selectFrom
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	return q + " ORDER BY " + key + " " + dir + " LIMIT " + strconv.Itoa(seek.Limit), args
}

// withoutNUL returns seek with a key PostgreSQL can take (text holds no NUL) that selects
// the same ids: ids hold no NUL, so for a key p+"\x00"+rest, which no id equals, an id
// is after the key exactly when it is after p, and before it exactly when it is p or
// before p.
func withoutNUL(seek chargenet.Seek[string]) chargenet.Seek[string] {
	i := strings.IndexByte(seek.Key, 0)
	if !seek.HasKey || i < 0 {
		return seek
	}
	seek.Key, seek.Inclusive = seek.Key[:i], seek.Backward
	return seek
}

// prefixed qualifies each of the comma-separated columns with prefix ("a.").
func prefixed(columns, prefix string) string {
	return prefix + strings.ReplaceAll(columns, ", ", ", "+prefix)
}
