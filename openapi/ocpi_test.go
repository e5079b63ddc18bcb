package openapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/chargenet/chargenet/openapi"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ocpiExamples is where the copies of the specification's JSON examples are; see its README.
const ocpiExamples = "../testdata/ocpi"

func TestOCPISpecIsValid(t *testing.T) {
	doc := load(t, openapi.OCPISpec)
	require.NoError(t, doc.Validate(context.Background(), openapi3.EnableExamplesValidation()))
	assert.Equal(t, "3.0.3", doc.OpenAPI)
	assert.Equal(t, "1.1.0", doc.Info.Version)
	assert.Contains(t, doc.Info.Title, "OCPI 2.2.1")
}

// TestOCPIOperations pins the operations of both halves: the paths chargenet serves under
// /ocpi, and the partner interfaces it calls under /partner, each half under its own tags
// (the generated server takes only the first, the client only the second).
func TestOCPIOperations(t *testing.T) {
	doc := load(t, openapi.OCPISpec)
	served := map[string]string{
		"GET /ocpi/versions":                                                "getVersions",
		"GET /ocpi/2.2.1":                                                   "getVersionDetails",
		"GET /ocpi/2.2.1/credentials":                                       "getCredentials",
		"POST /ocpi/2.2.1/credentials":                                      "postCredentials",
		"PUT /ocpi/2.2.1/credentials":                                       "putCredentials",
		"DELETE /ocpi/2.2.1/credentials":                                    "deleteCredentials",
		"GET /ocpi/2.2.1/locations":                                         "getLocations",
		"GET /ocpi/2.2.1/locations/{location_id}":                           "getLocation",
		"GET /ocpi/2.2.1/locations/{location_id}/{evse_uid}":                "getEvse",
		"GET /ocpi/2.2.1/locations/{location_id}/{evse_uid}/{connector_id}": "getConnector",
	}
	const loc = "/partner/locations/{country_code}/{party_id}/{location_id}"
	called := map[string]string{
		"GET /partner/versions":                       "getPartnerVersions",
		"GET /partner/version-details":                "getPartnerVersionDetails",
		"GET /partner/credentials":                    "getPartnerCredentials",
		"POST /partner/credentials":                   "postPartnerCredentials",
		"PUT /partner/credentials":                    "putPartnerCredentials",
		"DELETE /partner/credentials":                 "deletePartnerCredentials",
		"GET " + loc:                                  "getPartnerLocation",
		"PUT " + loc:                                  "putPartnerLocation",
		"PATCH " + loc:                                "patchPartnerLocation",
		"GET " + loc + "/{evse_uid}":                  "getPartnerEvse",
		"PUT " + loc + "/{evse_uid}":                  "putPartnerEvse",
		"PATCH " + loc + "/{evse_uid}":                "patchPartnerEvse",
		"GET " + loc + "/{evse_uid}/{connector_id}":   "getPartnerConnector",
		"PUT " + loc + "/{evse_uid}/{connector_id}":   "putPartnerConnector",
		"PATCH " + loc + "/{evse_uid}/{connector_id}": "patchPartnerConnector",
	}
	servedTags := []string{"Versions", "Credentials", "Locations"}
	calledTags := []string{"Partner versions", "Partner credentials", "Partner locations"}

	got := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			at := method + " " + path
			got[at] = op.OperationID
			assert.NotEmpty(t, op.Summary, at)
			assert.NotEmpty(t, op.Description, at)
			require.NotNil(t, op.Security, "%s declares which token opens it", at)
			assert.NotEmpty(t, *op.Security, at)
			require.Len(t, op.Tags, 1, at)
			if _, ok := served[at]; ok {
				assert.Contains(t, servedTags, op.Tags[0], at)
			} else {
				assert.Contains(t, calledTags, op.Tags[0], at)
			}
		}
	}
	want := map[string]string{}
	for k, v := range served {
		want[k] = v
	}
	for k, v := range called {
		want[k] = v
	}
	assert.Equal(t, want, got)
}

