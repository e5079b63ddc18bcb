// Command ocpp is the load tool of the OCPP benchmark (bench/ocpp.sh): charge boxes
// simulated on raw WebSockets, thousands of them in one process.
//
//	ocpp gen N FIRST                   writes an import file to stdout: charge boxes FIRST
//	                                   to FIRST+N-1, one EVSE with one connector each
//	ocpp register DATABASE N FIRST PASSWORD
//	                                   registers those boxes for OCPP (identity = id)
//	ocpp run [flags]                   the measurement against a running server; prints
//	                                   "name<TAB>value" lines (see measure)
//	ocpp report RESULTS.md SQLITE.tsv [POSTGRES.tsv]
//	                                   writes the OCPP section of RESULTS.md from the
//	                                   measurements, replacing the one there
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ocpp:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: ocpp gen|register|run|report ARGS")
	}
	switch args[0] {
	case "gen":
		return gen(args[1:])
	case "register":
		return register(args[1:])
	case "run":
		return measure(args[1:])
	case "report":
		return report(args[1:])
	}
	return fmt.Errorf("unknown command %q", args[0])
}
