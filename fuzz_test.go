package chargenet

import (
	"context"
	"errors"
	"testing"
)

// FuzzCursorDecode feeds arbitrary strings to the cursor decoder and the paginator: they
// must never panic, and anything not issued by the codec must be an invalid_cursor error.
func FuzzCursorDecode(f *testing.F) {
	c := NewCursorCodec([]byte("fuzz-secret-fuzz-secret-fuzz-sec"))
	f.Add(c.encode(ListLocations, "LOC-0001", false))
	f.Add(c.encode(ListLocations, "LOC-0001", true))
	f.Add(c.encode(ListEVSEs, int64(1001), false))
	f.Add(c.encode(ListLocations, nil, false))
	f.Add("")
	f.Add(".")
	f.Add("eyJsIjoibG9jYXRpb25zIiwiayI6MX0.AAAA")
	f.Add("%00")
	items := []int64{1, 2, 3, 5, 8, 13}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := c.decode(ListLocations, s)
		if err != nil {
			var de *Error
			if !errors.As(err, &de) || de.Code != CodeInvalidCursor || de.Param != "cursor" {
				t.Fatalf("decode(%q): want an invalid_cursor error, got %v", s, err)
			}
		} else if p.List != ListLocations {
			t.Fatalf("decode(%q) accepted a cursor of list %q", s, p.List)
		}
		page, err := Paginate(context.Background(), c, ListEVSEs, s, 2, sliceReader(items), func(v *int64) int64 { return *v })
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Paginate(%q): unexpected error kind %v", s, err)
			}
			return
		}
		if len(page.Items) > 2 || page.HasMore != (page.Next != "") {
			t.Fatalf("Paginate(%q): broken page %+v", s, page)
		}
	})
}
