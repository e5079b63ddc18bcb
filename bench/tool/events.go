package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// readEvents pages through the whole event log of the server at base with pages of
// limit, following next_cursor, and prints the events read, the pages, the seconds it
// took and the events per second (tab-separated).
func readEvents(base, key string, limit int) error {
	hc := &http.Client{Timeout: 30 * time.Second}
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	events, pages := 0, 0
	start := time.Now()
	for {
		req, err := http.NewRequest(http.MethodGet, base+"/emsp/v1/events?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err != nil {
			return err
		}
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /emsp/v1/events: %d %s", res.StatusCode, body)
		}
		var page struct {
			Data       []json.RawMessage `json:"data"`
			Pagination struct {
				NextCursor *string `json:"next_cursor"`
				HasMore    bool    `json:"has_more"`
			} `json:"pagination"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return err
		}
		events += len(page.Data)
		pages++
		if !page.Pagination.HasMore || page.Pagination.NextCursor == nil {
			break
		}
		q.Set("cursor", *page.Pagination.NextCursor)
	}
	took := time.Since(start).Seconds()
	fmt.Printf("%d\t%d\t%.3f\t%.0f\n", events, pages, took, float64(events)/took)
	return nil
}
