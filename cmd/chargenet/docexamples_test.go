package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The documents whose shell examples TestDocExamples runs, relative to the module root.
var exampleDocs = []string{"README.md", "docs/*.md", "bench/README.md"}

// noCheck is the fence option of a shell block that the examples test does not run
// (```sh no-check): make targets, PostgreSQL set-up, commands that need a receiver.
const noCheck = "no-check"

// TestDocExamples runs the shell examples of the README and of the pages beside it
// against a served instance, so that they stay true.
//
// Each file gets a fresh `chargenet serve --demo` over SQLite, started as `make run`
// starts it: the Makefile's DEV_KEY, the database at data/chargenet.db of the working
// directory, bin/chargenet beside it. Every ```sh or ```bash block then runs, in order,
// in its own `bash` with `set -euo pipefail`, with the Makefile's http://ADDR rewritten
// to the test server's URL. A block fails the test when a command fails, when curl gets
// a status of 400 or above that no expectation names, or when an expectation does not
// hold. An expectation is a comment after the commands it checks:
//
//	# -> 201 {"id": "wh_...", "enabled": true, ...}
//
// The optional status is that of the segment's last curl. The rest, optional too, is a
// pattern for the segment's standard output: JSON with `...` as a wildcard (a string
// containing it matches any text in its place; a member or last element `...` allows
// further members or elements; a bare `...` value matches anything; without it an
// object must have exactly the keys shown), or otherwise a line of text with `...` as
// a wildcard. A JSON pattern may continue over the following comment lines until its
// brackets close. Blocks fenced ```sh no-check are counted and logged, never run.
func TestDocExamples(t *testing.T) {
	root := filepath.Join("..", "..")
	devKey, addr := makeRunSettings(t, filepath.Join(root, "Makefile"))
	var files []string
	for _, glob := range exampleDocs {
		matches, err := filepath.Glob(filepath.Join(root, glob))
		require.NoError(t, err)
		files = append(files, matches...)
	}
	require.NotEmpty(t, files)
	total := 0
	for _, file := range files {
		name, err := filepath.Rel(root, file)
		require.NoError(t, err)
		blocks, err := shellBlocks(file)
		require.NoError(t, err)
		var run, skipped []docBlock
		for _, b := range blocks {
			if b.noCheck {
				skipped = append(skipped, b)
			} else {
				run = append(run, b)
			}
		}
		lines := func(bs []docBlock) string {
			s := make([]string, len(bs))
			for i, b := range bs {
				s[i] = strconv.Itoa(b.line)
			}
			return strings.Join(s, ", ")
		}
		t.Logf("%s: %d shell blocks run (lines %s), %d marked %s (lines %s)",
			name, len(run), lines(run), len(skipped), noCheck, lines(skipped))
		total += len(run)
		if len(run) == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o750))
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o750))
			require.NoError(t, os.Symlink(proctest.Binary(t), filepath.Join(dir, "bin", "chargenet")))
			srv := proctest.Start(t, proctest.Options{
				Database: "sqlite:" + filepath.Join(dir, "data", "chargenet.db"),
				Keys:     []string{devKey},
				Args:     []string{"--demo"},
			})
			for _, b := range run {
				ok := t.Run(fmt.Sprintf("line_%d", b.line), func(t *testing.T) {
					runBlock(t, b, dir, "http://"+addr, srv.Base)
				})
				if !ok {
					t.Logf("the later blocks of %s were not run: they may build on this one\nserver log:\n%s", name, srv.Log())
					return
				}
			}
		})
	}
	assert.Positive(t, total, "no shell block ran")
}

// makeRunSettings reads DEV_KEY and ADDR from the Makefile: the key and address the
// examples use, because `make run` serves with them.
func makeRunSettings(t *testing.T, makefile string) (key, addr string) {
	t.Helper()
	b, err := os.ReadFile(makefile)
	require.NoError(t, err)
	get := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + ` \?= (\S+)$`).FindSubmatch(b)
		require.NotNil(t, m, "the Makefile sets no %s", name)
		return string(m[1])
	}
	return get("DEV_KEY"), get("ADDR")
}

