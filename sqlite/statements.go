package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// statements keeps the prepared statements of one connection pool by their text, until
// the store closes: the statements whose text depends on the call (a keyset read's
// direction, the columns a PATCH writes, a batch's size). Store.warm prepares every
// variant when the store opens; get prepares one it does not know yet.
type statements struct {
	db *sql.DB
	mu sync.Mutex
	m  sync.Map // query text → *sql.Stmt
}

// get returns the prepared statement of query. Errors are the driver's, naming the
// query.
func (c *statements) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := c.m.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("sqlite: preparing %q: %w", query, err)
	}
	c.m.Store(query, st)
	return st, nil
}

// close closes every statement prepared.
func (c *statements) close() error {
	var errs []error
	c.m.Range(func(_, st any) bool {
		errs = append(errs, st.(*sql.Stmt).Close())
		return true
	})
	return errors.Join(errs...)
}
