// Package outbox delivers what the store's outbox holds, at least once, with retries:
// the events subscribed to by API keys' webhooks, signed as the Standard Webhooks
// specification describes, and the pushes to OCPI partners' Locations receivers, which
// a Pusher (package ocpi) makes. Its Pruner keeps the event log, the delivery attempts
// and the outbox within their retention window.
package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/outbound"
	"github.com/chargenet/chargenet/metrics"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.opentelemetry.io/otel/trace"
)

// DefaultSchedule is the Standard Webhooks retry schedule: the delay before each retry
// after the first attempt, which is made at once.
var DefaultSchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
	10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour}

// Defaults of Config.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultPoll        = time.Second
	DefaultConcurrency = 64
	DefaultJitter      = 0.1
)

// Store is what a Dispatcher uses of a store: the outbox (chargenet.WebhookService).
type Store interface {
	ClaimDeliveries(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]chargenet.Delivery, error)
	RecordAttempts(ctx context.Context, records ...chargenet.AttemptRecord) error
}

// Config configures a Dispatcher. Store is required.
type Config struct {
	Store Store
	// Schedule is the delay before each retry; the attempt after the last one is not
	// made. Nil means DefaultSchedule.
	Schedule []time.Duration
	// Jitter adds up to this fraction of each delay at random (0.1: up to 10 %).
	// Negative means none; 0 means DefaultJitter.
	Jitter float64
	// Timeout bounds one attempt, from connecting to the end of the answer's headers.
	Timeout time.Duration
	// Poll is how often the outbox is checked when nothing signalled new events.
	Poll time.Duration
	// Concurrency is how many deliveries are in flight at most.
	Concurrency int
	// AllowInsecure lets deliveries reach loopback and private addresses
	// (development only). Without it a connection to a non-public address is refused
	// at dial time, whatever the URL's host name resolves to.
	AllowInsecure bool
	// Logger receives one line per failed attempt; nil discards.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Transport overrides the HTTP transport (tests); nil builds one from the above.
	Transport http.RoundTripper
	// Metrics, when set, counts the attempts by outcome and times the first attempts
	// from their change's commit; nil records nothing.
	Metrics *metrics.Metrics
	// Tracer, when set, runs each attempt in a client span, child of the change that
	// caused the event (Event.TraceParent), and sends its traceparent with the
	// delivery; nil traces nothing, and a delivery then carries the event's
	// traceparent as stored.
	Tracer trace.Tracer
	// Pusher makes the deliveries of partners' subscriptions (Webhook.Partner set);
	// nil fails them (and they are retried on the schedule) until a dispatcher with a
	// Pusher takes them.
	Pusher Pusher
}

// Pusher makes the deliveries of partners' subscriptions, which are OCPI pushes to
// their Locations RECEIVER rather than signed events, through client (the
// dispatcher's, with its address guard and timeout). It returns the HTTP status of the
// last request it made and an error unless the partner took the push.
type Pusher interface {
	Push(ctx context.Context, client *http.Client, dl *chargenet.Delivery) (status int, err error)
}

// errNoPusher fails a partner's delivery in a dispatcher without a Pusher.
var errNoPusher = errors.New("OCPI is not configured on this replica (--ocpi-country-code, --ocpi-party-id): the push waits for one that is")

// Dispatcher claims due deliveries from the store and makes them.
type Dispatcher struct {
	cfg     Config
	client  *http.Client
	wake    chan struct{}
	running atomic.Bool
}

// Running reports whether Run is delivering (it has started and ctx has not ended).
func (d *Dispatcher) Running() bool { return d.running.Load() }

// New returns a Dispatcher; call Run to start it. It returns an error if Store is nil.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Store == nil {
		return nil, errors.New("outbox: Store is required")
	}
	if cfg.Schedule == nil {
		cfg.Schedule = DefaultSchedule
	}
	if cfg.Jitter == 0 {
		cfg.Jitter = DefaultJitter
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	tr := cfg.Transport
	if tr == nil {
		tr = outbound.Transport(cfg.Timeout, cfg.Concurrency, cfg.AllowInsecure)
	}
	d := &Dispatcher{cfg: cfg, wake: make(chan struct{}, 1), client: outbound.ClientWith(tr, cfg.Timeout)}
	return d, nil
}

