package client

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/chargenet/chargenet/gen"
)

// Chargebox returns the charge box id, registered to connect over OCPP: whether it is
// connected, what its last BootNotification said, its EVSEs, and the availability the
// operator last asked of them with the box's answer.
//
// It fails with ErrNotFound if no charge box id is registered (one whose EVSEs exist but
// whose statuses come through the ingestion operation is not), ErrInvalid if id is not
// positive, ErrForbidden if the API key is not accepted or lacks the inventory:read
// scope, and ErrRateLimited or ErrUnavailable if the service still refuses after the
// retries.
func (c *Client) Chargebox(ctx context.Context, id int64, opts ...CallOption) (*Chargebox, error) {
	o := newCallOptions(opts)
	op := fmt.Sprintf("GET /v2/chargeboxes/%d", id)
	res, err := c.api.GetChargebox(ctx, id)
	if err := c.answer(op, o, nil, res, err); err != nil {
		return nil, err
	}
	parsed, err := gen.ParseGetChargeboxResponse(res)
	if err != nil || parsed.JSON200 == nil {
		return nil, decodeError(op, res, err)
	}
	b := chargeboxFromAPI(parsed.JSON200)
	return &b, nil
}

// ChargeboxesPage returns one page of the registered charge boxes in ascending ID
// order, each as Chargebox returns it. Pass the page's NextCursor (or PreviousCursor) in
// the next PageRequest to move through the list.
//
// It fails with ErrInvalid if the cursor was not issued for this list or was altered
// (code invalid_cursor) or the limit is out of range (code invalid_parameter),
// ErrForbidden if the API key is not accepted or lacks the inventory:read scope, and
// ErrRateLimited or ErrUnavailable if the service still refuses after the retries.
func (c *Client) ChargeboxesPage(ctx context.Context, req PageRequest, opts ...CallOption) (*ChargeboxPage, error) {
	o := newCallOptions(opts)
	const op = "GET /v2/chargeboxes"
	var params gen.ListChargeboxesParams
	params.Cursor, params.Limit = req.params()
	res, err := c.api.ListChargeboxes(ctx, &params)
	if err := c.answer(op, o, nil, res, err); err != nil {
		return nil, err
	}
	parsed, err := gen.ParseListChargeboxesResponse(res)
	if err != nil || parsed.JSON200 == nil {
		return nil, decodeError(op, res, err)
	}
	return newPage(parsed.JSON200.Data, parsed.JSON200.Pagination, chargeboxFromAPI), nil
}

// Chargeboxes iterates over all registered charge boxes in ascending ID order, fetching
// opts.PageSize at a time as the loop asks for them; breaking out of the loop stops
// fetching.
//
//	for box, err := range c.Chargeboxes(ctx, client.ListOptions{}) {
//		if err != nil {
//			return err
//		}
//		...
//	}
//
// A failure is yielded once, as the error of the last iteration, with the errors of
// ChargeboxesPage.
func (c *Client) Chargeboxes(ctx context.Context, opts ListOptions) iter.Seq2[Chargebox, error] {
	return all(ctx, opts, func(ctx context.Context, req PageRequest) (*ChargeboxPage, error) {
		return c.ChargeboxesPage(ctx, req)
	})
}

// Protocol is the OCPP version a charge box is connected with.
type Protocol string

// The OCPP versions of the contract.
const (
	ProtocolOCPP16  Protocol = "ocpp1.6"
	ProtocolOCPP201 Protocol = "ocpp2.0.1"
)

// AvailabilityState is the availability the service asked of a charge box for one of
// its EVSEs (OCPP ChangeAvailability).
type AvailabilityState string

// The availability states: AvailabilityInoperative when the operator set the EVSE
// StatusInoperative, AvailabilityOperative when it set it back into service.
const (
	AvailabilityOperative   AvailabilityState = "Operative"
	AvailabilityInoperative AvailabilityState = "Inoperative"
)

// AvailabilityAnswer is a charge box's answer to an availability request. The service
// may add values; compare against the constants.
type AvailabilityAnswer string

