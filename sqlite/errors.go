package sqlite

import (
	"database/sql"
	"errors"
	"strings"

	"github.com/chargenet/chargenet"
	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// wrap is chargenet.WrapStoreError for this store (see unavailable).
func wrap(op string, err error) error {
	return chargenet.WrapStoreError("sqlite", op, err, unavailable)
}

// unavailable reports whether err means the database cannot be used right now (locked
// by another process past the busy timeout, I/O failure, full disk, closed store), so
// that a retry may succeed.
func unavailable(err error) bool {
	var se *sqlitedrv.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN,
			sqlite3.SQLITE_FULL, sqlite3.SQLITE_PROTOCOL:
			return true
		}
	}
	// database/sql does not export the errors of a closed *sql.DB or *sql.Stmt.
	msg := err.Error()
	return errors.Is(err, sql.ErrConnDone) || strings.Contains(msg, "sql: database is closed") ||
		strings.Contains(msg, "sql: statement is closed")
}

// constraintCode returns the extended result code of an SQLite constraint violation
// (sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, ...), or 0 if err is not one.
func constraintCode(err error) int {
	var se *sqlitedrv.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT {
		return se.Code()
	}
	return 0
}
