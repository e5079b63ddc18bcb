package storetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// idemKey is an Idempotency-Key of a test: its Answer makes an answer of what was
// created (the EVSE's JSON with its ETag and Location, or the webhook's id), and keeps
// what it was called with.
type idemKey struct {
	chargenet.Idempotency
	mu      sync.Mutex
	created []any
}

func newIdemKey(owner, key, body string) *idemKey {
	k := &idemKey{}
	fp := sha256.Sum256([]byte(body))
	k.Idempotency = chargenet.Idempotency{Owner: owner, Key: key, Fingerprint: fp, Answer: func(created any) ([]byte, error) {
		k.mu.Lock()
		k.created = append(k.created, created)
		k.mu.Unlock()
		a, err := answerOf(fp, created)
		if err != nil {
			return nil, err
		}
		return a.Answer, nil
	}}
	return k
}

// answerOf is the answer an idemKey keeps for created: bytes the store must keep as
// they are, a NUL and a byte that is not UTF-8 among them.
func answerOf(fp [sha256.Size]byte, created any) (*chargenet.IdempotentAnswer, error) {
	switch c := created.(type) {
	case *chargenet.EVSE:
		doc, err := wire.EncodeEVSE(c)
		if err != nil {
			return nil, err
		}
		return &chargenet.IdempotentAnswer{Fingerprint: fp, Answer: fmt.Appendf(nil, "201 %s /v2/evses/%d\x00\xff%s", c.ETag(), c.UID, doc)}, nil
	case *chargenet.Webhook:
		return &chargenet.IdempotentAnswer{Fingerprint: fp, Answer: fmt.Appendf(nil, "201 /emsp/v1/webhooks/%s\x00\xff%s", c.ID, c.URL)}, nil
	}
	return nil, fmt.Errorf("unexpected %T", created)
}

// calls returns what Answer was called with.
func (k *idemKey) calls() []any {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]any{}, k.created...)
}

