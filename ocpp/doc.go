// Package ocpp is chargenet's OCPP-J endpoint: charge boxes connect to
// ws(s)://HOST:PORT/ocpp/{identity} over OCPP 1.6 or 2.0.1 with HTTP Basic auth (OCPP
// Security Profiles 1 and 2), and their StatusNotifications take the application path
// of package intake, as the HTTP ingestion's do (stamping, actor, metrics, tracing, the
// store's group commit, events, webhooks, ordering): the package only decodes a message
// and answers it. The CALLRESULT is sent once the change is committed.
//
// It keeps from github.com/lorenzodonini/ocpp-go v0.19.0 the message types and their
// validation, the profiles, the OCPP-J framing (ocppj) and the typed CentralSystem and
// CSMS with their handlers, and replaces two parts measured unfit:
//
//   - The WebSocket server (package ws), with transport: one goroutine and about 14 KiB
//     per idle box instead of two and 27 KiB; a read limit, a handshake timeout, server
//     pings and an idle timeout, one unanswered CALL per box and a per-box rate limit
//     (the library has none of them); a second connection of an identity replaces the
//     first (the library refuses it); and none of the library's failures: a box that
//     stops reading freezes every box (upstream issue #291, PRs #408 and #414), and
//     concurrent StopConnection calls panic with "send on closed channel".
//   - The default dispatcher and its ServerState (package ocppj), with dispatcher: when
//     many boxes disconnect at once they deadlock and no box is answered again
//     (upstream issue #358, PR #412), and every inbound message of every box takes one
//     exclusive lock.
//
// frames.go answers what the library drops or misjudges: frames without a readable
// message id (RpcFrameworkError / FormationViolation with id "-1"), unknown actions
// (NotImplemented, not NotSupported), payloads of the wrong JSON type
// (TypeConstraintViolation), rule violations (PropertyConstraintViolation, not
// GenericError) and 1.6's spelling OccurenceConstraintViolation.
//
// Connections are recorded through chargenet.ChargeboxService: a box's end turns its
// EVSEs in service UNKNOWN. The availability the operator sets (an EVSE INOPERATIVE and
// back), which intake records as owed, is sent to the box as ChangeAvailability; with
// several servers on PostgreSQL, the one holding the box's connection sends it.
//
// Two settings of ocpp-go are process-wide, made by the first New of the process: the
// extra error codes its validator accepts (registerErrorCodes) and its logger
// (setLibraryLogger). Every Service of the process shares them.
package ocpp
