// Package client is the Go client of the Charging Network Integration API: EVSEs with
// their connectors and their lifecycle (create, commission, remove), the locations that
// hold them, the charge boxes that connect over OCPP, the catalogue of webhook event
// types, the event log, the tools to keep a copy of the network in sync, and the
// administration of API keys. It is a thin layer over the client generated from the contract
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
// # Lifecycle
//
// An operator creates a location with PutLocation (the caller picks its ID), an EVSE at
// it with CreateEVSE (planned until commissioned), adds and deletes connectors with
// CreateConnector and DeleteConnector, commissions or takes the EVSE out of service with
// UpdateEVSE, decommissions it with RemoveEVSE, and finally deletes the location with
// DeleteLocation once all its EVSEs are removed:
//
//	loc, _, err := c.PutLocation(ctx, client.Location{ID: "LOC-9001", Name: "Depot",
//		Address: "Hafenstraße 1", City: "Hamburg", Country: "DEU",
//		Latitude: 53.54, Longitude: 9.98, TimeZone: "Europe/Berlin"})
//	evse, etag, err := c.CreateEVSE(ctx, client.NewEVSE{EVSEID: "DE*ABC*E9001*1",
//		ChargeboxID: 9001, LocationID: loc.ID, Connectors: []client.NewConnector{{
//			Standard: client.StandardIEC62196T2, Format: client.FormatSocket,
//			PowerType: client.PowerAC3Phase, MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400}}})
//	evse, etag, err = c.UpdateEVSE(ctx, evse.UID,
//		client.EVSEPatch{Status: new(client.StatusAvailable)}, client.IfMatch(etag))
//
// # Staying in sync
//
// A partner that keeps its own copy reads everything once (Locations, EVSEs), then asks
// for what changed (LocationsSince, EVSEsSince) or for the events (Events). These return
// a Changes: range over All, then keep its Cursor and poll later with it and the same
// since (or query). That never misses a change, even when the service commits changes
// out of timestamp order, which a poll from the newest LastUpdated seen can:
//
//	since := lastFullRead // a time before the full read began
//	cursor := ""          // or the one kept from the last poll
//	for {
//		changes := c.EVSEsSince(since, client.SyncOptions{Cursor: cursor})
//		for e, err := range changes.All(ctx) {
//			if err != nil {
//				log.Fatal(err)
//			}
//			copy[e.UID] = e // REMOVED EVSEs come too
//		}
//		cursor = changes.Cursor() // keep it with since
//		time.Sleep(10 * time.Second)
//	}
//
// A webhook receiver that was down asks for the events it missed again with
// ReplayWebhook (they keep their ids, so its deduplication drops the ones it has), and
// checks its endpoint with TestWebhook.
//
// # Key administration
//
// A client whose API key holds ScopeKeys hands out keys. CreateAPIKey returns the new
// key's secret, the only time it is shown; RotateAPIKey gives a key a new secret while
// the old one keeps working for an overlap; RevokeAPIKey ends every secret of a key;
// APIKeys lists the keys with their last use. Creation and rotation are sent once and
// never retried: the service keeps no answer that would hold a secret.
//
//	key, secret, err := admin.CreateAPIKey(ctx, client.NewAPIKey{Name: "emsp-acme",
//		Scopes: []client.Scope{client.ScopeInventoryRead, client.ScopeWebhooks}})
//	// Hand secret to the key's holder. Later, a new secret; the old one works for a day:
//	_, secret, err = admin.RotateAPIKey(ctx, key.Name, client.KeyRotation{Overlap: new(24 * time.Hour)})
//
// A key without the scope an operation needs fails with ErrForbidden, code
// insufficient_scope, and Error.Scope names the scope it lacks.
//
// # Idempotency
//
// Every POST but CreateAPIKey and RotateAPIKey (see Key administration) carries an
// Idempotency-Key: one the client makes up per call (a random UUID) and sends again on
// each retry of that call, or the caller's own, given with WithIdempotencyKey. The
// service keeps the first answer to a key for 24 hours and gives it again to a repeat
// with the same body, with Response.Replayed set, instead of creating a second EVSE or
// connector. So CreateEVSE and CreateConnector are retried like reads, and a retry
// after a lost answer cannot create twice. Pass your own key to make a call safe to
// repeat across restarts of your program; a key reused with another body fails with
// ErrIdempotencyKeyReused.
//
// # Request IDs and rate limits
//
// Every answer carries X-Request-Id and, for an accepted API key, X-RateLimit-Limit,
// X-RateLimit-Remaining and X-RateLimit-Reset. Pass WithResponse(&r) to any call to get
// them in a Response (r.RequestID, r.RateLimit), together with the status, the ETag, the
// Location of a created EVSE and whether the answer was replayed; it is filled in when
// the call fails with an *Error too. An *Error carries the same RequestID and RateLimit
// itself:
//
//	var r client.Response
//	evse, _, err := c.EVSE(ctx, 1002, client.WithResponse(&r))
//	if r.RateLimit != nil && r.RateLimit.Remaining < 10 {
//		time.Sleep(r.RateLimit.Reset) // let the window reset
//	}
//
// # Errors
//
// Every answer other than the operation's success is an *Error with the status, the
// stable Code, the Message, the offending Param and the RequestID to quote to support.
// errors.Is matches it against ErrInvalid (400), ErrForbidden (403), ErrNotFound (404),
// ErrConflict (409), ErrPreconditionFailed (412), ErrIdempotencyKeyReused (422),
// ErrRateLimited (429) and ErrUnavailable (502, 503, 504). Network failures are returned wrapped, so errors.Is and
// errors.As see the underlying net and context errors.
//
// # Retries
//
// Reads, PUTs and DELETEs, POSTs (which carry an Idempotency-Key) and PATCHes made
// conditional with IfMatch are repeated on network errors and on 429, 502, 503 and 504
// answers, with exponential backoff and full jitter, honouring Retry-After, up to
// DefaultRetryPolicy.MaxAttempts attempts (see RetryPolicy and WithRetry). A PATCH
// without IfMatch, CreateAPIKey and RotateAPIKey are sent once. Waits end when the
// context is done.
//
// # Concurrency control
//
// EVSE and every call that changes an EVSE return the EVSE's ETag. Pass it to the next
// change (UpdateConnector, UpdateEVSE, RemoveEVSE, CreateConnector, DeleteConnector) with
// IfMatch: if somebody changed the EVSE in between, the change fails with
// ErrPreconditionFailed and changes nothing.
package client