// TestOCPIServedResponses checks what every operation chargenet serves promises: the
// envelope on every status, the error statuses of the contract, X-Request-ID and
// X-Correlation-ID on every answer, the routing headers on the Locations module only, and
// the pagination headers on the list.
func TestOCPIServedResponses(t *testing.T) {
	doc := load(t, openapi.OCPISpec)
	routing := []string{"OCPI-from-country-code", "OCPI-from-party-id", "OCPI-to-country-code", "OCPI-to-party-id"}
	for path, item := range doc.Paths.Map() {
		if !strings.HasPrefix(path, "/ocpi/") {
			continue
		}
		for method, op := range item.Operations() {
			at := method + " " + path
			locations := op.Tags[0] == "Locations"
			codes := []string{"200", "400", "401", "500"}
			if locations && strings.Contains(path, "{") {
				codes = append(codes, "404")
			}
			if path == "/ocpi/2.2.1/credentials" && method != "GET" {
				codes = append(codes, "405")
			}
			sort.Strings(codes)
			assert.Equal(t, codes, op.Responses.Keys(), "%s answers exactly these statuses", at)
			for code, r := range op.Responses.Map() {
				where := at + " " + code
				schema := r.Value.Content.Get("application/json").Schema
				require.NotNil(t, schema, where)
				props := schema.Value.Properties
				assert.Contains(t, props, "status_code", where)
				assert.Contains(t, props, "timestamp", where)
				for _, h := range []string{"X-Request-ID", "X-Correlation-ID"} {
					if assert.Contains(t, r.Value.Headers, h, where) {
						assert.True(t, r.Value.Headers[h].Value.Required, "%s always carries %s", where, h)
					}
				}
				for _, h := range routing {
					if locations {
						assert.Contains(t, r.Value.Headers, h, where)
					} else {
						assert.NotContains(t, r.Value.Headers, h, "%s: no routing headers on configuration modules", where)
					}
				}
				if code != "200" {
					assert.Equal(t, "StatusResponse", refName(schema.Ref), "%s is an envelope without data", where)
				}
			}
		}
	}
	list := doc.Paths.Find("/ocpi/2.2.1/locations").Get.Responses.Value("200").Value.Headers
	assert.True(t, list["X-Total-Count"].Value.Required)
	assert.True(t, list["X-Limit"].Value.Required)
	assert.False(t, list["Link"].Value.Required, "the last page has no Link")
}

// TestOCPIPartnerRequests checks that every request chargenet sends must carry the IDs,
// and every push to the Locations RECEIVER the four routing headers, so that a test
// partner validating chargenet's requests against the contract catches a missing one.
func TestOCPIPartnerRequests(t *testing.T) {
	doc := load(t, openapi.OCPISpec)
	for path, item := range doc.Paths.Map() {
		if !strings.HasPrefix(path, "/partner/") {
			continue
		}
		for method, op := range item.Operations() {
			at := method + " " + path
			required := map[string]bool{}
			for _, p := range op.Parameters {
				if p.Value.In == "header" && p.Value.Required {
					required[p.Value.Name] = true
				}
			}
			want := map[string]bool{"X-Request-ID": true, "X-Correlation-ID": true}
			if strings.HasPrefix(path, "/partner/locations/") {
				for _, h := range []string{"OCPI-from-country-code", "OCPI-from-party-id", "OCPI-to-country-code", "OCPI-to-party-id"} {
					want[h] = true
				}
			}
			assert.Equal(t, want, required, at)
		}
	}
}

// ocpiExample is one of the specification's example files and the schema it must satisfy.
type ocpiExample struct {
	file   string
	schema string // a component schema, or "Schema.property"
	pick   string // validate this member of the file's object instead of the whole file
	// wantFailures lists, for an example that is wrong in the specification itself, each
	// failure as "JSON pointer: reason"; empty for a valid example.
	wantFailures []string
}