// docBlock is a fenced shell block of a markdown file.
type docBlock struct {
	line    int // the line of the opening fence, from 1
	noCheck bool
	lines   []string
}

// shellBlocks returns the ```sh and ```bash blocks of a markdown file. A fence option
// other than no-check is an error, so that a misspelt one does not go unnoticed.
func shellBlocks(path string) ([]docBlock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var blocks []docBlock
	var cur *docBlock
	inFence, indent := false, ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if strings.HasPrefix(trimmed, "```") {
			if inFence {
				if cur != nil {
					blocks = append(blocks, *cur)
				}
				inFence, cur = false, nil
				continue
			}
			inFence, indent = true, line[:len(line)-len(trimmed)]
			info := strings.Fields(strings.TrimPrefix(trimmed, "```"))
			if len(info) == 0 || (info[0] != "sh" && info[0] != "bash") {
				continue
			}
			cur = &docBlock{line: n}
			for _, opt := range info[1:] {
				if opt != noCheck {
					return nil, fmt.Errorf("%s:%d: unknown fence option %q (only %s)", path, n, opt, noCheck)
				}
				cur.noCheck = true
			}
			continue
		}
		if cur != nil {
			cur.lines = append(cur.lines, strings.TrimPrefix(line, indent))
		}
	}
	if inFence {
		return nil, fmt.Errorf("%s: a fence is not closed", path)
	}
	return blocks, sc.Err()
}

// expectation is a `# -> [STATUS] [PATTERN]` comment of a block.
type expectation struct {
	line    int // in the markdown file
	status  int // 0: any status below 400
	pattern string
}

// Lines the script prints so that the test can cut its output into segments, one per
// expectation, and learn the status of every curl.
const (
	markPrefix   = "@@doc-mark "
	statusPrefix = "@@doc-status "
)

// scriptPreamble makes every failing command fail the block and has curl report its
// status on standard error.
const scriptPreamble = `set -euo pipefail
curl() { command curl -w '%{stderr}\n` + statusPrefix + `%{http_code}\n' "$@"; }
__doc_mark() { printf '\n` + markPrefix + `%s\n' "$1"; printf '\n` + markPrefix + `%s\n' "$1" >&2; }
`

// blockScript turns a block into a bash script: the URL rewritten, each expectation
// replaced by a mark.
func blockScript(b docBlock, from, to string) (string, []expectation, error) {
	var script strings.Builder
	script.WriteString(scriptPreamble)
	var exps []expectation
	for i := 0; i < len(b.lines); i++ {
		line := b.lines[i]
		text, ok := strings.CutPrefix(strings.TrimSpace(line), "# ->")
		if !ok {
			script.WriteString(strings.ReplaceAll(line, from, to) + "\n")
			continue
		}
		e := expectation{line: b.line + 1 + i}
		text = strings.TrimSpace(text)
		if code, rest, _ := strings.Cut(text, " "); len(code) == 3 {
			if n, err := strconv.Atoi(code); err == nil && n >= 100 {
				e.status, text = n, strings.TrimSpace(rest)
			}
		}
		if strings.HasPrefix(text, "{") || strings.HasPrefix(text, "[") {
			for !bracketsClosed(text) {
				i++
				if i == len(b.lines) {
					return "", nil, fmt.Errorf("line %d: the pattern's brackets never close", e.line)
				}
				more, ok := strings.CutPrefix(strings.TrimSpace(b.lines[i]), "#")
				if !ok {
					return "", nil, fmt.Errorf("line %d: the pattern's brackets never close", e.line)
				}
				text += " " + strings.TrimSpace(more)
			}
		}
		e.pattern = text
		exps = append(exps, e)
		fmt.Fprintf(&script, "__doc_mark %d\n", len(exps))
	}
	return script.String(), exps, nil
}

