//go:build ignore

// docs-ops lists the operations of an OpenAPI document and checks that a DOM rendered by
// Swagger UI (Chromium's --dump-dom of /docs/) shows every one of them. Used by
// scripts/docs-check.sh:
//
//	go run scripts/docs-ops.go openapi/openapi.yaml            # list: METHOD path operationId tags
//	go run scripts/docs-ops.go openapi/openapi.yaml dom.html   # check the rendered DOM
//
// Swagger UI renders each operation, once under each of its tags, as
//
//	<div class="opblock opblock-patch ..." id="operations-EVSEs-updateConnector">
//	  ... <span class="opblock-summary-method">PATCH</span>
//	  ... <span class="opblock-summary-path" data-path="/v2/evses/{uid}/connectors/{connectorId}">
//
// so an operation counts as shown when an element with that id exists and holds its HTTP
// method and its path. The check also fails when Swagger UI shows its error box (a spec it
// could not parse or resolve), and prints what the box says.
package main

import (
	"context"
	"fmt"
	"html"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

type op struct{ method, path, id, tag string }

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: go run scripts/docs-ops.go SPEC [DOM.html]")
		os.Exit(2)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(os.Args[1])
	if err != nil {
		fail("loading %s: %v", os.Args[1], err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		fail("%s is not a valid OpenAPI document: %v", os.Args[1], err)
	}
	var ops []op
	for _, p := range doc.Paths.InMatchingOrder() {
		for method, o := range doc.Paths.Value(p).Operations() {
			if o.OperationID == "" {
				fail("%s %s has no operationId", method, p)
			}
			tags := o.Tags
			if len(tags) == 0 {
				tags = []string{"default"} // what Swagger UI groups untagged operations under
			}
			for _, t := range tags {
				ops = append(ops, op{strings.ToUpper(method), p, o.OperationID, t})
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].path != ops[j].path {
			return ops[i].path < ops[j].path
		}
		return ops[i].method < ops[j].method
	})
	if len(ops) == 0 {
		fail("%s has no operation", os.Args[1])
	}
	if len(os.Args) == 2 {
		for _, o := range ops {
			fmt.Printf("%s %s %s %s\n", o.method, o.path, o.id, o.tag)
		}
		return
	}

	raw, err := os.ReadFile(os.Args[2])
	if err != nil {
		fail("%v", err)
	}
	dom := string(raw)
	problems := 0
	if box := errorBox(dom); box != "" {
		fmt.Printf("  FAIL  Swagger UI shows errors: %s\n", box)
		problems++
	}
	for _, want := range []string{doc.Info.Title, doc.Info.Version} {
		if !strings.Contains(dom, html.EscapeString(want)) {
			fmt.Printf("  FAIL  the page does not show %q (info)\n", want)
			problems++
		}
	}
	var missing []string
	for _, o := range ops {
		block, ok := opblock(dom, "operations-"+deepLinkID(o.tag)+"-"+deepLinkID(o.id))
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("%s %s (%s, tag %s): no element with id operations-%s-%s", o.method, o.path, o.id, o.tag, o.tag, o.id))
		case !strings.Contains(block, `opblock-summary-method">`+o.method+"<"):
			missing = append(missing, fmt.Sprintf("%s %s (%s): opblock without method %s", o.method, o.path, o.id, o.method))
		case !strings.Contains(block, `data-path="`+html.EscapeString(o.path)+`"`):
			missing = append(missing, fmt.Sprintf("%s %s (%s): opblock without path %s", o.method, o.path, o.id, o.path))
		default:
			fmt.Printf("  ok    %-6s %-42s %s\n", o.method, o.path, o.id)
		}
	}
	for _, m := range missing {
		fmt.Printf("  FAIL  missing from the rendered page: %s\n", m)
	}
	problems += len(missing)
	fmt.Printf("docs-dom: %d passed, %d failed\n", len(ops)-len(missing), problems)
	if problems > 0 {
		os.Exit(1)
	}
}

// deepLinkID is how Swagger UI turns a tag or operationId into part of an element id
// (spaces become underscores; our names need no further escaping).
func deepLinkID(s string) string { return strings.ReplaceAll(s, " ", "_") }

// opblock returns the markup from the element with the given id to the next opblock.
func opblock(dom, id string) (string, bool) {
	i := strings.Index(dom, `id="`+id+`"`)
	if i < 0 {
		return "", false
	}
	// The element starts before its id attribute: go back to its "<".
	start := strings.LastIndex(dom[:i], "<")
	rest := dom[i+len(id):]
	if j := strings.Index(rest, `id="operations-`); j >= 0 {
		rest = rest[:j]
	}
	return dom[start:i] + `id="` + id + `"` + rest, true
}

var tags = regexp.MustCompile(`<[^>]+>`)

// errorBox returns the text of Swagger UI's error box, if the page shows one.
func errorBox(dom string) string {
	i := strings.Index(dom, `class="errors-wrapper"`)
	if i < 0 {
		return ""
	}
	box := dom[i:]
	if j := strings.Index(box, `class="information-container`); j >= 0 {
		box = box[:j]
	}
	if len(box) > 4000 {
		box = box[:4000]
	}
	return strings.Join(strings.Fields(html.UnescapeString(tags.ReplaceAllString(`<`+box, " "))), " ")
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "docs-ops: "+format+"\n", args...)
	os.Exit(1)
}
