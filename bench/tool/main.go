// Command tool prepares benchmark inputs.
//
//	tool gen N [SEED]                 writes an import file of N generated locations to stdout
//	tool id I                         prints the id of the generated location at position I
//	tool cursor SECRET locations KEY  prints a cursor for the page after location KEY
//	tool change-cursors URL KEY SINCE DEPTH...
//	                                  walks the location change list since SINCE and prints
//	                                  "DEPTH CURSOR" for the page starting at each depth
//	tool port                         prints a free TCP port on 127.0.0.1
//	tool events URL KEY LIMIT         pages through the whole event log and prints events,
//	                                  pages, seconds and events per second
//	tool writer URL KEY INGEST_KEY RATE DURATION [writes|reads]
//	                                  sends the mixed workload's steady write stream (PATCHes
//	                                  and status notifications; reads: GETs of EVSEs on the
//	                                  same schedule) and prints what it achieved
//	tool report RAW RSS CONNS DURATION ROUNDS DEEP [WRITES WRITE_RATE]
//	                                  prints bench/run.sh's results tables (markdown)
//	tool scale-report RAW RSS IMPORT DBSIZE N [PG_IMPORT PG_DBSIZE PG_RSS PG_VACUUM]
//	                                  prints bench/scale.sh's results tables (markdown)
//	tool ocpi-register VERSIONS_URL TOKEN_A
//	                                  registers an OCPI eMSP with chargenet and prints the
//	                                  credentials token it got
//	tool ocpi-link LOCATIONS_URL TOKEN OFFSET LIMIT
//	                                  prints the Link (with its position) of an OCPI page
//	tool ocpi-ids N SEED POSITION...  prints "POSITION ID" for each position of the OCPI
//	                                  Locations list of tool gen N SEED once imported
//	tool ocpi-lag URL KEY VERSIONS_URL TOKEN_A RATE DURATION DRAIN
//	                                  measures the lag of OCPI pushes at RATE changes/s
//	tool ocpi-report RAW CONNS DURATION ROUNDS DEEP [WRITES WRITE_RATE]
//	                                  prints bench/ocpi.sh's results tables (markdown)
//
// Generated locations are deterministic for a seed: ids LOC-0000001, LOC-0000002, ...
// (so the id at depth d is known without reading the database), with names, cities,
// coordinates and time zones drawn from a seeded generator.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/chargenet/chargenet"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tool:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: tool gen N [SEED] | tool cursor SECRET LIST KEY")
	}
	switch args[0] {
	case "gen":
		if len(args) < 2 {
			return fmt.Errorf("usage: tool gen N [SEED]")
		}
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 0 {
			return fmt.Errorf("count %q must be a whole number", args[1])
		}
		seed := uint64(1)
		if len(args) > 2 {
			if seed, err = strconv.ParseUint(args[2], 10, 64); err != nil {
				return fmt.Errorf("SEED %q: %w", args[2], err)
			}
		}
		return gen(n, seed)
	case "id":
		if len(args) != 2 {
			return fmt.Errorf("usage: tool id I")
		}
		i, err := strconv.Atoi(args[1])
		if err != nil || i < 0 {
			return fmt.Errorf("position %q must be a whole number", args[1])
		}
		fmt.Println(ID(i))
		return nil
	case "writer":
		return writerArgs(args[1:])
	case "events":
		if len(args) != 4 {
			return fmt.Errorf("usage: tool events URL KEY LIMIT")
		}
		limit, err := strconv.Atoi(args[3])
		if err != nil || limit < 1 {
			return fmt.Errorf("LIMIT %q must be a positive whole number", args[3])
		}
		return readEvents(args[1], args[2], limit)
	case "port":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer func() { _ = ln.Close() }()
		fmt.Println(ln.Addr().(*net.TCPAddr).Port)
		return nil
	case "report":
		if len(args) != 7 && len(args) != 9 {
			return fmt.Errorf("usage: tool report RAW RSS CONNS DURATION ROUNDS DEEP [WRITES WRITE_RATE]")
		}
		writes, writeRate := "", ""
		if len(args) == 9 {
			writes, writeRate = args[7], args[8]
		}
		if err := report(os.Stdout, args[1], args[2], args[3], args[4], args[5], args[6], writes, writeRate); err != nil || len(args) == 7 {
			return err
		}
		return scaleOutReport(os.Stdout, args[1], args[7], args[3], args[8])
	case "scale-report":
		if len(args) != 6 && len(args) != 10 {
			return fmt.Errorf("usage: tool scale-report RAW RSS IMPORT DBSIZE N [PG_IMPORT PG_DBSIZE PG_RSS PG_VACUUM]")
		}
		if err := scaleReport(os.Stdout, args[1], args[2], args[3], args[4], args[5]); err != nil || len(args) == 6 {
			return err
		}
		return scaleReportPG(os.Stdout, args[1], args[8], args[6], args[7], args[5], args[9])
	case "change-cursors":
		if len(args) < 5 {
			return fmt.Errorf("usage: tool change-cursors URL KEY SINCE DEPTH [DEPTH ...]")
		}
		var depths []int
		for _, a := range args[4:] {
			d, err := strconv.Atoi(a)
			if err != nil || d < 1 {
				return fmt.Errorf("depth %q must be a positive whole number", a)
			}
			depths = append(depths, d)
		}
		return changeCursors(args[1], args[2], args[3], depths)
	case "ocpi-register", "ocpi-link", "ocpi-ids", "ocpi-lag":
		return ocpiArgs(args)
	case "ocpi-report":
		if len(args) != 6 && len(args) != 8 {
			return fmt.Errorf("usage: tool ocpi-report RAW CONNS DURATION ROUNDS DEEP [WRITES WRITE_RATE]")
		}
		writes, writeRate := "", ""
		if len(args) == 8 {
			writes, writeRate = args[6], args[7]
		}
		return ocpiOnlyReport(os.Stdout, args[1], args[2], args[3], args[4], args[5], writes, writeRate)
	case "cursor":
		if len(args) != 4 || args[2] != chargenet.ListLocations {
			return fmt.Errorf("usage: tool cursor SECRET locations KEY")
		}
		return cursor(args[1], args[3])
	}
	return fmt.Errorf("unknown command %q", args[0])
}