// bracketsClosed reports whether every { and [ of a pattern outside strings is closed.
func bracketsClosed(s string) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range s {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return depth <= 0
}

// runBlock runs one block against the server at base and checks its expectations.
func runBlock(t *testing.T, b docBlock, dir, from, base string) {
	script, exps, err := blockScript(b, from, base)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHARGENET_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	outs, errs := segments(stdout.String()), segments(stderr.String())
	block := strings.Join(b.lines, "\n")
	require.NoError(t, runErr, "the block failed after %d of %d expectations:\n%s\nstdout:\n%s\nstderr:\n%s",
		len(outs)-1, len(exps), block, stdout.String(), stderr.String())
	require.Len(t, outs, len(exps)+1, "stdout: %s", stdout.String())
	require.Len(t, errs, len(exps)+1, "stderr: %s", stderr.String())
	for i := range outs {
		statuses, other := curlStatuses(errs[i])
		where := fmt.Sprintf("the commands after the line %d", b.line)
		e := expectation{}
		if i < len(exps) {
			e = exps[i]
			where = fmt.Sprintf("the commands before the line %d", e.line)
		}
		assert.NoError(t, checkSegment(e, outs[i], statuses), "%s\nstdout: %s\nstderr: %s", where, outs[i], other)
	}
}

// segments cuts a stream at the marks.
func segments(s string) []string {
	var out []string
	for {
		i := strings.Index(s, markPrefix)
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i:]
		if j := strings.IndexByte(s, '\n'); j >= 0 {
			s = s[j+1:]
		} else {
			s = ""
		}
	}
}

// curlStatuses takes the statuses curl reported out of a segment of standard error
// and returns them with what else it holds.
func curlStatuses(s string) (statuses []int, other string) {
	var rest []string
	for _, line := range strings.Split(s, "\n") {
		if code, ok := strings.CutPrefix(line, statusPrefix); ok {
			n, _ := strconv.Atoi(code)
			statuses = append(statuses, n)
		} else if strings.TrimSpace(line) != "" {
			rest = append(rest, line)
		}
	}
	return statuses, strings.Join(rest, "\n")
}

// checkSegment checks one expectation (the zero one after the last) against the
// output and curl statuses of the commands before it.
func checkSegment(e expectation, out string, statuses []int) error {
	for i, s := range statuses {
		last := i == len(statuses)-1
		if last && e.status != 0 {
			if s != e.status {
				return fmt.Errorf("curl got %d, the example shows %d", s, e.status)
			}
			continue
		}
		if s < 100 || s >= 400 {
			return fmt.Errorf("curl got %d, and the example shows no such status", s)
		}
	}
	if e.status != 0 && len(statuses) == 0 {
		return fmt.Errorf("the example shows status %d but no curl ran", e.status)
	}
	out = strings.TrimSpace(out)
	if strings.HasPrefix(out, "HTTP/") { // curl -i: the headers, then the body
		if _, body, ok := strings.Cut(out, "\r\n\r\n"); ok {
			out = strings.TrimSpace(body)
		}
	}
	switch {
	case e.pattern == "":
		return nil
	case strings.HasPrefix(e.pattern, "{") || strings.HasPrefix(e.pattern, "["):
		p, err := parsePattern(e.pattern)
		if err != nil {
			return fmt.Errorf("the example's pattern: %w", err)
		}
		dec := json.NewDecoder(strings.NewReader(out))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("the output is not JSON: %w", err)
		}
		if dec.More() {
			return errors.New("the output holds more than one JSON value")
		}
		return p.match("$", v)
	default:
		if !globMatch(e.pattern, out) {
			return fmt.Errorf("the output does not match %q", e.pattern)
		}
		return nil
	}
}

