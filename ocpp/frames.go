package ocpp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/lorenzodonini/ocpp-go/ocpp"
	"github.com/lorenzodonini/ocpp-go/ocppj"
	"github.com/lorenzodonini/ocpp-go/ws"
	"gopkg.in/go-playground/validator.v9"
)

// The OCPP-J error codes ocpp-go lacks or spells otherwise.
const (
	// rpcFrameworkError is OCPP 2.0.1's code for a frame that is no valid RPC message
	// (its message id could not be read, the array has the wrong shape).
	rpcFrameworkError ocpp.ErrorCode = "RpcFrameworkError"
	// occurenceConstraintViolation is OCPP 1.6's spelling (sic) of a missing required
	// field; ocpp-go v0.19.0 sends 2.0.1's spelling to 1.6 boxes.
	occurenceConstraintViolation ocpp.ErrorCode = "OccurenceConstraintViolation"
)

// unknownID is the message id of a CALLERROR answering a frame whose id could not be
// read, as OCPP-J 2.0.1 prescribes ("-1").
const unknownID = "-1"

// maxIDLength is OCPP-J's bound on a message id.
const maxIDLength = 36

var errorCodesOnce sync.Once

// registerErrorCodes makes ocpp-go accept rpcFrameworkError and 1.6's spelling
// occurenceConstraintViolation in the CallErrors it sends: it validates each against
// its list of codes, which lacks both. New calls it; it acts once per process.
//
// The setting is process-wide: ocppj.Validate is a global of ocpp-go, so every user of
// ocpp-go in the process (a charge-point side in a test, say) accepts the two codes too.
// validator.v9 caches a struct's rules at its first use, so it must run before the
// process creates any CallError; the service creates none before New.
func registerErrorCodes() {
	errorCodesOnce.Do(func() {
		_ = ocppj.Validate.RegisterValidation("errorCode", func(fl validator.FieldLevel) bool {
			switch ocpp.ErrorCode(fl.Field().String()) {
			case rpcFrameworkError, occurenceConstraintViolation:
				return true
			}
			return ocppj.IsErrorCodeValid(fl)
		})
	})
}

// dialect is what differs between the OCPP-J of 1.6 and of 2.0.1.
type dialect struct {
	v201 bool
}

// framing returns the code of a frame that is no valid RPC message.
func (d dialect) framing() ocpp.ErrorCode {
	if d.v201 {
		return rpcFrameworkError
	}
	return ocppj.FormatViolationV16
}

// frameError is a CALLERROR to send for a malformed frame.
type frameError struct {
	id          string
	code        ocpp.ErrorCode
	description string
}

