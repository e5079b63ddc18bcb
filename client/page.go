package client

import (
	"context"
	"fmt"
	"iter"

	"github.com/chargenet/chargenet/gen"
)

// MaxPageSize is the largest page the service returns (the contract's limit 1..100).
const MaxPageSize = 100

// PageRequest asks for one page of a list.
type PageRequest struct {
	// Cursor is a Page's NextCursor or PreviousCursor, passed back unchanged, or empty
	// for the first page. A cursor of another list or an altered one fails with
	// ErrInvalid (code invalid_cursor).
	Cursor string
	// Limit is the page size, 1 to MaxPageSize; zero means the service's default (25).
	// Other values fail with ErrInvalid (code invalid_parameter).
	Limit int
}

func (r PageRequest) params() (cursor *string, limit *int) {
	if r.Cursor != "" {
		cursor = &r.Cursor
	}
	if r.Limit != 0 {
		limit = &r.Limit
	}
	return cursor, limit
}

// Page is one page of a list, in ascending identifier order.
type Page[T any] struct {
	// Items are the page's items.
	Items []T
	// NextCursor requests the following page; it is empty exactly when HasMore is false.
	NextCursor string
	// PreviousCursor requests the page before; it is empty on the first page.
	PreviousCursor string
	// HasMore reports whether items follow this page.
	HasMore bool
	// ResumeCursor is set on the pages of change lists and the event log only: the
	// position after this page, to poll from later (see Changes).
	ResumeCursor string
}

// LocationPage is one page of locations, as returned by LocationsPage.
type LocationPage = Page[Location]

// EVSEPage is one page of EVSEs, as returned by EVSEsPage.
type EVSEPage = Page[EVSE]

// ListOptions configures the iterators over whole lists: Locations, EVSEs,
// Chargeboxes and APIKeys.
type ListOptions struct {
	// PageSize is the number of items fetched per request, 1 to MaxPageSize; zero means
	// MaxPageSize. Other values make the iterator yield ErrInvalid.
	PageSize int
}

func newPage[A, T any](items []A, p gen.Pagination, conv func(*A) T) *Page[T] {
	page := &Page[T]{Items: make([]T, len(items)), HasMore: p.HasMore}
	for i := range items {
		page.Items[i] = conv(&items[i])
	}
	if p.NextCursor != nil {
		page.NextCursor = *p.NextCursor
	}
	if p.PreviousCursor != nil {
		page.PreviousCursor = *p.PreviousCursor
	}
	if p.ResumeCursor != nil {
		page.ResumeCursor = *p.ResumeCursor
	}
	return page
}

// all walks a list page by page, following NextCursor. It fetches a page only when the
// consumer asks for an item past the previous one, so breaking out of the loop stops the
// walk. An error is yielded once, with the zero item, and ends the walk.
func all[T any](ctx context.Context, opts ListOptions, fetch func(context.Context, PageRequest) (*Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		req := PageRequest{Limit: opts.PageSize}
		if req.Limit == 0 {
			req.Limit = MaxPageSize
		}
		for {
			page, err := fetch(ctx, req)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, item := range page.Items {
				if !yield(item, nil) {
					return
				}
			}
			if !page.HasMore {
				return
			}
			if page.NextCursor == "" || page.NextCursor == req.Cursor {
				yield(zero, fmt.Errorf("chargenet: the service said has_more but gave no new next_cursor after cursor %q", req.Cursor))
				return
			}
			req.Cursor = page.NextCursor
		}
	}
}
