package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/chargenet/chargenet"
)

// partnerColumns are the columns of a partner row, in the order scanPartner reads them.
const partnerColumns = `id, name, registration_hash, token_hash, registered, token, versions_url, endpoints, roles, ` +
	`created_at, updated_at`

func partnerNotFound(param, value string) error {
	return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, param, "no OCPI partner with %s %q", param, value)
}

// scanPartner reads the partnerColumns of one row.
func scanPartner(row interface{ Scan(...any) error }) (*chargenet.Partner, error) {
	var (
		p                   chargenet.Partner
		reg, tok            []byte
		endpoints, roles    string
		created, updated    string
		registrationPresent bool
	)
	if err := row.Scan(&p.ID, &p.Name, &reg, &tok, &p.Registered, &p.Token, &p.VersionsURL, &endpoints, &roles,
		&created, &updated); err != nil {
		return nil, err
	}
	p.RegistrationHash, registrationPresent = hashOf(reg)
	p.TokenHash, _ = hashOf(tok)
	if len(reg) > 0 && !registrationPresent || len(tok) > 0 && p.TokenHash == nil {
		return nil, errors.New("stored token hash has the wrong length")
	}
	if err := json.Unmarshal([]byte(endpoints), &p.Endpoints); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(roles), &p.Roles); err != nil {
		return nil, err
	}
	var err error
	if p.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	if p.UpdatedAt, err = parseTime(updated); err != nil {
		return nil, err
	}
	return &p, nil
}

// hashOf returns a stored hash, nil for NULL; false when b is not a hash.
func hashOf(b []byte) (*[sha256.Size]byte, bool) {
	if len(b) != sha256.Size {
		return nil, false
	}
	var h [sha256.Size]byte
	copy(h[:], b)
	return &h, true
}

// hashArg returns h as a query argument, NULL for nil.
func hashArg(h *[sha256.Size]byte) any {
	if h == nil {
		return nil
	}
	return h[:]
}

// CreatePartner stores p. A name or token hash already stored is an ErrConflict
// *chargenet.Error (Param "name" or "token"); other errors are wrapped driver errors.
func (s *Store) CreatePartner(ctx context.Context, p *chargenet.Partner) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var taken bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM partners WHERE name = ?)`, p.Name).Scan(&taken); err != nil {
			return err
		}
		if taken {
			return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "name", "an OCPI partner named %q already exists", p.Name)
		}
		endpoints, roles, err := encodeCredentials(&p.PartnerCredentials)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO partners (`+partnerColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.ID, p.Name, hashArg(p.RegistrationHash), hashArg(p.TokenHash), p.Registered, p.Token, p.VersionsURL, endpoints, roles,
			formatTime(p.CreatedAt), formatTime(p.UpdatedAt)); err != nil {
			if constraintCode(err) != 0 {
				return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "token", "the token of OCPI partner %q is taken", p.Name)
			}
			return err
		}
		return nil
	})
	return wrap("create partner", err)
}

// encodeCredentials returns the stored JSON of c's endpoints and roles.
func encodeCredentials(c *chargenet.PartnerCredentials) (endpoints, roles string, err error) {
	e, err := json.Marshal(nonNil(c.Endpoints))
	if err != nil {
		return "", "", err
	}
	r, err := json.Marshal(nonNil(c.Roles))
	return string(e), string(r), err
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// partnerWhere reads the partner that one condition selects; notFound is returned when
// none does.
func (s *Store) partnerWhere(ctx context.Context, q rowQuerier, op, cond string, arg any, notFound error) (*chargenet.Partner, error) {
	p, err := scanPartner(q.QueryRowContext(ctx, `SELECT `+partnerColumns+` FROM partners WHERE `+cond, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound
	}
	return p, wrap(op, err)
}

// Partner returns the partner with this ID; an ErrNotFound *chargenet.Error if there is
// none.
func (s *Store) Partner(ctx context.Context, id string) (*chargenet.Partner, error) {
	return s.partnerWhere(ctx, s.read, "partner", "id = ?", id, partnerNotFound("id", id))
}

// PartnerByName returns the partner with this name; an ErrNotFound *chargenet.Error
// (Param "name") if there is none.
func (s *Store) PartnerByName(ctx context.Context, name string) (*chargenet.Partner, error) {
	return s.partnerWhere(ctx, s.read, "partner by name", "name = ?", name, partnerNotFound("name", name))
}

// PartnerByToken returns the partner holding the token with this hash, and whether as
// its registration token; an ErrNotFound *chargenet.Error if none holds it.
func (s *Store) PartnerByToken(ctx context.Context, hash [sha256.Size]byte) (*chargenet.Partner, bool, error) {
	p, err := s.partnerWhere(ctx, s.read, "partner by token", "registration_hash = ?1 OR token_hash = ?1", hash[:],
		chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "token", "unknown token"))
	if err != nil {
		return nil, false, err
	}
	return p, p.RegistrationHash != nil && *p.RegistrationHash == hash, nil
}

// ListPartners returns every partner by name. Errors are wrapped driver errors.
func (s *Store) ListPartners(ctx context.Context) ([]chargenet.Partner, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+partnerColumns+` FROM partners ORDER BY name`)
	if err != nil {
		return nil, wrap("list partners", err)
	}
	defer func() { _ = rows.Close() }()
	out := []chargenet.Partner{}
	for rows.Next() {
		p, err := scanPartner(rows)
		if err != nil {
			return nil, wrap("list partners", err)
		}
		out = append(out, *p)
	}
	return out, wrap("list partners", rows.Err())
}