// checkFrame finds what ocpp-go v0.19.0 would drop without an answer or answer with
// the wrong code: a frame that is not a JSON array, a message id that is not a string
// of 1 to 36 characters, a message type other than 2, 3 or 4, a CALL that is not
// [2, id, action, {payload}], a CALLRESULT or CALLERROR of the wrong length. It returns
// nil for a frame the OCPP-J layer can take.
func (d dialect) checkFrame(data []byte) *frameError {
	var arr []json.RawMessage
	if err := json.Unmarshal(data, &arr); err != nil {
		return &frameError{unknownID, d.framing(), "the frame is not a JSON array: " + jsonProblem(err)}
	}
	if len(arr) < 3 {
		return &frameError{unknownID, d.framing(), fmt.Sprintf("a message is an array of at least 3 elements, this one has %d", len(arr))}
	}
	var id string
	if err := json.Unmarshal(arr[1], &id); err != nil || id == "" || len(id) > maxIDLength {
		return &frameError{unknownID, d.framing(), "element 1, the message id, must be a string of 1 to 36 characters"}
	}
	var typ int
	if err := json.Unmarshal(arr[0], &typ); err != nil {
		return &frameError{id, d.framing(), "element 0, the message type, must be 2 (CALL), 3 (CALLRESULT) or 4 (CALLERROR)"}
	}
	switch typ {
	case 2:
		var action string
		switch {
		case len(arr) != 4:
			return &frameError{id, d.framing(), fmt.Sprintf("a CALL is [2, id, action, payload], this one has %d elements", len(arr))}
		case json.Unmarshal(arr[2], &action) != nil || action == "":
			return &frameError{id, d.framing(), "element 2 of a CALL, the action, must be a non-empty string"}
		case !bytes.HasPrefix(bytes.TrimSpace(arr[3]), []byte("{")):
			return &frameError{id, ocppj.TypeConstraintViolation, "element 3 of a CALL, the payload, must be a JSON object"}
		}
	case 3:
		if len(arr) != 3 {
			return &frameError{id, d.framing(), fmt.Sprintf("a CALLRESULT is [3, id, payload], this one has %d elements", len(arr))}
		}
	case 4:
		if len(arr) != 5 {
			return &frameError{id, d.framing(), fmt.Sprintf("a CALLERROR is [4, id, code, description, details], this one has %d elements", len(arr))}
		}
	default:
		code := d.framing()
		if d.v201 {
			code = ocppj.MessageTypeNotSupported
		}
		return &frameError{id, code, fmt.Sprintf("message type %d is not 2 (CALL), 3 (CALLRESULT) or 4 (CALLERROR)", typ)}
	}
	return nil
}

// jsonProblem describes a JSON decoding error without echoing the frame.
func jsonProblem(err error) string {
	switch e := err.(type) {
	case *json.SyntaxError:
		return fmt.Sprintf("invalid JSON at byte %d", e.Offset)
	case *json.UnmarshalTypeError:
		return "a JSON " + e.Value + " instead of an array"
	}
	return "invalid JSON"
}

// unmarshalRe reads encoding/json's text for a value of the wrong type.
var unmarshalRe = regexp.MustCompile(`cannot unmarshal (\w+) into Go (?:struct field \w+\.(\S+)|value) of type (\S+)`)

// validationRe reads validator.v9's text for a failed rule.
var validationRe = regexp.MustCompile(`Key: '([^']+)' Error:Field validation for '[^']+' failed on the '([^']+)' tag`)

// fixError corrects the code ocpp-go v0.19.0 chose for a CALL it could not parse (its
// invalid-message hook): an unknown action is NotImplemented (the library says
// NotSupported, which OCPP reserves for actions it knows but does not serve); a payload
// whose JSON types do not fit is TypeConstraintViolation (the library says
// FormationViolation); a value that breaks a rule other than a bound is
// PropertyConstraintViolation (the library says GenericError, with the validator's
// text); and a 1.6 box gets 1.6's spelling of OccurenceConstraintViolation.
func (d dialect) fixError(_ ws.Channel, err *ocpp.Error, _ string, _ []any) *ocpp.Error {
	out := *err
	switch err.Code {
	case ocppj.NotSupported:
		out.Code = ocppj.NotImplemented
		out.Description = "unknown action: " + strings.TrimPrefix(err.Description, "Unsupported feature ")
	case ocppj.FormatViolationV16, ocppj.FormatViolationV2:
		out.Code = ocppj.TypeConstraintViolation
		out.Description = "the payload does not fit the action's schema"
		if m := unmarshalRe.FindStringSubmatch(err.Description); m != nil {
			out.Description = fmt.Sprintf("field %s: a JSON %s where the action's schema wants %s", m[2], m[1], m[3])
		}
	case ocppj.GenericError:
		out.Code = ocppj.PropertyConstraintViolation
		if m := validationRe.FindStringSubmatch(err.Description); m != nil {
			out.Description = fmt.Sprintf("field %s breaks the rule %q of the action's schema", m[1], m[2])
		}
	case ocppj.OccurrenceConstraintViolation:
		if !d.v201 {
			out.Code = occurenceConstraintViolation
		}
	}
	return &out
}
