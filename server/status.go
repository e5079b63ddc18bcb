package server

import (
	"context"
	"net/http"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/intake"
)

// statuses applies the status notifications posted for charge boxes, through the
// application path the OCPP listener uses too.
type statuses struct {
	intake *intake.Service
}

// IngestStatusNotification answers POST
// /internal/v1/chargeboxes/{chargeboxId}/status-notifications: it decodes the
// notification, applies it through the application path (intake.Service, as OCPP's
// are) on behalf of the calling key, and answers what it did.
func (s *statuses) IngestStatusNotification(ctx context.Context, req gen.IngestStatusNotificationRequestObject) (gen.IngestStatusNotificationResponseObject, error) {
	if req.Body == nil {
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "", "request body is required")
	}
	n := &chargenet.StatusNotification{ChargeboxID: req.ChargeboxId, ConnectorID: req.Body.ConnectorId,
		Status: string(req.Body.Status), ErrorCode: chargenet.ErrorCode(req.Body.ErrorCode), Info: deref(req.Body.Info),
		VendorErrorCode: deref(req.Body.VendorErrorCode)}
	if req.Body.Timestamp != nil {
		n.Timestamp = *req.Body.Timestamp
	}
	res, err := s.intake.StatusNotification(ctx, intake.Key(actor(ctx)), n)
	if err != nil {
		return nil, err
	}
	out := gen.StatusNotificationResult{Applied: res.Applied, Reason: optional(res.Reason), Evses: make([]gen.EvseStatusResult, len(res.EVSEs))}
	for i, c := range res.EVSEs {
		out.Evses[i] = gen.EvseStatusResult{Uid: c.UID, Status: gen.EvseStatus(c.Status), PreviousStatus: gen.EvseStatus(c.Previous),
			Version: c.Version, Reason: optional(c.Reason)}
	}
	return gen.IngestStatusNotification200JSONResponse{Body: out}, nil
}