type city struct {
	name, postal, country, zone string
	lat, lon                    float64
}

var cities = []city{
	{"Berlin", "10115", "DEU", "Europe/Berlin", 52.52, 13.405},
	{"Hamburg", "20095", "DEU", "Europe/Berlin", 53.55, 9.99},
	{"Amsterdam", "1012", "NLD", "Europe/Amsterdam", 52.37, 4.89},
	{"Paris", "75001", "FRA", "Europe/Paris", 48.857, 2.352},
	{"Madrid", "28001", "ESP", "Europe/Madrid", 40.417, -3.704},
	{"Oslo", "0150", "NOR", "Europe/Oslo", 59.913, 10.752},
	{"Vienna", "1010", "AUT", "Europe/Vienna", 48.208, 16.373},
	{"Warsaw", "00-001", "POL", "Europe/Warsaw", 52.23, 21.012},
}

// ID returns the id of the generated location at zero-based position i.
func ID(i int) string { return fmt.Sprintf("LOC-%07d", i+1) }

// generate calls yield with each of the n locations of seed in turn, as the import file
// holds them.
func generate(n int, seed uint64, yield func(loc map[string]any) error) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	updated := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		c := cities[rng.IntN(len(cities))]
		loc := map[string]any{
			"id":          ID(i),
			"name":        fmt.Sprintf("%s charging hub %d", c.name, i+1),
			"address":     fmt.Sprintf("Street %d", 1+rng.IntN(400)),
			"city":        c.name,
			"postalCode":  c.postal,
			"country":     c.country,
			"coordinates": map[string]float64{"latitude": c.lat + (rng.Float64()-0.5)/10, "longitude": c.lon + (rng.Float64()-0.5)/10},
			"timeZone":    c.zone,
			"evseUids":    []int{},
			"lastUpdated": updated.Add(time.Duration(rng.IntN(86400*300)) * time.Second).Format(time.RFC3339),
		}
		if err := yield(loc); err != nil {
			return err
		}
	}
	return nil
}

func gen(n int, seed uint64) error {
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	if _, err := w.WriteString(`{"evses": [], "locations": [`); err != nil {
		return err
	}
	first := true
	err := generate(n, seed, func(loc map[string]any) error {
		b, err := json.Marshal(loc)
		if err != nil {
			return err
		}
		if !first {
			if err := w.WriteByte(','); err != nil {
				return err
			}
		}
		first = false
		_, err = w.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	if _, err := w.WriteString("]}\n"); err != nil {
		return err
	}
	return w.Flush()
}

// cursor prints the next_cursor the service would give on a page ending at key: it
// signs, with the service's own codec and secret, the position after key.
func cursor(secret, key string) error {
	codec := chargenet.NewCursorCodec([]byte(secret))
	page, err := chargenet.Paginate(context.Background(), codec, chargenet.ListLocations, "", 1,
		func(context.Context, chargenet.Seek[string]) ([]string, error) { return []string{key, key + "~"}, nil },
		func(s *string) string { return *s })
	if err != nil {
		return err
	}
	fmt.Println(page.Next)
	return nil
}
