package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/labstack/echo/v4"
)

// Idempotency-Key handling (IETF draft "The Idempotency-Key HTTP Header Field"): the
// answer of a POST that created something is kept by the store, in the transaction that
// created it, for chargenet.IdempotencyTTL per API key; a retry with the key gets it
// again.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
)

// idempotentRoutes are the Echo routes (method and path) whose operations take an
// Idempotency-Key.
var idempotentRoutes = map[string]bool{
	http.MethodPost + " /v2/evses":                 true,
	http.MethodPost + " /v2/evses/:uid/connectors": true,
	http.MethodPost + " /emsp/v1/webhooks":         true,
}

// idempotencyKey is the request context key of the pending *chargenet.Idempotency.
type idempotencyKey struct{}

// idempotencyStore is what the idempotency guard uses of a store.
type idempotencyStore interface {
	IdempotentAnswer(ctx context.Context, owner, key string, now time.Time) (*chargenet.IdempotentAnswer, error)
}

// idempotencyGuard answers retries from kept answers and refuses a key that is in use by
// a request still running on this server.
type idempotencyGuard struct {
	store idempotencyStore
	now   func() time.Time

	mu      sync.Mutex
	running map[string]bool // owner + "\x00" + key
}

// middleware handles the Idempotency-Key of the operations that take one. It runs after
// the validator: the caller is authenticated and the key's length checked.
func (g *idempotencyGuard) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		key := req.Header.Get(headerIdempotencyKey)
		if key == "" || !idempotentRoutes[req.Method+" "+c.Path()] {
			return next(c)
		}
		ctx := req.Context()
		who := owner(ctx)
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return err // the body limit's *http.MaxBytesError (413), or a broken connection
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		fp := fingerprint(req.Method, req.URL.Path, body)

		slot := who + "\x00" + key
		g.mu.Lock()
		busy := g.running[slot]
		if !busy {
			g.running[slot] = true
		}
		g.mu.Unlock()
		if busy {
			return inUse(key)
		}
		defer func() {
			g.mu.Lock()
			delete(g.running, slot)
			g.mu.Unlock()
		}()

		if done, err := g.replay(c, who, key, fp); done || err != nil {
			return err
		}
		idem := &chargenet.Idempotency{Owner: who, Key: key, Fingerprint: fp}
		c.SetRequest(req.WithContext(context.WithValue(ctx, idempotencyKey{}, idem)))
		err = next(c)
		var de *chargenet.Error
		if errors.As(err, &de) && de.Code == chargenet.CodeIdempotencyKeyInUse {
			// Another server committed an answer to the key first: send it.
			if done, rerr := g.replay(c, who, key, fp); done || rerr != nil {
				return rerr
			}
		}
		return err
	}
}

// replay sends the answer kept for the key, if there is one: done reports that it
// was sent. A kept answer for another request is 422 idempotency_key_reused.
func (g *idempotencyGuard) replay(c echo.Context, who, key string, fp [sha256.Size]byte) (done bool, err error) {
	a, err := g.store.IdempotentAnswer(c.Request().Context(), who, key, g.now())
	if errors.Is(err, chargenet.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if a.Fingerprint != fp {
		return false, newError(http.StatusUnprocessableEntity, chargenet.CodeIdempotencyKeyReused, headerIdempotencyKey,
			"Idempotency-Key %q was used at %s for a request with another body or operation; use a new key for a new request",
			key, a.CreatedAt.UTC().Format(time.RFC3339))
	}
	var kept keptResponse
	if err := json.Unmarshal(a.Answer, &kept); err != nil {
		return false, fmt.Errorf("reading the answer kept for Idempotency-Key %q: %w", key, err)
	}
	h := c.Response().Header()
	for name, value := range kept.Header {
		h.Set(name, value)
	}
	h.Set(headerReplayed, "true")
	return true, c.Blob(kept.Status, echo.MIMEApplicationJSON, append(kept.Body, '\n'))
}

func inUse(key string) error {
	return newError(http.StatusConflict, chargenet.CodeIdempotencyKeyInUse, headerIdempotencyKey,
		"a request with Idempotency-Key %q is still running; retry when it has finished", key)
}

// fingerprint identifies a request by its method, path and body, byte for byte.
func fingerprint(method, path string, body []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(method + " " + path + "\n"))
	h.Write(body)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// idempotency returns the request's pending Idempotency-Key with answer, which makes
// the answer to keep from what the store created; nil when the request has no key.
func idempotency(ctx context.Context, answer func(created any) ([]byte, error)) *chargenet.Idempotency {
	pending, _ := ctx.Value(idempotencyKey{}).(*chargenet.Idempotency)
	if pending == nil {
		return nil
	}
	idem := *pending
	idem.Answer = answer
	return &idem
}

// keptResponse is the form of the answer the store keeps for an Idempotency-Key: the
// status, the headers to send again (ETag, Location) and the JSON body, sent again with
// a newline as the generated response writes it.
type keptResponse struct {
	Status int               `json:"status"`
	Header map[string]string `json:"header"`
	Body   json.RawMessage   `json:"body"`
}

// keptAnswer is the answer to keep for a response with status, body (encoded as the
// generated response encodes it) and header.
func keptAnswer(status int, body any, header map[string]string) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return json.Marshal(keptResponse{Status: status, Header: header, Body: b})
}
