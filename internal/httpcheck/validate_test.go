package httpcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDuplicateKey(t *testing.T) {
	many := func(n int, last string) string {
		var b strings.Builder
		b.WriteString(`{`)
		for i := range n {
			fmt.Fprintf(&b, `"k%d": %d, `, i, i)
		}
		b.WriteString(`"` + last + `": true}`)
		return b.String()
	}
	for _, c := range []struct {
		name, body, key, path string
	}{
		{"none", `{"a": 1, "b": {"a": 2}, "c": [{"a": 3}, {"a": 4}]}`, "", ""},
		{"top level", `{"maxVoltage": 500, "maxVoltage": 600}`, "maxVoltage", ""},
		{"escaped spelling", `{"maxVoltage": 500, "max\u0056oltage": 600}`, "maxVoltage", ""},
		{"escaped quote in a key", `{"a\"b": 1, "a\u0022b": 2}`, `a"b`, ""},
		{"nested", `{"a": {"b": {"c": 1, "d": 2, "c": 3}}}`, "c", "a.b"},
		{"in an array", `{"items": [{"x": 1}, {"y": 1, "y": 2}]}`, "y", "items"},
		{"after a closed sibling", `{"a": {"x": 1}, "b": 2, "a": 3}`, "a", ""},
		{"a key of a closed object", `{"a": {"x": 1, "y": [{"z": 1}]}, "x": 2, "z": 3}`, "", ""},
		{"same key in sibling objects", `[{"a": 1}, {"a": 2}]`, "", ""},
		{"strings hold punctuation", `{"a": "{\"a\": 1, \"a\": 2}", "b": "[,]:\\"}`, "", ""},
		{"a value equal to a key", `{"a": "a", "b": "a"}`, "", ""},
		{"empty key in the path", `{"": {"k": 1, "k": 2}}`, "k", ""},
		{"empty keys", `{"": 1, "": 2}`, "", ""},
		{"not UTF-8 in the path", "{\"\xdb\": {\"\": 0, \"\": 0}}", "", "\ufffd"},
		{"not UTF-8: keys equal once decoded", "{\"a\xdb\": 1, \"a\xdc\": 2}", "a\ufffd", ""},
		{"sixteen keys, no duplicate", many(15, "z"), "", ""},
		{"beyond the linear keys", many(40, "k33"), "k33", ""},
		{"the seventeenth repeats the first", many(16, "k0"), "k0", ""},
		{"scalar document", `"a"`, "", ""},
		{"empty", ``, "", ""},
		{"not JSON: no panic", `{{"a": 1, "a": 2}}`, "a", ""},
		{"unterminated", `{"a": 1, "a`, "", ""},
		{"stray closers", `}]{"a": 1}`, "", ""},
		{"a dot in a key is escaped", `{".00": {"0": [{"0":10}, {"c":10,"\u0063":10}]}}`, "c", `\.00.0`},
		{"a dotted key is not a nesting", `{"a.b": {"c": 1, "c": 2}}`, "c", `a\.b`},
		{"a backslash in a key is escaped", `{"a\\": {"c": 1, "c": 2}}`, "c", `a\\`},
	} {
		t.Run(c.name, func(t *testing.T) {
			key, path := duplicateKey([]byte(c.body))
			assert.Equal(t, c.key, key)
			assert.Equal(t, c.path, path)
			if json.Valid([]byte(c.body)) {
				rk, rp := duplicateKeyByDecoding([]byte(c.body))
				assert.Equal(t, rk, key, "the decoding reference disagrees")
				assert.Equal(t, rp, path, "the decoding reference disagrees")
			}
		})
	}
}

// FuzzDuplicateKey checks duplicateKey against a reference that decodes every token
// with encoding/json, on every valid document; on any other input it must not panic.
func FuzzDuplicateKey(f *testing.F) {
	for _, s := range []string{
		`{"a": 1, "a": 2}`,
		`{"a": {"b": [{"c": 1}, {"c": 2, "\u0063": 3}]}}`,
		`{"": {"": 1, "": 2}}`,
		`[{"x": "\"}", "y": 1}, {"x": 1}]`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k3":3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		key, path := duplicateKey(body)
		if !json.Valid(body) {
			return
		}
		rk, rp := duplicateKeyByDecoding(body)
		if key != rk || path != rp {
			t.Fatalf("%q: got (%q, %q), the reference says (%q, %q)", body, key, path, rk, rp)
		}
	})
}

// duplicateKeyByDecoding is what duplicateKey answers, found by decoding body token by
// token with encoding/json: the reference of the tests.
func duplicateKeyByDecoding(body []byte) (key, path string) {
	type frame struct {
		keys   map[string]bool // nil for an array
		path   string
		expect bool // in an object, the next string token is a key
		last   string
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", ""
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.keys != nil && top.expect {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return k, top.path
				}
				top.keys[k], top.last, top.expect = true, k, false
				continue
			}
		}
		child := ""
		if top != nil {
			child = top.path
			if top.keys != nil && top.last != "" {
				last := strings.ReplaceAll(strings.ReplaceAll(top.last, `\`, `\\`), ".", `\.`)
				if child == "" {
					child = last
				} else {
					child += "." + last
				}
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, path: child, expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{path: child})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return "", ""
			}
		}
		if len(stack) == 0 {
			return "", ""
		}
		if top = stack[len(stack)-1]; top.keys != nil {
			top.expect = true
		}
	}
}