// globMatch reports whether s matches pattern, where each `...` stands for any text.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "...")
	if len(parts) == 1 {
		return s == pattern
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

// jsonPattern is a parsed JSON pattern: JSON with `...` wildcards.
type jsonPattern struct {
	kind  string // any, object, array, string, number, true, false, null
	keys  []string
	elems []*jsonPattern // the members' values, or the array's elements
	open  bool           // object: other members allowed; array: more elements
	text  string         // string or number
}

// parsePattern parses a JSON pattern.
func parsePattern(s string) (*jsonPattern, error) {
	p := &patternParser{s: s}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if p.skip(); p.i != len(p.s) {
		return nil, fmt.Errorf("unexpected %q after the value", p.s[p.i:])
	}
	return v, nil
}

type patternParser struct {
	s string
	i int
}

func (p *patternParser) skip() {
	for p.i < len(p.s) && strings.ContainsRune(" \t\r\n", rune(p.s[p.i])) {
		p.i++
	}
}

func (p *patternParser) eat(tok string) bool {
	p.skip()
	if strings.HasPrefix(p.s[p.i:], tok) {
		p.i += len(tok)
		return true
	}
	return false
}

func (p *patternParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at %d of %q: %s", p.i, p.s, fmt.Sprintf(format, args...))
}

func (p *patternParser) value() (*jsonPattern, error) {
	p.skip()
	switch {
	case p.eat("..."):
		return &jsonPattern{kind: "any"}, nil
	case p.eat("{"):
		return p.list("object", "}")
	case p.eat("["):
		return p.list("array", "]")
	case p.eat("true"):
		return &jsonPattern{kind: "true"}, nil
	case p.eat("false"):
		return &jsonPattern{kind: "false"}, nil
	case p.eat("null"):
		return &jsonPattern{kind: "null"}, nil
	case p.i < len(p.s) && p.s[p.i] == '"':
		s, err := p.str()
		return &jsonPattern{kind: "string", text: s}, err
	}
	start := p.i
	for p.i < len(p.s) && strings.ContainsRune("+-.eE0123456789", rune(p.s[p.i])) {
		p.i++
	}
	if _, err := strconv.ParseFloat(p.s[start:p.i], 64); err != nil {
		return nil, p.errorf("no value")
	}
	return &jsonPattern{kind: "number", text: p.s[start:p.i]}, nil
}

// list parses the members of an object or the elements of an array after its opening
// bracket.
func (p *patternParser) list(kind, end string) (*jsonPattern, error) {
	v := &jsonPattern{kind: kind}
	if p.eat(end) {
		return v, nil
	}
	for {
		if p.eat("...") {
			v.open = true
			if !p.eat(end) {
				return nil, p.errorf("`...` must be the last of the %s", kind)
			}
			return v, nil
		}
		if kind == "object" {
			p.skip()
			key, err := p.str()
			if err != nil {
				return nil, err
			}
			if !p.eat(":") {
				return nil, p.errorf("no colon after the key %q", key)
			}
			v.keys = append(v.keys, key)
		}
		elem, err := p.value()
		if err != nil {
			return nil, err
		}
		v.elems = append(v.elems, elem)
		if p.eat(end) {
			return v, nil
		}
		if !p.eat(",") {
			return nil, p.errorf("want , or %s", end)
		}
	}
}

// str parses a JSON string literal.
func (p *patternParser) str() (string, error) {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", p.errorf("want a string")
	}
	for j := p.i + 1; j < len(p.s); j++ {
		switch p.s[j] {
		case '\\':
			j++
		case '"':
			var s string
			if err := json.Unmarshal([]byte(p.s[p.i:j+1]), &s); err != nil {
				return "", p.errorf("%v", err)
			}
			p.i = j + 1
			return s, nil
		}
	}
	return "", p.errorf("the string does not end")
}