var ocpiOfficialExamples = []ocpiExample{
	{file: "versions_info_example.json", schema: "VersionListResponse.data"},
	{file: "version_details_example.json", schema: "VersionDetails"},
	{file: "version_details_example2.json", schema: "VersionDetails"},
	{file: "transport_and_format_version_info_example.json", schema: "VersionListResponse"},
	{file: "transport_and_format_version_details_example.json", schema: "VersionDetailsResponse"},
	{file: "credentials_example.json", schema: "Credentials"},
	{file: "credentials_example2.json", schema: "Credentials"},
	{file: "credentials_example3.json", schema: "Credentials"},
	{file: "credentials_example4.json", schema: "Credentials"},
	{file: "location_example.json", schema: "Location"},
	{file: "location_example_uc2_destination_charger.json", schema: "Location"},
	{file: "location_example_uc3_destination_charger_not_published.json", schema: "Location"},
	{file: "location_example_uc4_limited_visibility.json", schema: "Location"},
	{file: "location_example_uc5_home_charge_point.json", schema: "Location"},
	{file: "location_example_parking_garage_opening_hours.json", schema: "Location"},
	{file: "location_patch_example_location.json", schema: "LocationPatch"},
	{file: "location_patch_example_status.json", schema: "EVSEPatch"},
	{file: "location_patch_example_remove_evse.json", schema: "EVSEPatch"},
	{file: "location_patch_example_tariff.json", schema: "ConnectorPatch"},
	{file: "location_hours_247_open_exception_closing.json", schema: "Hours"},
	{file: "location_hours_opening_hours_with_exceptional_closing.json", schema: "Hours"},
	{file: "location_hours_opening_hours_with_exceptional_opening.json", schema: "Hours"},
	{file: "location_regularhours_example.json", schema: "Hours", pick: "opening_times"},
	{file: "location_energymix_example_simple.json", schema: "EnergyMix", pick: "energy_mix"},
	{file: "location_energymix_example_energy_provider.json", schema: "EnergyMix", pick: "energy_mix"},
	{file: "location_energymix_example_complete.json", schema: "EnergyMix", pick: "energy_mix"},
	{file: "type_displaytext_example.json", schema: "DisplayText"},
	{
		// The specification's "Example: add an EVSE" is not a valid EVSE: physical_reference
		// is a number where string(16) is required, and its connector lacks four required
		// fields. (Its "floor" should be "floor_level"; unknown fields are tolerated.)
		file:   "location_put_example_add_evse.json",
		schema: "EVSE",
		wantFailures: []string{
			"physical_reference: value must be a string",
			`connectors/0/power_type: property "power_type" is missing`,
			`connectors/0/max_voltage: property "max_voltage" is missing`,
			`connectors/0/max_amperage: property "max_amperage" is missing`,
			`connectors/0/last_updated: property "last_updated" is missing`,
		},
	},
}

// TestOCPIOfficialExamples validates the specification's own examples for these modules
// against the contract's schemas. None is edited: the one the specification gets wrong
// must fail, for its stated reasons and no others.
func TestOCPIOfficialExamples(t *testing.T) {
	doc := load(t, openapi.OCPISpec)
	files, err := filepath.Glob(filepath.Join(ocpiExamples, "*.json"))
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, ex := range ocpiOfficialExamples {
		listed[ex.file] = true
	}
	for _, f := range files {
		assert.True(t, listed[filepath.Base(f)], "%s is copied but not validated", f)
	}

	for _, ex := range ocpiOfficialExamples {
		t.Run(ex.file, func(t *testing.T) {
			schema := ocpiSchema(t, doc, ex.schema)
			value := readExample(t, ex.file)
			if ex.pick != "" {
				obj, ok := value.(map[string]any)
				require.True(t, ok)
				value, ok = obj[ex.pick]
				require.True(t, ok, "%s has no %q", ex.file, ex.pick)
			}
			failures := schemaFailures(schema.VisitJSON(value, openapi3.MultiErrors()))
			assert.ElementsMatch(t, ex.wantFailures, failures)
		})
	}
}

