package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/chargenet/chargenet/postgres"
	"github.com/chargenet/chargenet/sqlite"
)

// locations is how many locations hold the generated EVSEs.
const locations = 100

// evseUID is the uid of the generated EVSE of charge box i (from 0).
func evseUID(i int) int64 { return 100001 + int64(i) }

// gen writes the import file of N charge boxes from FIRST, one AC EVSE each, on
// standard output.
func gen(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: ocpp gen N FIRST")
	}
	n, err1 := strconv.Atoi(args[0])
	first, err2 := strconv.ParseInt(args[1], 10, 64)
	if err1 != nil || err2 != nil || n < 1 || first < 1 {
		return fmt.Errorf("the box count and the first id must be positive integers")
	}
	return writeInventory(os.Stdout, n, first, time.Now())
}

// writeInventory writes the import file of n charge boxes from first, one AC EVSE each
// at one of the locations, all last updated at now.
func writeInventory(w io.Writer, n int, first int64, now time.Time) error {
	now = now.UTC().Truncate(time.Second)
	var out struct {
		Locations []any `json:"locations"`
		EVSEs     []any `json:"evses"`
	}
	for i := range locations {
		l := chargenet.Location{ID: fmt.Sprintf("BOX-LOC-%03d", i+1), Name: fmt.Sprintf("Box site %d", i+1), Address: "Hafenstrasse 1",
			City: "Hamburg", PostalCode: "20457", Country: "DEU", Latitude: 53.54, Longitude: 9.98, TimeZone: "Europe/Berlin",
			LastUpdated: now, Version: 1}
		out.Locations = append(out.Locations, wire.Location(&l))
	}
	for i := range n {
		uid := evseUID(i)
		e := chargenet.EVSE{UID: uid, EvseID: fmt.Sprintf("DE*CNT*E%d*1", uid), ChargeboxID: first + int64(i),
			LocationID: fmt.Sprintf("BOX-LOC-%03d", i%locations+1), Status: chargenet.StatusAvailable, LastUpdated: now, Version: 1,
			Connectors: []chargenet.Connector{{ID: 1, Standard: chargenet.StandardIEC62196T2, Format: chargenet.FormatSocket,
				PowerType: chargenet.PowerAC3Phase, MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400, TariffIDs: []string{}}}}
		out.EVSEs = append(out.EVSEs, wire.EVSE(&e))
	}
	return json.NewEncoder(w).Encode(out)
}

// register registers N charge boxes from FIRST, identity their id, all with PASSWORD.
func register(args []string) error {
	if len(args) != 4 {
		return fmt.Errorf("usage: ocpp register DATABASE N FIRST PASSWORD")
	}
	n, err1 := strconv.Atoi(args[1])
	first, err2 := strconv.ParseInt(args[2], 10, 64)
	if err1 != nil || err2 != nil || n < 1 || first < 1 {
		return fmt.Errorf("the box count and the first id must be positive integers")
	}
	ctx := context.Background()
	var store interface {
		RegisterChargebox(context.Context, int64, string, [32]byte, time.Time) (bool, error)
		Close() error
	}
	var err error
	if strings.HasPrefix(args[0], "sqlite:") {
		store, err = sqlite.Open(ctx, strings.TrimPrefix(args[0], "sqlite:"))
	} else {
		store, err = postgres.Open(ctx, args[0], postgres.Options{})
	}
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()
	hash := chargenet.HashChargeboxPassword(args[3])
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				id := first + int64(i)
				if _, err := store.RegisterChargebox(ctx, id, strconv.FormatInt(id, 10), hash, time.Now()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "registered %d charge boxes in %s\n", n, time.Since(start).Round(time.Millisecond))
	return nil
}
