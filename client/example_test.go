package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/chargenet/chargenet/client"
)

// Each example runs against the real service, started in-process with the demo data
// (120 locations, 40 EVSEs) and accepting demoKey.

func Example() {
	srv, err := startDemoServer(serverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()

	c, err := client.New(srv.URL, client.WithAPIKey(demoKey), client.WithUserAgent("example-app/1.0"))
	if err != nil {
		log.Fatal(err)
	}

	// Read an EVSE with the ETag of its current state.
	evse, etag, err := c.EVSE(ctx, 1002)
	if err != nil {
		log.Fatal(err)
	}
	for _, conn := range evse.Connectors {
		fmt.Printf("EVSE %d connector %d: %s %s %.0f kW\n", evse.UID, conn.ID, conn.Standard, conn.PowerType, conn.MaxElectricPower)
	}

	// Update one field of a connector, only if nobody changed the EVSE since the read.
	evse, _, err = c.UpdateConnector(ctx, 1002, 2, client.ConnectorPatch{MaxElectricPower: new(300.0)}, client.IfMatch(etag))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("connector 2 now delivers %.0f kW\n", evse.Connector(2).MaxElectricPower)

	// The old ETag no longer matches: the update is refused and changes nothing.
	_, _, err = c.UpdateConnector(ctx, 1002, 2, client.ConnectorPatch{MaxElectricPower: new(100.0)}, client.IfMatch(etag))
	fmt.Println("stale ETag refused:", errors.Is(err, client.ErrPreconditionFailed))

	// Walk every location; the iterator follows the cursors.
	n := 0
	for _, err := range c.Locations(ctx, client.ListOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		n++
	}
	fmt.Println("locations:", n)
	// Output:
	// EVSE 1002 connector 1: CHADEMO DC 50 kW
	// EVSE 1002 connector 2: IEC_62196_T1_COMBO DC 350 kW
	// connector 2 now delivers 300 kW
	// stale ETag refused: true
	// locations: 120
}

func ExampleNew() {
	srv, err := startDemoServer(serverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := client.New(srv.URL,
		client.WithAPIKey(demoKey),
		client.WithHTTPClient(&http.Client{Timeout: 10 * time.Second}),
		client.WithUserAgent("fleet-sync/1.4"), // sent as "chargenet-go/<Version> fleet-sync/1.4"
		client.WithRetry(client.RetryPolicy{MaxAttempts: 3, BaseDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second}),
	)
	if err != nil {
		log.Fatal(err)
	}
	loc, err := c.Location(context.Background(), "LOC-0002")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s, %s %s (%s), EVSEs %v\n", loc.ID, loc.Name, loc.PostalCode, loc.City, loc.Country, loc.EVSEUIDs)
	// Output:
	// LOC-0002: Amsterdam Charging Hub 1, 1012 Amsterdam (NLD), EVSEs [1003 1004]
}

func ExampleClient_Locations() {
	srv, err := startDemoServer(serverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithAPIKey(demoKey))
	if err != nil {
		log.Fatal(err)
	}

	// Count the locations per country, 50 per request.
	perCountry := map[string]int{}
	for loc, err := range c.Locations(context.Background(), client.ListOptions{PageSize: 50}) {
		if err != nil {
			log.Fatal(err)
		}
		perCountry[loc.Country]++
	}
	fmt.Println(perCountry)
	// Output:
	// map[AUT:24 DEU:24 FRA:24 NLD:24 NOR:24]
}

func ExampleClient_LocationsPage() {
	srv, err := startDemoServer(serverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithAPIKey(demoKey))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	// Keep the cursor to continue later (for example in the next batch job).
	page, err := c.LocationsPage(ctx, client.PageRequest{Limit: 3})
	if err != nil {
		log.Fatal(err)
	}
	for _, loc := range page.Items {
		fmt.Println(loc.ID, loc.City)
	}
	cursor := page.NextCursor

	page, err = c.LocationsPage(ctx, client.PageRequest{Cursor: cursor, Limit: 3})
	if err != nil {
		log.Fatal(err)
	}
	for _, loc := range page.Items {
		fmt.Println(loc.ID, loc.City)
	}
	fmt.Println("more:", page.HasMore, "first page:", page.PreviousCursor == "")
	// Output:
	// LOC-0001 Berlin
	// LOC-0002 Amsterdam
	// LOC-0003 Paris
	// LOC-0004 Oslo
	// LOC-0005 Vienna
	// LOC-0006 Berlin
	// more: true first page: false
}

func ExampleClient_EVSEs() {
	srv, err := startDemoServer(serverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithAPIKey(demoKey))
	if err != nil {
		log.Fatal(err)
	}

	// List the connectors in service that report an error.
	for evse, err := range c.EVSEs(context.Background(), client.ListOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		for _, conn := range evse.Connectors {
			if conn.Error != nil && !conn.Deleted() {
				fmt.Printf("%s connector %d: %s\n", evse.EVSEID, conn.ID, conn.Error.Code)
			}
		}
		if evse.UID == 1010 {
			break // stop early: no further page is fetched
		}
	}
	// Output:
	// DE*CNT*E1003*1 connector 2: GroundFailure
	// DE*CNT*E1004*1 connector 1: GroundFailure
	// DE*CNT*E1008*1 connector 4: HighTemperature
	// DE*CNT*E1010*1 connector 2: HighTemperature
}

func ExampleClient_EVSE() {
	srv, err := startDemoServer(serverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithAPIKey(demoKey))
	if err != nil {
		log.Fatal(err)
	}

	evse, _, err := c.EVSE(context.Background(), 1004)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(evse.EVSEID, evse.Status, "at", evse.LocationID)
	for _, conn := range evse.Connectors {
		fmt.Printf("connector %d: %s %s, deleted: %v\n", conn.ID, conn.Standard, conn.Format, conn.Deleted())
	}
	// Output:
	// DE*CNT*E1004*1 BLOCKED at LOC-0002
	// connector 1: GBT_DC CABLE, deleted: false
	// connector 2: IEC_62196_T2_COMBO CABLE, deleted: false
	// connector 3: CHADEMO CABLE, deleted: false
	// connector 4: IEC_62196_T1_COMBO CABLE, deleted: true
}

func ExampleClient_UpdateConnector() {
	srv, err := startDemoServer(serverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithAPIKey(demoKey))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	// Read-modify-write with optimistic concurrency: raise the power of connector 1 of
	// EVSE 1006 by 10%, starting over if somebody changed the EVSE in between.
	for {
		evse, etag, err := c.EVSE(ctx, 1006)
		if err != nil {
			log.Fatal(err)
		}
		power := evse.Connector(1).MaxElectricPower * 1.1
		evse, _, err = c.UpdateConnector(ctx, 1006, 1, client.ConnectorPatch{MaxElectricPower: &power}, client.IfMatch(etag))
		if errors.Is(err, client.ErrPreconditionFailed) {
			continue // changed since the read: read again
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("connector 1 of EVSE %d: %.1f kW\n", evse.UID, evse.Connector(1).MaxElectricPower)
		break
	}
	// Output:
	// connector 1 of EVSE 1006: 55.0 kW
}

func ExampleClient_EventTypes() {
	srv, err := startDemoServer(serverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithAPIKey(demoKey))
	if err != nil {
		log.Fatal(err)
	}

	types, err := c.EventTypes(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range types {
		fmt.Println(t.Type, t.APIVersions, "latest", t.Latest)
	}
	// Output:
	// chargebox.connected [1.0] latest 1.0
	// chargebox.disconnected [1.0] latest 1.0
	// evse.connector.created [1.0 1.1] latest 1.1
	// evse.connector.deleted [1.0 1.1] latest 1.1
	// evse.connector.updated [1.0 1.1] latest 1.1
	// evse.created [1.0 1.1] latest 1.1
	// evse.removed [1.0 1.1] latest 1.1
	// evse.status.changed [1.0 1.1 1.2] latest 1.2
	// evse.updated [1.0 1.1] latest 1.1
	// location.created [1.0 1.1] latest 1.1
	// location.deleted [1.0 1.1] latest 1.1
	// location.updated [1.0 1.1] latest 1.1
	// webhook.ping [1.0 1.1] latest 1.1
}

func ExampleClient_CreateEVSE() {
	srv, err := startDemoServer(serverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithAPIKey(demoKey))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	loc, created, err := c.PutLocation(ctx, client.Location{
		ID: "LOC-9001", Name: "Depot Hafen", Address: "Hafenstraße 1", City: "Hamburg",
		Country: "DEU", Latitude: 53.5413, Longitude: 9.9842, TimeZone: "Europe/Berlin",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("location", loc.ID, "created:", created)

	// The key makes the call safe to repeat: the same key and EVSE give the first
	// answer again and create nothing.
	e := client.NewEVSE{
		EVSEID: "DE*ABC*E9001*1", ChargeboxID: 9001, LocationID: loc.ID,
		Connectors: []client.NewConnector{{
			Standard: client.StandardIEC62196T2, Format: client.FormatSocket, PowerType: client.PowerAC3Phase,
			MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400,
		}},
	}
	var r client.Response
	evse, etag, err := c.CreateEVSE(ctx, e, client.WithIdempotencyKey("depot-hafen-evse-1"), client.WithResponse(&r))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.StatusCode, r.Location == fmt.Sprintf("/v2/evses/%d", evse.UID), evse.Status, "replayed:", r.Replayed)
	again, _, err := c.CreateEVSE(ctx, e, client.WithIdempotencyKey("depot-hafen-evse-1"), client.WithResponse(&r))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.StatusCode, again.UID == evse.UID, "replayed:", r.Replayed)

	// Commission it, then decommission it and delete the location.
	evse, _, err = c.UpdateEVSE(ctx, evse.UID, client.EVSEPatch{Status: new(client.StatusAvailable)}, client.IfMatch(etag))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(evse.Status)
	if evse, _, err = c.RemoveEVSE(ctx, evse.UID); err != nil {
		log.Fatal(err)
	}
	fmt.Println(evse.Status)
	if loc, err = c.DeleteLocation(ctx, loc.ID); err != nil {
		log.Fatal(err)
	}
	fmt.Println("location deleted:", loc.Deleted())
	// Output:
	// location LOC-9001 created: true
	// 201 true PLANNED replayed: false
	// 201 true replayed: true
	// AVAILABLE
	// REMOVED
	// location deleted: true
}

func ExampleError() {
	srv, err := startDemoServer(serverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithAPIKey(demoKey))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	_, _, err = c.EVSE(ctx, 9999)
	fmt.Println("not found:", errors.Is(err, client.ErrNotFound))

	// A DC standard on an AC connector breaks a connector rule.
	_, _, err = c.UpdateConnector(ctx, 1001, 1, client.ConnectorPatch{Standard: new(client.StandardChademo)})
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code, apiErr.Param, errors.Is(err, client.ErrInvalid))
		fmt.Println(apiErr.Message)
	}

	_, _, err = c.UpdateConnector(ctx, 1004, 4, client.ConnectorPatch{MaxVoltage: new(400.0)})
	fmt.Println("deleted connector:", errors.Is(err, client.ErrConflict))
	// Output:
	// not found: true
	// 400 invalid_connector standard true
	// standard CHADEMO is a DC standard but the connector has powerType AC_3_PHASE
	// deleted connector: true
}

func ExampleClient_EVSEsSince() {
	srv, err := startDemoServer(serverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithAPIKey(demoKey))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	since := time.Now()
	power := 150.0
	if _, _, err := c.UpdateConnector(ctx, 1002, 1, client.ConnectorPatch{MaxElectricPower: &power}); err != nil {
		log.Fatal(err)
	}

	// Read what changed since a time, and keep the cursor.
	changes := c.EVSEsSince(since, client.SyncOptions{})
	for e, err := range changes.All(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("changed:", e.UID, e.Connectors[0].MaxElectricPower)
	}
	cursor := changes.Cursor() // store it with since

	// Later: poll from the cursor, with the same since. Nothing committed after the
	// first read is missed.
	power = 175
	if _, _, err := c.UpdateConnector(ctx, 1001, 1, client.ConnectorPatch{MaxElectricPower: &power}); err != nil {
		log.Fatal(err)
	}
	later := c.EVSEsSince(since, client.SyncOptions{Cursor: cursor})
	for e, err := range later.All(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("changed later:", e.UID, e.Connectors[0].MaxElectricPower)
	}
	// Output:
	// changed: 1002 150
	// changed later: 1001 175
}

func ExampleClient_CreateAPIKey() {
	srv, err := startDemoServer(serverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	adminKey, err := srv.newKey("key-admin", "keys") // as `chargenet apikey create --scope keys` makes one
	if err != nil {
		log.Fatal(err)
	}
	admin, err := client.New(srv.URL, client.WithAPIKey(adminKey))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	// A key for a partner that reads the network and follows it by webhook. The answer
	// is the only time its secret is shown.
	key, secret, err := admin.CreateAPIKey(ctx, client.NewAPIKey{
		Name: "emsp-acme", Scopes: []client.Scope{client.ScopeInventoryRead, client.ScopeWebhooks},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(key.Name, key.Scopes)

	// The partner reads with it, and cannot change anything.
	partner, err := client.New(srv.URL, client.WithAPIKey(secret))
	if err != nil {
		log.Fatal(err)
	}
	if _, _, err := partner.EVSE(ctx, 1001); err != nil {
		log.Fatal(err)
	}
	_, _, err = partner.UpdateEVSE(ctx, 1001, client.EVSEPatch{Status: new(client.StatusInoperative)})
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code, apiErr.Scope)
	}

	// A new secret that replaces the old one at once, then the end of the key.
	if _, _, err := admin.RotateAPIKey(ctx, key.Name, client.KeyRotation{Overlap: new(time.Duration(0))}); err != nil {
		log.Fatal(err)
	}
	_, _, err = partner.EVSE(ctx, 1001)
	fmt.Println("old secret refused:", errors.Is(err, client.ErrForbidden))
	if err := admin.RevokeAPIKey(ctx, key.Name); err != nil {
		log.Fatal(err)
	}
	for k, err := range admin.APIKeys(ctx, client.ListOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("active:", k.Name, k.Scopes)
	}
	// Output:
	// emsp-acme [inventory:read webhooks]
	// 403 insufficient_scope inventory:write
	// old secret refused: true
	// active: key-admin [keys]
}