func testIdempotency(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	t0 := now()
	answerAt := func(owner, key string, at time.Time) (*chargenet.IdempotentAnswer, error) {
		return s.IdempotentAnswer(ctx, owner, key, at)
	}
	requireNoAnswer := func(t *testing.T, owner, key string, at time.Time) {
		t.Helper()
		a, err := answerAt(owner, key, at)
		assert.Nil(t, a)
		require.Error(t, err)
		assert.ErrorIs(t, err, chargenet.ErrNotFound)
	}
	// wantAnswer is the answer kept for an EVSE created or changed at at.
	wantAnswer := func(t *testing.T, k *idemKey, uid int64, at time.Time) *chargenet.IdempotentAnswer {
		t.Helper()
		e, err := s.EVSE(ctx, uid)
		require.NoError(t, err)
		a, err := answerOf(k.Fingerprint, e)
		require.NoError(t, err)
		a.CreatedAt = at
		return a
	}

	first := newIdemKey("partner-a", "key-1", "first")
	created, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*TST*E9401", "LOC-0021", 900, ""), t0), &first.Idempotency, "", t0)
	require.NoError(t, err)

	t.Run("kept", func(t *testing.T) {
		calls := first.calls()
		require.Len(t, calls, 1, "Answer is called once")
		e, ok := calls[0].(*chargenet.EVSE)
		require.True(t, ok, "Answer gets the *EVSE, not %T", calls[0])
		assert.Equal(t, public(*created), public(*e), "Answer gets the EVSE as committed")
		want := wantAnswer(t, first, created.UID, t0)
		for _, at := range []time.Time{t0, t0.Add(time.Hour), t0.Add(chargenet.IdempotencyTTL - time.Microsecond)} {
			got, err := answerAt("partner-a", "key-1", at)
			require.NoError(t, err, "at %v", at)
			assert.Equal(t, want, got, "at %v", at)
		}
	})

	t.Run("expired", func(t *testing.T) {
		requireNoAnswer(t, "partner-a", "key-1", t0.Add(chargenet.IdempotencyTTL))
		requireNoAnswer(t, "partner-a", "key-1", t0.Add(48*time.Hour))
	})

	t.Run("keys are per owner", func(t *testing.T) {
		requireNoAnswer(t, "partner-b", "key-1", t0)
		requireNoAnswer(t, "partner-a", "key-2", t0)
		other := newIdemKey("partner-b", "key-1", "other owner")
		e, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*TST*E9402", "LOC-0021", 900, ""), t0), &other.Idempotency, "", t0)
		require.NoError(t, err)
		got, err := answerAt("partner-b", "key-1", t0)
		require.NoError(t, err)
		assert.Equal(t, wantAnswer(t, other, e.UID, t0), got)
		again, err := answerAt("partner-a", "key-1", t0)
		require.NoError(t, err)
		assert.Equal(t, wantAnswer(t, first, created.UID, t0), again, "the first owner's answer is unchanged")
	})

	t.Run("in use", func(t *testing.T) {
		subscribeAll(t, s)
		before := takeSnapshot(t, s)
		at := t0.Add(time.Minute)
		writes := []struct {
			name  string
			write func(t *testing.T, idem *chargenet.Idempotency) error
		}{
			{"the same create again", func(t *testing.T, idem *chargenet.Idempotency) error {
				_, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*TST*E9401", "LOC-0021", 900, ""), at), idem, "", at)
				return err
			}},
			{"another create", func(t *testing.T, idem *chargenet.Idempotency) error {
				_, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*TST*E9403", "LOC-0022", 900, ""), at), idem, "", at)
				return err
			}},
			{"a change", func(t *testing.T, idem *chargenet.Idempotency) error {
				_, err := s.ChangeEVSE(ctx, 1001, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
					return e.AddConnector(acConnector(), "", at)
				}, idem, "",

					at)

				return err
			}},
			{"a change the rules refuse", func(t *testing.T, idem *chargenet.Idempotency) error {
				_, err := s.ChangeEVSE(ctx, 1001, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
					return e.ApplyPatch(chargenet.EVSEPatch{Status: ptr(chargenet.StatusCharging)}, "", at)
				}, idem, "",

					at)

				return err
			}},
			{"a change that changes nothing", func(t *testing.T, idem *chargenet.Idempotency) error {
				_, err := s.ChangeEVSE(ctx, 1004, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
					return e.DeleteConnector(4, "", at)
				}, idem, "",

					at)

				return err
			}},
			{"a change of no EVSE", func(t *testing.T, idem *chargenet.Idempotency) error {
				_, err := s.ChangeEVSE(ctx, 9999, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
					return e.Remove("", at)
				}, idem, "",

					at)

				return err
			}},
			{"a webhook", func(t *testing.T, idem *chargenet.Idempotency) error {
				w := NewWebhook("partner-a", at, chargenet.EventEVSECreated)
				err := s.CreateWebhook(ctx, &w, idem)
				_, werr := s.Webhook(ctx, "partner-a", w.ID)
				requireError(t, werr, chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId")
				return err
			}},
		}
		for _, w := range writes {
			t.Run(w.name, func(t *testing.T) {
				k := newIdemKey("partner-a", "key-1", w.name)
				err := w.write(t, &k.Idempotency)
				msg := requireError(t, err, chargenet.ErrConflict, chargenet.CodeIdempotencyKeyInUse, "Idempotency-Key")
				assert.Contains(t, msg, "key-1")
				assert.Empty(t, k.calls(), "no answer made")
				assert.Equal(t, before, takeSnapshot(t, s), "nothing written")
				assert.Empty(t, recorded(t, s), "no event")
				got, err := answerAt("partner-a", "key-1", at)
				require.NoError(t, err)
				assert.Equal(t, wantAnswer(t, first, created.UID, t0), got, "the kept answer is unchanged")
			})
		}
	})

	t.Run("an expired key is used again", func(t *testing.T) {
		at := t0.Add(chargenet.IdempotencyTTL)
		k := newIdemKey("partner-a", "key-1", "a day later")
		e, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*TST*E9404", "LOC-0021", 900, ""), at), &k.Idempotency, "", at)
		require.NoError(t, err)
		got, err := answerAt("partner-a", "key-1", at.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, wantAnswer(t, k, e.UID, at), got, "the new answer replaces the expired one")
		assert.NotEqual(t, first.Fingerprint, got.Fingerprint)
	})

	t.Run("a refused write keeps no answer", func(t *testing.T) {
		before := takeSnapshot(t, s)
		k := newIdemKey("partner-a", "key-3", "refused")
		_, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*TST*E9405", "LOC-9999", 900, ""), t0), &k.Idempotency, "", t0)
		requireError(t, err, chargenet.ErrInvalid, chargenet.CodeInvalidBody, "locationId")
		_, err = s.ChangeEVSE(ctx, 1001, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
			return e.ApplyPatch(chargenet.EVSEPatch{Status: ptr(chargenet.StatusCharging)}, "", t0)
		}, &k.Idempotency, "",

			t0)

		assert.ErrorIs(t, err, chargenet.ErrConflict)
		w := NewWebhook("partner-a", t0, chargenet.EventEVSECreated)
		w.ID = "dup"
		require.NoError(t, s.CreateWebhook(ctx, &w, nil))
		requireError(t, s.CreateWebhook(ctx, &w, &k.Idempotency), chargenet.ErrConflict, chargenet.CodeConflict, "id")
		require.NoError(t, s.DeleteWebhook(ctx, "partner-a", "dup"))
		requireNoAnswer(t, "partner-a", "key-3", t0)
		assert.Equal(t, before, takeSnapshot(t, s))

		e, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*TST*E9405", "LOC-0021", 900, ""), t0), &k.Idempotency, "", t0)
		require.NoError(t, err, "the key is free")
		got, err := answerAt("partner-a", "key-3", t0)
		require.NoError(t, err)
		assert.Equal(t, wantAnswer(t, k, e.UID, t0), got)
	})

	t.Run("an error of Answer undoes the write", func(t *testing.T) {
		before := takeSnapshot(t, s)
		failed := errors.New("no answer")
		idem := chargenet.Idempotency{Owner: "partner-a", Key: "key-4", Answer: func(any) ([]byte, error) { return nil, failed }}
		_, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*TST*E9406", "LOC-0021", 900, ""), t0), &idem, "", t0)
		assert.ErrorIs(t, err, failed)
		_, err = s.ChangeEVSE(ctx, 1001, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
			return e.AddConnector(acConnector(), "", t0)
		}, &idem, "",

			t0)

		assert.ErrorIs(t, err, failed)
		w := NewWebhook("partner-a", t0, chargenet.EventEVSECreated)
		assert.ErrorIs(t, s.CreateWebhook(ctx, &w, &idem), failed)
		_, err = s.Webhook(ctx, "partner-a", w.ID)
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId")
		requireNoAnswer(t, "partner-a", "key-4", t0)
		assert.Equal(t, before, takeSnapshot(t, s))
	})

	t.Run("a change", func(t *testing.T) {
		at := t0.Add(time.Minute)
		k := newIdemKey("partner-a", "key-5", "add a connector")
		e, err := s.ChangeEVSE(ctx, 1002, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
			return e.AddConnector(acConnector(), "", at)
		}, &k.Idempotency, "",

			at)

		require.NoError(t, err)
		calls := k.calls()
		require.Len(t, calls, 1)
		assert.Equal(t, public(*e), public(*calls[0].(*chargenet.EVSE)), "Answer gets the EVSE as committed")
		got, err := answerAt("partner-a", "key-5", at)
		require.NoError(t, err)
		assert.Equal(t, wantAnswer(t, k, 1002, at), got)
	})

	t.Run("a change that changes nothing keeps no answer", func(t *testing.T) {
		k := newIdemKey("partner-a", "key-6", "delete a deleted connector")
		_, err := s.ChangeEVSE(ctx, 1004, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
			return e.DeleteConnector(4, "", t0)
		}, &k.Idempotency, "",

			t0)

		require.NoError(t, err)
		assert.Empty(t, k.calls())
		requireNoAnswer(t, "partner-a", "key-6", t0)
	})

	t.Run("a webhook", func(t *testing.T) {
		at := t0.Add(2 * time.Minute)
		k := newIdemKey("partner-c", "key-7", "webhook")
		w := NewWebhook("partner-c", at, chargenet.EventEVSECreated, chargenet.EventLocationDeleted)
		require.NoError(t, s.CreateWebhook(ctx, &w, &k.Idempotency))
		stored, err := s.Webhook(ctx, "partner-c", w.ID)
		require.NoError(t, err)
		calls := k.calls()
		require.Len(t, calls, 1)
		assert.Equal(t, stored, calls[0], "Answer gets the *Webhook as stored")
		want, err := answerOf(k.Fingerprint, stored)
		require.NoError(t, err)
		want.CreatedAt = at
		got, err := answerAt("partner-c", "key-7", at.Add(time.Hour))
		require.NoError(t, err)
		assert.Equal(t, want, got, "kept as of the webhook's CreatedAt")
		requireNoAnswer(t, "partner-c", "key-7", at.Add(chargenet.IdempotencyTTL))

		second := NewWebhook("partner-c", at.Add(time.Second), chargenet.EventEVSECreated)
		err = s.CreateWebhook(ctx, &second, &newIdemKey("partner-c", "key-7", "again").Idempotency)
		requireError(t, err, chargenet.ErrConflict, chargenet.CodeIdempotencyKeyInUse, "Idempotency-Key")
		_, err = s.Webhook(ctx, "partner-c", second.ID)
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId")
		list, err := s.ListWebhooks(ctx, "partner-c", chargenet.Seek[string]{Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, []chargenet.Webhook{*stored}, list)
	})
}

