package intake_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/intake"
	"github.com/chargenet/chargenet/metrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// store records the calls it gets and answers what it is told to.
type store struct {
	mu     sync.Mutex
	result *chargenet.StatusResult
	err    error
	owed   []chargenet.AvailabilityRequest

	notes  []chargenet.StatusNotification
	actors []string
	nows   []time.Time
	spans  []trace.SpanContext // the span of each call's context
	owes   []int64
}

func (s *store) ApplyStatusNotification(ctx context.Context, n *chargenet.StatusNotification, actor string, now time.Time) (*chargenet.StatusResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes, s.actors, s.nows = append(s.notes, *n), append(s.actors, actor), append(s.nows, now)
	s.spans = append(s.spans, trace.SpanContextFromContext(ctx))
	if s.err != nil {
		return nil, s.err
	}
	return s.result, nil
}

func (s *store) OweAvailability(ctx context.Context, id int64, now time.Time) ([]chargenet.AvailabilityRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.owes, s.nows = append(s.owes, id), append(s.nows, now)
	if s.err != nil {
		return nil, s.err
	}
	return s.owed, nil
}

// clock is 2026-11-22 10:00:00.123456789 in UTC+1: the path must stamp it in UTC, to
// the microsecond.
var clock = time.Date(2026, 11, 22, 11, 0, 0, 123456789, time.FixedZone("CET", 3600))

var stamped = time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC)

func TestStatusNotification(t *testing.T) {
	boxTime := time.Date(2026, 11, 22, 10, 59, 0, 5, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		name      string
		from      intake.Sender
		timestamp time.Time
		result    *chargenet.StatusResult
		err       error

		actor   string
		stamped time.Time // the notification's timestamp as the store gets it
		metric  string
	}{
		{"from a box, no timestamp, applied", intake.Chargebox("CB-521"), time.Time{}, &chargenet.StatusResult{Applied: true}, nil,
			"chargebox:CB-521", stamped, metrics.NotificationApplied},
		{"from a key, the box's time, stale", intake.Key("gateway"), boxTime, &chargenet.StatusResult{}, nil,
			"gateway", boxTime.UTC(), metrics.NotificationStale},
		{"unknown box", intake.Key("gateway"), time.Time{}, nil, chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "chargeboxId", "no"),
			"gateway", stamped, metrics.NotificationUnknownChargebox},
		{"refused by a rule", intake.Chargebox("501"), time.Time{}, nil, chargenet.Errorf(chargenet.ErrInvalid, chargenet.CodeInvalidBody, "timestamp", "ahead"),
			"chargebox:501", stamped, metrics.NotificationInvalid},
		{"deleted connector", intake.Chargebox("501"), time.Time{}, nil, chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConnectorDeleted, "connectorId", "deleted"),
			"chargebox:501", stamped, metrics.NotificationInvalid},
		{"the store fails", intake.Chargebox("501"), time.Time{}, nil, chargenet.ErrUnavailable,
			"chargebox:501", stamped, metrics.NotificationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &store{result: tc.result, err: tc.err}
			m := metrics.New()
			svc, err := intake.New(intake.Config{Store: st, Metrics: m, Now: func() time.Time { return clock }})
			require.NoError(t, err)
			n := &chargenet.StatusNotification{ChargeboxID: 521, ConnectorID: 1, Status: "Available", ErrorCode: "NoError", Timestamp: tc.timestamp}
			res, err := svc.StatusNotification(context.Background(), tc.from, n)
			assert.Equal(t, tc.result, res)
			assert.Equal(t, tc.err, err)
			require.Len(t, st.notes, 1)
			assert.Equal(t, tc.actor, st.actors[0])
			assert.Equal(t, stamped, st.nows[0], "chargenet's clock, in UTC, to the microsecond")
			assert.Equal(t, tc.stamped, st.notes[0].Timestamp)
			assert.Equal(t, time.UTC, st.notes[0].Timestamp.Location())
			assert.Equal(t, int64(521), st.notes[0].ChargeboxID)
			for _, result := range []string{metrics.NotificationApplied, metrics.NotificationStale, metrics.NotificationUnknownChargebox,
				metrics.NotificationInvalid, metrics.NotificationFailed} {
				want := 0.0
				if result == tc.metric {
					want = 1
				}
				assert.Equal(t, want, counted(t, m, result), result)
			}
		})
	}
}