// The answers of the contract: AnswerPending until the box answers (also while it is
// not connected: it is asked again when it connects), then the box's own.
const (
	AnswerPending   AvailabilityAnswer = "pending"
	AnswerAccepted  AvailabilityAnswer = "Accepted"
	AnswerRejected  AvailabilityAnswer = "Rejected"
	AnswerScheduled AvailabilityAnswer = "Scheduled"
)

// Chargebox is a charge box registered to connect over OCPP, with the state of its
// connection. Its ID is the ChargeboxID of its EVSEs.
type Chargebox struct {
	// ID identifies the charge box, as its EVSEs' ChargeboxID names it.
	ID int64
	// Identity is what the box connects with: the last part of its URL and its Basic
	// auth user name.
	Identity string
	// Connected reports whether the box is connected. A connection whose server stopped
	// without ending it counts until nothing was heard from the box for the service's
	// offline timeout.
	Connected bool
	// Protocol is the OCPP version of the connection; empty while not connected.
	Protocol Protocol
	// ConnectedAt is when the current connection began; nil while not connected.
	ConnectedAt *time.Time
	// LastSeenAt is when something last came from the box (updated at least once a
	// minute while connected); nil before its first connection.
	LastSeenAt *time.Time
	// Boot is what the box's last BootNotification said; nil before its first.
	Boot *ChargeboxBoot
	// EVSEUIDs are the UIDs of the box's EVSEs, ascending (removed ones included).
	EVSEUIDs []int64
	// Availability holds, for each EVSE whose availability the operator changed, the
	// last request made of the box; ascending EVSEUID.
	Availability []Availability
}

// ChargeboxBoot is what a charge box's BootNotification said about it.
type ChargeboxBoot struct {
	// Vendor and Model are the box's (OCPP 1.6 chargePointVendor and chargePointModel).
	Vendor, Model string
	// SerialNumber is the box's serial number, or empty when it sent none.
	SerialNumber string
	// FirmwareVersion is the box's firmware version, or empty when it sent none.
	FirmwareVersion string
	// BootedAt is when the BootNotification arrived.
	BootedAt time.Time
}

// Availability is the availability last asked of a charge box for one of its EVSEs,
// and the box's answer. The EVSE's status changes as the operator set it whatever the
// box answers.
type Availability struct {
	// EVSEUID is the EVSE's UID.
	EVSEUID int64
	// State is what was asked.
	State AvailabilityState
	// RequestedAt is when the service asked.
	RequestedAt time.Time
	// Answer is AnswerPending until the box answers, then its answer.
	Answer AvailabilityAnswer
	// AnsweredAt is when the box answered; nil while pending.
	AnsweredAt *time.Time
}

// ChargeboxPage is one page of charge boxes, as returned by ChargeboxesPage.
type ChargeboxPage = Page[Chargebox]

func chargeboxFromAPI(a *gen.RegisteredChargebox) Chargebox {
	b := Chargebox{
		ID:           a.ChargeboxId,
		Identity:     a.Identity,
		Connected:    a.Connected,
		ConnectedAt:  timeOf(a.ConnectedAt),
		LastSeenAt:   timeOf(a.LastSeenAt),
		EVSEUIDs:     a.EvseUids,
		Availability: make([]Availability, len(a.Availability)),
	}
	if a.Protocol != nil {
		b.Protocol = Protocol(*a.Protocol)
	}
	if b.EVSEUIDs == nil {
		b.EVSEUIDs = []int64{}
	}
	if a.Boot != nil {
		b.Boot = &ChargeboxBoot{Vendor: a.Boot.Vendor, Model: a.Boot.Model, BootedAt: a.Boot.BootedAt.Time}
		if a.Boot.SerialNumber != nil {
			b.Boot.SerialNumber = *a.Boot.SerialNumber
		}
		if a.Boot.FirmwareVersion != nil {
			b.Boot.FirmwareVersion = *a.Boot.FirmwareVersion
		}
	}
	for i, av := range a.Availability {
		b.Availability[i] = Availability{
			EVSEUID:     av.EvseUid,
			State:       AvailabilityState(av.State),
			RequestedAt: av.RequestedAt.Time,
			Answer:      AvailabilityAnswer(av.Answer),
			AnsweredAt:  timeOf(av.AnsweredAt),
		}
	}
	return b
}
