//go:build ignore

// enum-check fails when a contract dropped an enum of a released one, turned it into
// another type or removed one of its values, anywhere in the document (webhook payloads
// included): a client generated from the release would no longer compile. Used by
// make breaking beside oasdiff:
//
//	go run scripts/enum-check.go RELEASED CURRENT [ACCEPTED]
//
// ACCEPTED lists findings accepted as history, one per line exactly as this program
// prints them after "enum-check: "; other lines (comments, oasdiff's) are not read.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/chargenet/chargenet/internal/enumcheck"
	"github.com/getkin/kin-openapi/openapi3"
)

const prefix = "enum-check: "

func main() {
	if len(os.Args) < 3 || len(os.Args) > 4 {
		fmt.Fprintln(os.Stderr, "usage: go run scripts/enum-check.go RELEASED CURRENT [ACCEPTED]")
		os.Exit(2)
	}
	accepted := map[string]bool{}
	if len(os.Args) == 4 {
		f, err := os.Open(os.Args[3])
		if err != nil {
			fail(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				accepted[line] = true
			}
		}
		if err := sc.Err(); err != nil {
			fail(err)
		}
		f.Close()
	}
	released, current := load(os.Args[1]), load(os.Args[2])
	broken, known := 0, 0
	for _, f := range enumcheck.Compare(released, current) {
		if accepted[f.String()] {
			known++
			continue
		}
		broken++
		fmt.Println(prefix + f.String())
	}
	if broken > 0 {
		fmt.Printf("enum-check: %d enum(s) of %s broken in %s: a client generated from the release no longer compiles\n", broken, os.Args[1], os.Args[2])
		os.Exit(1)
	}
	fmt.Printf("enum-check: every enum of %s holds in %s (%d accepted as history)\n", os.Args[1], os.Args[2], known)
}

func load(path string) *openapi3.T {
	doc, err := openapi3.NewLoader().LoadFromFile(path)
	if err != nil {
		fail(err)
	}
	return doc
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "enum-check:", err)
	os.Exit(2)
}
