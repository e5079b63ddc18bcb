package chargenet

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// EventType is one event type a webhook can subscribe to.
type EventType struct {
	Type        string   `json:"type"`
	APIVersions []string `json:"api_versions"`
	Latest      string   `json:"latest"`
}

//go:embed eventtypes.json
var eventTypesJSON []byte

var (
	eventTypeRe = regexp.MustCompile(`^[a-z]+(\.[a-z_]+)+$`)
	versionRe   = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)
)

// EventTypes returns the controlled list of event types, read from the embedded
// eventtypes.json, with Latest computed from APIVersions. It returns an error if the file
// names a type twice, has a badly formed type or version, or a type without versions.
func EventTypes() ([]EventType, error) { return parseEventTypes(eventTypesJSON) }

func parseEventTypes(data []byte) ([]EventType, error) {
	var doc struct {
		EventTypes []struct {
			Type        string   `json:"type"`
			APIVersions []string `json:"api_versions"`
		} `json:"event_types"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("event types: %w", err)
	}
	seen := map[string]bool{}
	out := make([]EventType, 0, len(doc.EventTypes))
	for i, t := range doc.EventTypes {
		switch {
		case !eventTypeRe.MatchString(t.Type):
			return nil, fmt.Errorf("event types[%d]: type %q is not a dotted lower-case name", i, t.Type)
		case seen[t.Type]:
			return nil, fmt.Errorf("event types[%d]: type %q appears twice", i, t.Type)
		case len(t.APIVersions) == 0:
			return nil, fmt.Errorf("event types[%d]: type %q has no api_versions", i, t.Type)
		}
		seen[t.Type] = true
		versions := slices.Clone(t.APIVersions)
		for _, v := range versions {
			if !versionRe.MatchString(v) {
				return nil, fmt.Errorf("event types[%d]: version %q of %q is not MAJOR.MINOR", i, v, t.Type)
			}
		}
		slices.SortFunc(versions, CompareVersions)
		if len(slices.CompactFunc(slices.Clone(versions), func(a, b string) bool { return CompareVersions(a, b) == 0 })) != len(versions) {
			return nil, fmt.Errorf("event types[%d]: %q lists a version twice", i, t.Type)
		}
		out = append(out, EventType{Type: t.Type, APIVersions: versions, Latest: versions[len(versions)-1]})
	}
	return out, nil
}

// CompareVersions orders MAJOR.MINOR version strings numerically ("1.10" > "1.9").
// Malformed parts count as 0.
func CompareVersions(a, b string) int {
	am, an, _ := strings.Cut(a, ".")
	bm, bn, _ := strings.Cut(b, ".")
	if c := cmpInt(am, bm); c != 0 {
		return c
	}
	return cmpInt(an, bn)
}

func cmpInt(a, b string) int {
	x, _ := strconv.Atoi(a)
	y, _ := strconv.Atoi(b)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
