// Package client is the Go client of the Charging Network Integration API: EVSEs with
// their connectors, the locations that hold them, and the catalogue of webhook event
// types. It is a thin layer over the client generated from the contract
// (openapi/openapi.yaml, version APIVersion) with plain Go types, iterators that follow
// the pagination cursors, errors you can test with errors.Is, and retries.
//
// # Usage
//
//	package main
//
//	import (
//		"context"
//		"errors"
//		"fmt"
//		"log"
//		"os"
//
//		"github.com/chargenet/chargenet/client"
//	)
//
//	func main() {
//		ctx := context.Background()
//		c, err := client.New("https://api.example.com",
//			client.WithAPIKey(os.Getenv("CHARGENET_API_KEY")),
//			client.WithUserAgent("fleet-sync/1.4"),
//		)
//		if err != nil {
//			log.Fatal(err)
//		}
//
//		// Read an EVSE with its connectors and the ETag of its current state.
//		evse, etag, err := c.EVSE(ctx, 1002)
//		if errors.Is(err, client.ErrNotFound) {
//			log.Fatal("no EVSE 1002")
//		} else if err != nil {
//			log.Fatal(err)
//		}
//		for _, conn := range evse.Connectors {
//			fmt.Println(conn.ID, conn.Standard, conn.MaxElectricPower, conn.Deleted())
//		}
//
//		// Change one field of a connector, only if nobody changed the EVSE since the
//		// read. Fields left nil keep their value.
//		patch := client.ConnectorPatch{MaxElectricPower: new(300.0)}
//		evse, etag, err = c.UpdateConnector(ctx, 1002, 1, patch, client.IfMatch(etag))
//		var apiErr *client.Error
//		switch {
//		case errors.Is(err, client.ErrPreconditionFailed):
//			log.Fatal("EVSE 1002 changed since it was read; read it again")
//		case errors.As(err, &apiErr) && apiErr.Code == client.CodeInvalidConnector:
//			log.Fatalf("rule broken on %s: %s", apiErr.Param, apiErr.Message)
//		case err != nil:
//			log.Fatal(err)
//		}
//
//		// Walk all locations; the iterator fetches a page at a time as needed.
//		for loc, err := range c.Locations(ctx, client.ListOptions{PageSize: 100}) {
//			if err != nil {
//				log.Fatal(err)
//			}
//			fmt.Println(loc.ID, loc.Name, loc.EVSEUIDs)
//		}
//
//		// Or take one page and keep its cursor for later.
//		page, err := c.EVSEsPage(ctx, client.PageRequest{Limit: 20})
//		if err != nil {
//			log.Fatal(err)
//		}
//		fmt.Println(len(page.Items), page.HasMore, page.NextCursor)
//	}
//
// # Errors
//
// Every answer other than the operation's success is an *Error with the status, the
// stable Code, the Message, the offending Param and the RequestID to quote to support.
// errors.Is matches it against ErrInvalid (400), ErrForbidden (403), ErrNotFound (404),
// ErrConflict (409), ErrPreconditionFailed (412), ErrRateLimited (429) and
// ErrUnavailable (502, 503, 504). Network failures are returned wrapped, so errors.Is and
// errors.As see the underlying net and context errors.
//
// # Retries
//
// Reads, and updates made conditional with IfMatch, are repeated on network errors and
// on 429, 502, 503 and 504 answers, with exponential backoff and full jitter, honouring
// Retry-After, up to DefaultRetryPolicy.MaxAttempts attempts (see RetryPolicy and
// WithRetry). An update without IfMatch is sent once. Waits end when the context is done.
//
// # Concurrency control
//
// EVSE and UpdateConnector return the EVSE's ETag. Pass it to the next UpdateConnector
// with IfMatch: if somebody changed the EVSE in between, the update fails with
// ErrPreconditionFailed and changes nothing.
package client