// testIdempotencyConcurrent sends 16 creates with one key at once, each of another
// EVSE: exactly one creates its EVSE and keeps its answer, the others get
// idempotency_key_in_use and create nothing.
func testIdempotencyConcurrent(t *testing.T, open Opener) {
	const writers = 16
	s, _ := demoStore(t, open)
	ctx := t.Context()
	before := takeSnapshot(t, s)
	at := now()
	keys := make([]*idemKey, writers)
	evses := make([]*chargenet.EVSE, writers)
	for i := range writers {
		keys[i] = newIdemKey("partner-a", "same-key", fmt.Sprint(i))
		evses[i] = prepared(t, postedEVSE(fmt.Sprintf("DE*TST*EK%d", i), "LOC-0021", 900, ""), at)
	}
	results := make([]*chargenet.EVSE, writers)
	errs := make([]error, writers)
	atOnce(writers, func(i int) { results[i], errs[i] = s.CreateEVSE(ctx, evses[i], &keys[i].Idempotency, "", at) })

	winner := -1
	for i, err := range errs {
		if err == nil {
			assert.Equal(t, -1, winner, "only one create with the key succeeds")
			winner = i
			continue
		}
		requireError(t, err, chargenet.ErrConflict, chargenet.CodeIdempotencyKeyInUse, "Idempotency-Key")
	}
	require.NotEqual(t, -1, winner, "one create succeeds")
	after := takeSnapshot(t, s)
	require.Len(t, after.EVSEs, len(before.EVSEs)+1, "exactly one EVSE created")
	assert.Equal(t, public(*results[winner]), public(after.EVSEs[len(after.EVSEs)-1]))
	assert.Equal(t, evses[winner].EvseID, results[winner].EvseID, "the winner's EVSE")
	got, err := s.IdempotentAnswer(ctx, "partner-a", "same-key", at)
	require.NoError(t, err)
	want, err := answerOf(keys[winner].Fingerprint, results[winner])
	require.NoError(t, err)
	want.CreatedAt = at
	assert.Equal(t, want, got, "the winner's answer")
}