// counted returns the count of status notifications with result.
func counted(t *testing.T, m *metrics.Metrics, result string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "chargenet_status_notifications_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return s.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestStatusNotificationSpan: a notification outside any span (over OCPP) gets a server
// span of its own in which the store works; one inside a span (an HTTP request's) gets
// none, and the store works in the request's.
func TestStatusNotificationSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	for _, tc := range []struct {
		name     string
		err      error
		inSpan   bool
		failed   bool // the span's status is Error
		newSpans int
	}{
		{"outside a span", nil, false, false, 1},
		{"outside a span, refused by a rule", chargenet.Errorf(chargenet.ErrInvalid, chargenet.CodeInvalidBody, "status", "no"), false, false, 1},
		{"outside a span, the store fails", chargenet.ErrUnavailable, false, true, 1},
		{"inside a request's span", nil, true, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &store{result: &chargenet.StatusResult{Applied: true}, err: tc.err}
			svc, err := intake.New(intake.Config{Store: st, Tracer: tracer})
			require.NoError(t, err)
			ctx := context.Background()
			var request trace.Span
			if tc.inSpan {
				ctx, request = tracer.Start(ctx, "ingestStatusNotification")
			}
			before := len(rec.Ended())
			_, _ = svc.StatusNotification(ctx, intake.Chargebox("501"), &chargenet.StatusNotification{ChargeboxID: 501})
			if request != nil {
				request.End()
			}
			ended := rec.Ended()[before:]
			require.Len(t, st.spans, 1)
			require.True(t, st.spans[0].IsValid(), "the store works in a span")
			if tc.inSpan {
				require.Len(t, ended, 1)
				assert.Equal(t, request.SpanContext(), st.spans[0], "the request's span")
				return
			}
			require.Len(t, ended, tc.newSpans)
			span := ended[0]
			assert.Equal(t, "StatusNotification", span.Name())
			assert.Equal(t, trace.SpanKindServer, span.SpanKind())
			assert.False(t, span.Parent().IsValid(), "a trace of its own")
			assert.Equal(t, span.SpanContext(), st.spans[0], "the store works in the message's span")
			assert.Equal(t, tc.failed, span.Status().Code == codes.Error, span.Status())
		})
	}
}

func TestEVSEChanged(t *testing.T) {
	owed := []chargenet.AvailabilityRequest{{EVSEUID: 1002, ChargeboxID: 501, State: chargenet.Inoperative, Answer: chargenet.AnswerPending}}
	for _, tc := range []struct {
		name          string
		before, after chargenet.EvseStatus
		err           error
		noDeliver     bool // the process has no Deliver: the rule is off
		asked         bool // the store is asked what the box owes
		delivered     bool
		logged        bool
	}{
		{"into INOPERATIVE", chargenet.StatusAvailable, chargenet.StatusInoperative, nil, false, true, true, false},
		{"out of INOPERATIVE", chargenet.StatusInoperative, chargenet.StatusAvailable, nil, false, true, true, false},
		{"out of INOPERATIVE into PLANNED", chargenet.StatusInoperative, chargenet.StatusPlanned, nil, false, true, true, false},
		{"INOPERATIVE unchanged", chargenet.StatusInoperative, chargenet.StatusInoperative, nil, false, false, false, false},
		{"another status", chargenet.StatusAvailable, chargenet.StatusOutOfOrder, nil, false, false, false, false},
		{"a box not registered for OCPP", chargenet.StatusAvailable, chargenet.StatusInoperative,
			chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "chargeboxId", "no"), false, true, false, false},
		{"the store fails", chargenet.StatusAvailable, chargenet.StatusInoperative, chargenet.ErrUnavailable, false, true, false, true},
		{"no Deliver", chargenet.StatusAvailable, chargenet.StatusInoperative, nil, true, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &store{owed: owed, err: tc.err}
			var logs bytes.Buffer
			var got [][]chargenet.AvailabilityRequest
			var to []int64
			cfg := intake.Config{Store: st, Now: func() time.Time { return clock }, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				Deliver: func(id int64, o []chargenet.AvailabilityRequest) {
					to, got = append(to, id), append(got, o)
				}}
			if tc.noDeliver {
				cfg.Deliver = nil
			}
			svc, err := intake.New(cfg)
			require.NoError(t, err)
			svc.EVSEChanged(context.Background(), tc.before, &chargenet.EVSE{UID: 1002, ChargeboxID: 501, Status: tc.after})
			if tc.asked {
				assert.Equal(t, []int64{501}, st.owes)
				assert.Equal(t, []time.Time{stamped}, st.nows)
			} else {
				assert.Empty(t, st.owes)
			}
			if tc.delivered {
				assert.Equal(t, []int64{501}, to)
				assert.Equal(t, [][]chargenet.AvailabilityRequest{owed}, got)
			} else {
				assert.Empty(t, to)
			}
			assert.Equal(t, tc.logged, bytes.Contains(logs.Bytes(), []byte("level=WARN")), logs.String())
		})
	}
}

func TestOwed(t *testing.T) {
	owed := []chargenet.AvailabilityRequest{{EVSEUID: 1001, ChargeboxID: 501, State: chargenet.Operative, Answer: chargenet.AnswerPending}}
	st := &store{owed: owed}
	svc, err := intake.New(intake.Config{Store: st, Now: func() time.Time { return clock }})
	require.NoError(t, err)
	got, err := svc.Owed(context.Background(), 501)
	require.NoError(t, err)
	assert.Equal(t, owed, got)
	assert.Equal(t, []int64{501}, st.owes)
	assert.Equal(t, []time.Time{stamped}, st.nows)

	st.err = errors.New("disk on fire")
	_, err = svc.Owed(context.Background(), 501)
	assert.ErrorIs(t, err, st.err)
}

func TestNew(t *testing.T) {
	_, err := intake.New(intake.Config{})
	assert.EqualError(t, err, "intake: Store is required")
}
