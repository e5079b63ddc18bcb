package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/internal/httpcheck"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/getkin/kin-openapi/openapi3"
)

// inventorySpec loads the embedded contract once (a load costs milliseconds); the
// schemas are only read afterwards.
var inventorySpec = sync.OnceValues(gen.GetSpec)

// DecodeInventory reads an import file, {"locations": [...], "evses": [...]}, whose
// records are objects of the contract's Location and EVSE schemas. Each record is checked
// against its schema, then against the domain rules (Inventory.Validate). The error is an
// ErrInvalid *chargenet.Error naming the first bad record by list, index and field, as in
// `evses[3].connectors[0].standard: value is not one of the allowed values`.
func DecodeInventory(r io.Reader) (*chargenet.Inventory, error) {
	doc, err := inventorySpec()
	if err != nil {
		return nil, fmt.Errorf("loading the embedded contract: %w", err)
	}
	var file struct {
		Locations []json.RawMessage `json:"locations"`
		EVSEs     []json.RawMessage `json:"evses"`
	}
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, chargenet.Errorf(chargenet.ErrInvalid, chargenet.CodeInvalidBody, "", "import file is not a JSON object {\"locations\": [...], \"evses\": [...]}: %v", err)
	}
	inv := &chargenet.Inventory{
		Locations: make([]chargenet.Location, len(file.Locations)),
		EVSEs:     make([]chargenet.EVSE, len(file.EVSEs)),
	}
	for i, raw := range file.Locations {
		var l gen.Location
		if err := decodeRecord(doc, "Location", fmt.Sprintf("locations[%d]", i), raw, &l); err != nil {
			return nil, err
		}
		inv.Locations[i] = wire.ParseLocation(&l)
	}
	for i, raw := range file.EVSEs {
		var e gen.EVSE
		if err := decodeRecord(doc, "EVSE", fmt.Sprintf("evses[%d]", i), raw, &e); err != nil {
			return nil, err
		}
		inv.EVSEs[i] = wire.ParseEVSE(&e)
	}
	if err := inv.Validate(); err != nil {
		return nil, err
	}
	return inv, nil
}

func decodeRecord(doc *openapi3.T, schema, where string, raw json.RawMessage, dst any) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return chargenet.Errorf(chargenet.ErrInvalid, chargenet.CodeInvalidBody, where, "%s: %v", where, err)
	}
	if err := doc.Components.Schemas[schema].Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		var me openapi3.MultiError
		if errors.As(err, &me) && len(me) > 0 {
			err = me[0]
		}
		var se *openapi3.SchemaError
		if errors.As(err, &se) {
			field := where
			if p := se.JSONPointer(); len(p) > 0 {
				field += "." + strings.Join(p, ".")
			}
			return chargenet.Errorf(chargenet.ErrInvalid, chargenet.CodeInvalidBody, field, "%s: %s", field, httpcheck.SchemaReason(se))
		}
		return chargenet.Errorf(chargenet.ErrInvalid, chargenet.CodeInvalidBody, where, "%s: %v", where, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return chargenet.Errorf(chargenet.ErrInvalid, chargenet.CodeInvalidBody, where, "%s: %v", where, err)
	}
	return nil
}