// match checks a decoded JSON value (numbers as json.Number) against the pattern.
func (p *jsonPattern) match(path string, v any) error {
	switch p.kind {
	case "any":
		return nil
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %s", path, brief(v))
		}
		for i, k := range p.keys {
			got, ok := m[k]
			if !ok {
				return fmt.Errorf("%s: no member %q", path, k)
			}
			if err := p.elems[i].match(path+"."+k, got); err != nil {
				return err
			}
		}
		if !p.open {
			for k := range m {
				if !slices.Contains(p.keys, k) {
					return fmt.Errorf("%s: member %q is not in the example (end it with ... to allow more)", path, k)
				}
			}
		}
		return nil
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array, got %s", path, brief(v))
		}
		if len(a) < len(p.elems) || (!p.open && len(a) != len(p.elems)) {
			return fmt.Errorf("%s: want %d elements, got %d", path, len(p.elems), len(a))
		}
		for i, e := range p.elems {
			if err := e.match(fmt.Sprintf("%s[%d]", path, i), a[i]); err != nil {
				return err
			}
		}
		return nil
	case "string":
		s, ok := v.(string)
		if !ok || !globMatch(p.text, s) {
			return fmt.Errorf("%s: want %q, got %s", path, p.text, brief(v))
		}
		return nil
	case "number":
		n, ok := v.(json.Number)
		want, _ := strconv.ParseFloat(p.text, 64)
		if got, err := strconv.ParseFloat(string(n), 64); !ok || err != nil || got != want {
			return fmt.Errorf("%s: want %s, got %s", path, p.text, brief(v))
		}
		return nil
	default: // true, false, null
		if b, _ := json.Marshal(v); string(b) != p.kind {
			return fmt.Errorf("%s: want %s, got %s", path, p.kind, brief(v))
		}
		return nil
	}
}

