// Package enumcheck finds the enums of a released contract that a later contract
// dropped (an x-extensible-enum included), turned into another type, or took values
// from. After such a change a client generated from the release and generated again no
// longer compiles: its enum constants are gone, even where the wire format still fits.
//
// It compares every schema of the two documents at the same place: the components, and
// the inline schemas of the operations and of their callbacks (the webhook payloads),
// which oasdiff does not compare. scripts/enum-check.go runs it in make breaking.
package enumcheck

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Finding is one enum of the released contract that the current one broke.
type Finding struct {
	Where string // the schema's place: "#/components/schemas/StatusChangedData.source"
	What  string // what changed: "the enum [chargebox operator] is dropped"
}

func (f Finding) String() string { return f.Where + ": " + f.What }

// Compare returns the enums of released that current dropped, turned into another type
// or took values from, ordered by place.
func Compare(released, current *openapi3.T) []Finding {
	now := places(current)
	var out []Finding
	for where, old := range places(released) {
		if len(old.Enum) == 0 {
			continue
		}
		cur, ok := now[where]
		switch {
		case !ok:
			out = append(out, Finding{where, fmt.Sprintf("the enum %v is gone with its schema", old.Enum)})
		case !slices.Equal(types(old), types(cur)):
			out = append(out, Finding{where, fmt.Sprintf("the %s enum %v is now of type %s", strings.Join(types(old), ","), old.Enum, strings.Join(types(cur), ","))})
		case len(cur.Enum) == 0:
			what := fmt.Sprintf("the enum %v is dropped", old.Enum)
			if _, ok := cur.Extensions["x-extensible-enum"]; ok {
				what += " (now an x-extensible-enum)"
			}
			out = append(out, Finding{where, what})
		default:
			for _, v := range old.Enum {
				if !slices.ContainsFunc(cur.Enum, func(w any) bool { return reflect.DeepEqual(v, w) }) {
					out = append(out, Finding{where, fmt.Sprintf("the enum value %v is removed", v)})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func types(s *openapi3.Schema) []string {
	if s.Type == nil {
		return nil
	}
	return s.Type.Slice()
}

// places returns every schema of doc by its place. A component is walked under its own
// name; a reference to it is a place of its own (holding the component) that is not
// walked again, so that the walk ends on recursive schemas.
func places(doc *openapi3.T) map[string]*openapi3.Schema {
	out := map[string]*openapi3.Schema{}
	var walk func(where string, ref *openapi3.SchemaRef, top bool)
	walk = func(where string, ref *openapi3.SchemaRef, top bool) {
		if ref == nil || ref.Value == nil {
			return
		}
		out[where] = ref.Value
		if ref.Ref != "" && !top {
			return
		}
		s := ref.Value
		for name, p := range s.Properties {
			walk(where+"."+name, p, false)
		}
		walk(where+"[]", s.Items, false)
		if s.AdditionalProperties.Schema != nil {
			walk(where+"{}", s.AdditionalProperties.Schema, false)
		}
		walk(where+".not", s.Not, false)
		for kind, list := range map[string]openapi3.SchemaRefs{"allOf": s.AllOf, "oneOf": s.OneOf, "anyOf": s.AnyOf} {
			for i, x := range list {
				walk(fmt.Sprintf("%s.%s[%d]", where, kind, i), x, false)
			}
		}
	}
	content := func(where string, c openapi3.Content) {
		for mt, m := range c {
			walk(where+" "+mt, m.Schema, false)
		}
	}
	var operations func(prefix string, paths map[string]*openapi3.PathItem)
	operations = func(prefix string, paths map[string]*openapi3.PathItem) {
		for path, item := range paths {
			for method, op := range item.Operations() {
				where := prefix + method + " " + path
				for _, p := range append(item.Parameters, op.Parameters...) {
					if p.Value != nil {
						walk(where+" "+p.Value.In+" "+p.Value.Name, p.Value.Schema, false)
						content(where+" "+p.Value.In+" "+p.Value.Name, p.Value.Content)
					}
				}
				if op.RequestBody != nil && op.RequestBody.Value != nil {
					content(where+" request", op.RequestBody.Value.Content)
				}
				if op.Responses != nil {
					for status, r := range op.Responses.Map() {
						if r.Value == nil {
							continue
						}
						content(where+" "+status, r.Value.Content)
						for name, h := range r.Value.Headers {
							if h.Value != nil {
								walk(where+" "+status+" header "+name, h.Value.Schema, false)
							}
						}
					}
				}
				for name, cb := range op.Callbacks {
					if cb.Value != nil {
						operations(where+" callback "+name+" ", cb.Value.Map())
					}
				}
			}
		}
	}
	if doc.Components != nil {
		for name, ref := range doc.Components.Schemas {
			walk("#/components/schemas/"+name, ref, true)
		}
	}
	if doc.Paths != nil {
		operations("", doc.Paths.Map())
	}
	return out
}