// TestOCPIFieldRules pins the choices the contract makes where the specification and its
// errata disagree or the specification contradicts itself, and a few of its plain limits,
// by editing one field of the specification's own valid Location example.
func TestOCPIFieldRules(t *testing.T) {
	doc := load(t, openapi.OCPISpec)
	location := ocpiSchema(t, doc, "Location")
	tests := []struct {
		name  string
		edit  func(l map[string]any)
		valid bool
	}{
		{"unchanged", func(map[string]any) {}, true},
		{"address of 255 characters (erratum: 45 became 255)", func(l map[string]any) { l["address"] = strings.Repeat("a", 255) }, true},
		{"address of 256 characters", func(l map[string]any) { l["address"] = strings.Repeat("a", 256) }, false},
		{"state of 45 characters (erratum: 20 became 45)", func(l map[string]any) { l["state"] = strings.Repeat("s", 45) }, true},
		{"state of 46 characters", func(l map[string]any) { l["state"] = strings.Repeat("s", 46) }, false},
		{"city of 46 characters", func(l map[string]any) { l["city"] = strings.Repeat("c", 46) }, false},
		{"latitude with 7 decimals in 10 characters", func(l map[string]any) { coordinates(l)["latitude"] = "51.0475991" }, true},
		{"latitude of 11 characters the regex allows", func(l map[string]any) { coordinates(l)["latitude"] = "-45.1234567" }, false},
		{"latitude with 4 decimals", func(l map[string]any) { coordinates(l)["latitude"] = "51.0475" }, false},
		{"latitude as a number", func(l map[string]any) { coordinates(l)["latitude"] = 51.047599 }, false},
		{"longitude of 12 characters the regex allows", func(l map[string]any) { coordinates(l)["longitude"] = "-126.1049651" }, false},
		{"DateTime without Z", func(l map[string]any) { l["last_updated"] = "2015-06-29T20:39:09" }, true},
		{"DateTime with fractional seconds", func(l map[string]any) { l["last_updated"] = "2018-01-01T01:08:01.123Z" }, true},
		{"DateTime with an offset", func(l map[string]any) { l["last_updated"] = "2015-06-29T20:39:09+02:00" }, false},
		{"DateTime over 25 characters", func(l map[string]any) { l["last_updated"] = "2018-01-01T01:08:01.12345Z" }, false},
		{"id of 37 characters", func(l map[string]any) { l["id"] = strings.Repeat("i", 37) }, false},
		{"id with a non-ASCII character", func(l map[string]any) { l["id"] = "LOC-é" }, false},
		{"name with a line break", func(l map[string]any) { l["name"] = "Gent\nZuid" }, false},
		{"country in lower case", func(l map[string]any) { l["country"] = "bel" }, false},
		{"party_id of 2 characters", func(l map[string]any) { l["party_id"] = "BE" }, false},
		{"unknown field", func(l map[string]any) { l["floor"] = -1 }, true},
		{"unknown ConnectorType", func(l map[string]any) { connector(l)["standard"] = "IEC_62196_T4" }, false},
		{"EVSE without connectors", func(l map[string]any) { evse(l)["connectors"] = []any{} }, false},
		{"EVSE physical_reference as a number", func(l map[string]any) { evse(l)["physical_reference"] = 3 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := readExample(t, "location_example.json").(map[string]any)
			tt.edit(l)
			err := location.VisitJSON(l)
			if tt.valid {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

func coordinates(l map[string]any) map[string]any { return l["coordinates"].(map[string]any) }
func evse(l map[string]any) map[string]any        { return l["evses"].([]any)[0].(map[string]any) }
func connector(l map[string]any) map[string]any {
	return evse(l)["connectors"].([]any)[0].(map[string]any)
}

// ocpiSchema finds a component schema, or with "Schema.property" one of its properties.
func ocpiSchema(t *testing.T, doc *openapi3.T, name string) *openapi3.Schema {
	t.Helper()
	component, property, _ := strings.Cut(name, ".")
	ref := doc.Components.Schemas[component]
	require.NotNil(t, ref, "schema %s", component)
	if property == "" {
		return ref.Value
	}
	prop := ref.Value.Properties[property]
	require.NotNil(t, prop, "schema %s has no %s", component, property)
	return prop.Value
}

func readExample(t *testing.T, file string) any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ocpiExamples, file))
	require.NoError(t, err)
	var value any
	require.NoError(t, json.Unmarshal(data, &value), file)
	return value
}

// schemaFailures flattens a validation error into "JSON pointer: reason" lines.
func schemaFailures(err error) []string {
	if err == nil {
		return nil
	}
	var multi openapi3.MultiError
	if errors.As(err, &multi) {
		var out []string
		for _, e := range multi {
			out = append(out, schemaFailures(e)...)
		}
		return out
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		return []string{strings.Join(se.JSONPointer(), "/") + ": " + se.Reason}
	}
	return []string{err.Error()}
}