// SetPartnerCredentials completes a credentials exchange in one write transaction (see
// chargenet.PartnerService). Errors: ErrNotFound and ErrConflict *chargenet.Error as
// documented there, wrapped driver errors otherwise; nothing is written then.
func (s *Store) SetPartnerCredentials(ctx context.Context, id string, held [sha256.Size]byte, c chargenet.PartnerCredentials,
	token [sha256.Size]byte, now time.Time) (*chargenet.Partner, error) {
	var out *chargenet.Partner
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		p, err := s.partnerWhere(ctx, tx, "set partner credentials", "id = ?", id, partnerNotFound("id", id))
		if err != nil {
			return err
		}
		if !holds(p, held) {
			return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "token",
				"the credentials of OCPI partner %q changed meanwhile", p.Name)
		}
		endpoints, roles, err := encodeCredentials(&c)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE partners SET registration_hash = NULL, token_hash = ?, registered = 1, `+
			`token = ?, versions_url = ?, endpoints = ?, roles = ?, updated_at = ? WHERE id = ?`,
			token[:], c.Token, c.VersionsURL, endpoints, roles, formatTime(now), id); err != nil {
			if constraintCode(err) != 0 {
				return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "token", "the new token of OCPI partner %q is taken", p.Name)
			}
			return err
		}
		if err := setReceiver(ctx, tx, p.ID, c.ReceiverURL(), now); err != nil {
			return err
		}
		out, err = s.partnerWhere(ctx, tx, "set partner credentials", "id = ?", id, partnerNotFound("id", id))
		return err
	})
	return out, wrap("set partner credentials", err)
}

// holds reports whether p holds the token with hash h.
func holds(p *chargenet.Partner, h [sha256.Size]byte) bool {
	return p.RegistrationHash != nil && *p.RegistrationHash == h || p.TokenHash != nil && *p.TokenHash == h
}

// setReceiver makes partner id's receiver subscription follow url: created with the
// inventory event types, its URL updated, or deleted (with its pending pushes) when url
// is "".
func setReceiver(ctx context.Context, tx *sql.Tx, id, url string, now time.Time) error {
	if url == "" {
		_, err := tx.ExecContext(ctx, `DELETE FROM webhooks WHERE id = ? AND partner_id = ?`, id, id)
		return err
	}
	res, err := tx.ExecContext(ctx, `UPDATE webhooks SET url = ?, updated_at = ? WHERE id = ? AND partner_id = ?`,
		url, formatTime(now), id, id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO webhooks (`+webhookColumns+`) VALUES (?, '', ?, ?, 1, '', '', '', NULL, ?, ?, ?)`,
		id, url, "OCPI Locations receiver", formatTime(now), formatTime(now), id); err != nil {
		return err
	}
	subs := make([]chargenet.Subscription, len(chargenet.PushEventTypes))
	for i, t := range chargenet.PushEventTypes {
		subs[i] = chargenet.Subscription{Type: t, APIVersion: chargenet.PushAPIVersion}
	}
	return insertSubscriptions(ctx, tx, id, subs)
}

// DeletePartner deletes the partner; its receiver subscription, pending pushes and
// their attempts go with it. An ErrNotFound *chargenet.Error if there is none.
func (s *Store) DeletePartner(ctx context.Context, id string) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM partners WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, partnerNotFound("id", id))
		}
		return nil
	})
	return wrap("delete partner", err)
}
