package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// changeCursors walks GET /v1/locations?updated_since=SINCE from its first page, in pages
// of at most 100, and prints, for each depth (ascending), the next_cursor of the page that
// ends exactly at that depth: the cursor of the page starting at that depth. The cursors
// are the service's own, so their positions are whatever the store gave the items.
func changeCursors(base, key, since string, depths []int) error {
	slices.Sort(depths)
	client := &http.Client{Timeout: time.Minute}
	cursor, seen := "", 0
	for _, d := range depths {
		for seen < d {
			limit := min(100, d-seen)
			q := url.Values{"updated_since": {since}, "limit": {strconv.Itoa(limit)}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			req, err := http.NewRequest(http.MethodGet, base+"/v1/locations?"+q.Encode(), nil)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			var page struct {
				Data       []json.RawMessage `json:"data"`
				Pagination struct {
					NextCursor *string `json:"next_cursor"`
				} `json:"pagination"`
			}
			err = json.NewDecoder(resp.Body).Decode(&page)
			_ = resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				return fmt.Errorf("change list page after %d items: status %d, %v", seen, resp.StatusCode, err)
			}
			if len(page.Data) != limit || page.Pagination.NextCursor == nil {
				return fmt.Errorf("change list ends after %d items, before depth %d", seen+len(page.Data), d)
			}
			seen += limit
			cursor = *page.Pagination.NextCursor
		}
		fmt.Println(d, cursor)
	}
	return nil
}