// Notify tells the dispatcher that new events may be due, so that it looks before the
// next poll. It never blocks.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then waits for the attempts in flight (each bounded by
// the timeout), records them and returns. Store errors are logged and retried at the
// next poll.
func (d *Dispatcher) Run(ctx context.Context) {
	d.running.Store(true)
	defer d.running.Store(false)
	records := make(chan chargenet.AttemptRecord, d.cfg.Concurrency)
	recorded := make(chan struct{})
	go func() { defer close(recorded); d.record(records) }()
	defer func() { close(records); <-recorded }()

	sem := make(chan struct{}, d.cfg.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-d.wake:
		}
		for ctx.Err() == nil {
			free := d.cfg.Concurrency - len(sem)
			if free == 0 {
				break
			}
			ds, err := d.cfg.Store.ClaimDeliveries(ctx, d.cfg.Now(), free, d.lease())
			if err != nil {
				if ctx.Err() == nil {
					d.cfg.Logger.Warn("claiming webhook deliveries", "error", err.Error())
				}
				break
			}
			for i := range ds {
				sem <- struct{}{}
				wg.Add(1)
				go func(dl chargenet.Delivery) {
					defer func() { <-sem; wg.Done(); d.Notify() }()
					records <- chargenet.AttemptRecord{Delivery: &dl, Attempt: d.attempt(context.WithoutCancel(ctx), &dl)}
				}(ds[i])
			}
			if len(ds) < free {
				break
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(d.cfg.Poll)
	}
}

// maxRecordBatch bounds how many attempts one store transaction records.
const maxRecordBatch = 64

// record writes the attempts sent on records until it is closed, those that arrive
// together in one store transaction (one sync for many deliveries).
func (d *Dispatcher) record(records <-chan chargenet.AttemptRecord) {
	batch := make([]chargenet.AttemptRecord, 0, maxRecordBatch)
	for r := range records {
		batch = append(batch[:0], r)
	more:
		for len(batch) < maxRecordBatch {
			select {
			case r, ok := <-records:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		// Recording must not be lost to a shutdown: it has its own deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := d.cfg.Store.RecordAttempts(ctx, batch...); err != nil {
			// The leases expire and the events are attempted again: at least once.
			d.cfg.Logger.Warn("recording webhook attempts", "attempts", len(batch), "error", err.Error())
		}
		cancel()
	}
}

// lease is how long a claimed delivery stays with this dispatcher: long enough for the
// attempt and recording it, short enough that a crash delays it little.
func (d *Dispatcher) lease() time.Duration { return 2*d.cfg.Timeout + 5*time.Second }

// attempt makes one attempt of dl and returns what to record.
func (d *Dispatcher) attempt(ctx context.Context, dl *chargenet.Delivery) *chargenet.DeliveryAttempt {
	start := d.cfg.Now()
	a := &chargenet.DeliveryAttempt{WebhookID: dl.Webhook.ID, EventID: dl.Event.ID, EventType: dl.Event.Type,
		Attempt: dl.Attempt, AttemptedAt: start.UTC()}
	if d.cfg.Tracer != nil {
		var span trace.Span
		ctx, span = d.startSpan(ctx, dl)
		defer func() { endSpan(span, a) }()
	}
	partner := dl.Webhook.Partner != ""
	var status int
	var err error
	switch {
	case !partner:
		status, err = d.send(ctx, dl, start)
	case d.cfg.Pusher == nil:
		err = errNoPusher
	default:
		status, err = d.cfg.Pusher.Push(ctx, d.client, dl)
	}
	a.Duration = d.cfg.Now().Sub(start)
	a.HTTPStatus = status
	defer func() {
		if partner {
			d.cfg.Metrics.OCPIPush(a.Outcome, d.cfg.Now().Sub(dl.Event.Time))
		} else {
			d.cfg.Metrics.WebhookAttempt(a.Outcome, dl.Attempt, start.Sub(dl.Event.Time))
		}
	}()
	switch {
	case err == nil && status >= 200 && status < 300:
		a.Outcome = chargenet.OutcomeSucceeded
	case err == nil && status == http.StatusGone && !partner:
		a.Outcome, a.Error = chargenet.OutcomeGone, "receiver answered 410 Gone; the webhook is disabled"
	default:
		a.Outcome = chargenet.OutcomeFailed
		if err != nil {
			a.Error = err.Error()
		} else {
			a.Error = fmt.Sprintf("receiver answered %d %s", status, http.StatusText(status))
		}
		if next, ok := d.nextAttempt(dl.Attempt, start); ok {
			a.NextAttemptAt = &next
		} else {
			a.Error += "; retries exhausted, the event is given up"
		}
		if partner {
			d.cfg.Logger.Warn("OCPI push failed", "partner_id", dl.Webhook.Partner, "event_id", dl.Event.ID,
				"attempt", dl.Attempt, "error", a.Error)
		} else {
			d.cfg.Logger.Warn("webhook delivery failed", "webhook_id", dl.Webhook.ID, "event_id", dl.Event.ID,
				"attempt", dl.Attempt, "error", a.Error)
		}
	}
	return a
}

// nextAttempt returns when attempt+1 is due after an attempt made at from, and false
// when the schedule has no more retries.
func (d *Dispatcher) nextAttempt(attempt int, from time.Time) (time.Time, bool) {
	if attempt < 1 || attempt > len(d.cfg.Schedule) {
		return time.Time{}, false
	}
	delay := d.cfg.Schedule[attempt-1]
	if d.cfg.Jitter > 0 {
		delay += time.Duration(rand.Float64() * d.cfg.Jitter * float64(delay))
	}
	return from.Add(delay).UTC(), true
}

// send posts the event to the webhook and returns the answer's status. The answer's
// body is read (up to 64 KiB) and discarded so that the connection is reused.
func (d *Dispatcher) send(ctx context.Context, dl *chargenet.Delivery, now time.Time) (int, error) {
	body, err := dl.Event.Render(dl.APIVersion)
	if err != nil {
		return 0, err
	}
	signature, err := Sign(&dl.Webhook, dl.Event.ID, now, body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dl.Webhook.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("bad webhook URL: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "chargenet-webhooks/1")
	req.Header.Set(standardwebhooks.HeaderWebhookID, dl.Event.ID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, signature)
	if tp := chargenet.TraceParent(ctx); tp != "" {
		req.Header.Set(headerTraceParent, tp) // the attempt's span, child of the change
	} else if dl.Event.TraceParent != "" {
		req.Header.Set(headerTraceParent, dl.Event.TraceParent)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, outbound.Describe(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// Sign returns the webhook-signature header value of a delivery: "v1,<base64>" with the
// webhook's secret, followed by a second signature with the previous secret while a
// rotation's overlap lasts (until PreviousSecretUntil). It returns an error if a
// secret is not valid base64.
func Sign(w *chargenet.Webhook, msgID string, at time.Time, body []byte) (string, error) {
	secrets := []string{w.Secret}
	if w.PreviousSecret != "" && at.Before(w.PreviousSecretUntil) {
		secrets = append(secrets, w.PreviousSecret)
	}
	sigs := make([]string, 0, len(secrets))
	for _, secret := range secrets {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return "", fmt.Errorf("webhook %s: signing secret: %w", w.ID, err)
		}
		sig, err := wh.Sign(msgID, at, body)
		if err != nil {
			return "", err
		}
		sigs = append(sigs, sig)
	}
	return strings.Join(sigs, " "), nil
}