// brief renders a value for an error message, shortened.
func brief(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

func TestDocPattern(t *testing.T) {
	tests := []struct {
		name, pattern, actual string
		wantErr               bool
	}{
		{"equal object", `{"a": 1, "b": "x"}`, `{"b":"x","a":1}`, false},
		{"missing member", `{"a": 1, "b": "x"}`, `{"a":1}`, true},
		{"extra member of a closed object", `{"a": 1}`, `{"a":1,"b":2}`, true},
		{"extra member of an open object", `{"a": 1, ...}`, `{"a":1,"b":2}`, false},
		{"any object", `{...}`, `{"a":[1]}`, false},
		{"other number", `{"a": 1}`, `{"a":2}`, true},
		{"same number written otherwise", `{"a": 300}`, `{"a":300.0}`, false},
		{"string wildcard", `{"id": "wh_..."}`, `{"id":"wh_01ABC"}`, false},
		{"string wildcard, other prefix", `{"id": "wh_..."}`, `{"id":"evt_01ABC"}`, true},
		{"string wildcard inside", `"at ... old"`, `"at 0 s old"`, false},
		{"exact string", `"ready"`, `"unready"`, true},
		{"string for a number", `{"a": "1"}`, `{"a":1}`, true},
		{"bare wildcard value", `{"a": ..., "b": null}`, `{"a":{"x":1},"b":null}`, false},
		{"null against false", `{"b": null}`, `{"b":false}`, true},
		{"true", `[true, false]`, `[true,false]`, false},
		{"array prefix", `[1, ...]`, `[1,2,3]`, false},
		{"array wrong first", `[2, ...]`, `[1,2,3]`, true},
		{"closed array longer", `[1]`, `[1,2]`, true},
		{"any array", `[...]`, `[]`, false},
		{"array too short", `[1, 2, ...]`, `[1]`, true},
		{"object for an array", `[...]`, `{}`, true},
		{"nested", `{"data": [{"uid": 1001, ...}], ...}`, `{"data":[{"uid":1001,"x":1}],"pagination":{}}`, false},
		{"nested mismatch", `{"data": [{"uid": 1001, ...}], ...}`, `{"data":[{"uid":1002}],"pagination":{}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkSegment(expectation{pattern: tt.pattern}, tt.actual, nil)
			if tt.wantErr {
				assert.Error(t, err)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

func TestDocPatternSyntax(t *testing.T) {
	for _, bad := range []string{`{"a" 1}`, `{"a": 1`, `[1, ..., 2]`, `{a: 1}`, `[1 2]`, `{"a": }`} {
		_, err := parsePattern(bad)
		assert.Error(t, err, bad)
	}
}

func TestDocSegmentChecks(t *testing.T) {
	tests := []struct {
		name     string
		e        expectation
		out      string
		statuses []int
		wantErr  bool
	}{
		{"success without expectation", expectation{}, "", []int{200, 201}, false},
		{"an error nobody expects", expectation{}, "", []int{200, 404}, true},
		{"curl could not connect", expectation{}, "", []int{0}, true},
		{"the expected error status", expectation{status: 400}, "", []int{200, 400}, false},
		{"another status than shown", expectation{status: 201}, "", []int{200}, true},
		{"a status but no curl", expectation{status: 200}, "", nil, true},
		{"an error before the expected one", expectation{status: 400}, "", []int{404, 400}, true},
		{"headers before the body", expectation{pattern: `{"a": 1}`}, "HTTP/1.1 200 OK\r\nEtag: \"1\"\r\n\r\n{\"a\":1}", []int{200}, false},
		{"two values", expectation{pattern: `{"a": 1}`}, `{"a":1}{"a":1}`, nil, true},
		{"not JSON", expectation{pattern: `{"a": 1}`}, `a=1`, nil, true},
		{"text", expectation{pattern: `backed up ... integrity_check: ok`}, "backed up x in 3ms; integrity_check: ok\n", nil, false},
		{"other text", expectation{pattern: `backed up ... integrity_check: ok`}, "integrity_check: failed", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkSegment(tt.e, tt.out, tt.statuses)
			if tt.wantErr {
				assert.Error(t, err)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

func TestDocBlockScript(t *testing.T) {
	b := docBlock{line: 10, lines: []string{
		`curl -s http://127.0.0.1:8080/readyz`,
		`# -> 200 {"status": "ready",`,
		`#      "checks": [...]}`,
		`echo done  # -> not an expectation`,
		`# -> done`,
	}}
	script, exps, err := blockScript(b, "http://127.0.0.1:8080", "http://127.0.0.1:4321")
	require.NoError(t, err)
	assert.Contains(t, script, "curl -s http://127.0.0.1:4321/readyz\n__doc_mark 1\necho done")
	assert.Contains(t, script, "__doc_mark 2\n")
	assert.Equal(t, []expectation{
		{line: 12, status: 200, pattern: `{"status": "ready", "checks": [...]}`},
		{line: 15, pattern: "done"},
	}, exps)

	_, _, err = blockScript(docBlock{line: 1, lines: []string{"true", `# -> {"a": [1,`}}, "", "")
	assert.Error(t, err, "a pattern that never closes")
}

func TestDocShellBlocks(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    []docBlock
		wantErr bool
	}{
		{
			name: "shell blocks only",
			doc:  "text\n```sh\ncurl a\n```\n```json\n{}\n```\n```bash no-check\nmake run\n```\n",
			want: []docBlock{{line: 2, lines: []string{"curl a"}}, {line: 8, noCheck: true, lines: []string{"make run"}}},
		},
		{
			name: "indented in a list",
			doc:  "- item\n\n  ```sh\n  curl b\n    # -> {...}\n  ```\n",
			want: []docBlock{{line: 3, lines: []string{"curl b", "  # -> {...}"}}},
		},
		{name: "unknown option", doc: "```sh nocheck\nmake run\n```\n", wantErr: true},
		{name: "fence not closed", doc: "```sh\ncurl a\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "doc.md")
			require.NoError(t, os.WriteFile(path, []byte(tt.doc), 0o600))
			got, err := shellBlocks(path)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
