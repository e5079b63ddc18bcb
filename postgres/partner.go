package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// partnerColumns are the columns of a partner row, in the order scanPartner reads them.
const partnerColumns = `id, name, registration_hash, token_hash, registered, token, versions_url, endpoints::text, ` +
	`roles::text, created_at, updated_at`

func partnerNotFound(param, value string) error {
	return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, param, "no OCPI partner with %s %q", param, value)
}

// scanPartner reads the partnerColumns of one row.
func scanPartner(row pgx.Row) (*chargenet.Partner, error) {
	var (
		p                chargenet.Partner
		reg, tok         []byte
		endpoints, roles string
	)
	if err := row.Scan(&p.ID, &p.Name, &reg, &tok, &p.Registered, &p.Token, &p.VersionsURL, &endpoints, &roles,
		&p.CreatedAt, &p.UpdatedAt); err != nil {
		return nil, err
	}
	var ok bool
	if p.RegistrationHash, ok = hashOf(reg); !ok {
		return nil, errors.New("stored registration token hash has the wrong length")
	}
	if p.TokenHash, ok = hashOf(tok); !ok {
		return nil, errors.New("stored token hash has the wrong length")
	}
	if err := json.Unmarshal([]byte(endpoints), &p.Endpoints); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(roles), &p.Roles); err != nil {
		return nil, err
	}
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return &p, nil
}

// hashOf returns a stored hash, nil for NULL; false when b is neither.
func hashOf(b []byte) (*[sha256.Size]byte, bool) {
	if b == nil {
		return nil, true
	}
	if len(b) != sha256.Size {
		return nil, false
	}
	var h [sha256.Size]byte
	copy(h[:], b)
	return &h, true
}

// hashArg returns h as a query argument, NULL for nil.
func hashArg(h *[sha256.Size]byte) []byte {
	if h == nil {
		return nil
	}
	return h[:]
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

// uniqueViolation returns the name of the unique constraint err violates, "" if it
// violates none.
func uniqueViolation(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return pe.ConstraintName
	}
	return ""
}

// CreatePartner stores p; times in UTC to the microsecond. A name or token hash already
// stored is an ErrConflict *chargenet.Error (Param "name" or "token"); other errors are
// wrapped driver errors.
func (s *Store) CreatePartner(ctx context.Context, p *chargenet.Partner) error {
	endpoints, roles, err := encodeCredentials(&p.PartnerCredentials)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO partners (id, name, registration_hash, token_hash, registered, token, `+
		`versions_url, endpoints, roles, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10, $11)`,
		p.ID, p.Name, hashArg(p.RegistrationHash), hashArg(p.TokenHash), p.Registered, p.Token, p.VersionsURL, endpoints, roles,
		chargenet.Stamp(p.CreatedAt), chargenet.Stamp(p.UpdatedAt))
	switch uniqueViolation(err) {
	case "":
		return s.wrap("create partner", err)
	case "partners_name_key":
		return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "name", "an OCPI partner named %q already exists", p.Name)
	default:
		return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "token", "the token of OCPI partner %q is taken", p.Name)
	}
}

// partnerWhere reads the partner that one condition selects (FOR UPDATE when lock);
// notFound is returned when none does. Errors are the driver's, unwrapped.
func partnerWhere(ctx context.Context, q querier, cond string, arg any, lock bool, notFound error) (*chargenet.Partner, error) {
	query := `SELECT ` + partnerColumns + ` FROM partners WHERE ` + cond
	if lock {
		query += ` FOR UPDATE`
	}
	rows, err := q.Query(ctx, query, arg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, notFound
	}
	p, err := scanPartner(rows)
	if err != nil {
		return nil, err
	}
	rows.Close()
	return p, rows.Err()
}

// Partner returns the partner with this ID; an ErrNotFound *chargenet.Error if there is
// none.
func (s *Store) Partner(ctx context.Context, id string) (*chargenet.Partner, error) {
	p, err := partnerWhere(ctx, s.pool, "id = $1", id, false, partnerNotFound("id", id))
	return p, s.wrap("partner", err)
}

// PartnerByName returns the partner with this name; an ErrNotFound *chargenet.Error
// (Param "name") if there is none.
func (s *Store) PartnerByName(ctx context.Context, name string) (*chargenet.Partner, error) {
	p, err := partnerWhere(ctx, s.pool, "name = $1", name, false, partnerNotFound("name", name))
	return p, s.wrap("partner by name", err)
}

// PartnerByToken returns the partner holding the token with this hash, and whether as
// its registration token; an ErrNotFound *chargenet.Error if none holds it.
func (s *Store) PartnerByToken(ctx context.Context, hash [sha256.Size]byte) (*chargenet.Partner, bool, error) {
	p, err := partnerWhere(ctx, s.pool, "registration_hash = $1 OR token_hash = $1", hash[:], false,
		chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "token", "unknown token"))
	if err != nil {
		return nil, false, s.wrap("partner by token", err)
	}
	return p, p.RegistrationHash != nil && *p.RegistrationHash == hash, nil
}

// ListPartners returns every partner by name. Errors are wrapped driver errors.
func (s *Store) ListPartners(ctx context.Context) ([]chargenet.Partner, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+partnerColumns+` FROM partners ORDER BY name`)
	if err != nil {
		return nil, s.wrap("list partners", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chargenet.Partner, error) {
		p, err := scanPartner(row)
		if err != nil {
			return chargenet.Partner{}, err
		}
		return *p, nil
	})
	if out == nil {
		out = []chargenet.Partner{}
	}
	return out, s.wrap("list partners", err)
}

// SetPartnerCredentials completes a credentials exchange in one transaction that locks
// the partner's row (see chargenet.PartnerService). Errors: ErrNotFound and ErrConflict
// *chargenet.Error as documented there, wrapped driver errors otherwise; nothing is
// written then.
func (s *Store) SetPartnerCredentials(ctx context.Context, id string, held [sha256.Size]byte, c chargenet.PartnerCredentials,
	token [sha256.Size]byte, now time.Time) (*chargenet.Partner, error) {
	endpoints, roles, err := encodeCredentials(&c)
	if err != nil {
		return nil, err
	}
	var out *chargenet.Partner
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		p, err := partnerWhere(ctx, tx, "id = $1", id, true, partnerNotFound("id", id))
		if err != nil {
			return err
		}
		holds := p.RegistrationHash != nil && *p.RegistrationHash == held || p.TokenHash != nil && *p.TokenHash == held
		if !holds {
			return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "token",
				"the credentials of OCPI partner %q changed meanwhile", p.Name)
		}
		_, err = tx.Exec(ctx, `UPDATE partners SET registration_hash = NULL, token_hash = $1, registered = true, `+
			`token = $2, versions_url = $3, endpoints = $4::jsonb, roles = $5::jsonb, updated_at = $6 WHERE id = $7`,
			token[:], c.Token, c.VersionsURL, endpoints, roles, chargenet.Stamp(now), id)
		if uniqueViolation(err) != "" {
			return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "token", "the new token of OCPI partner %q is taken", p.Name)
		}
		if err != nil {
			return err
		}
		if err := setReceiver(ctx, tx, id, c.ReceiverURL(), now); err != nil {
			return err
		}
		out, err = partnerWhere(ctx, tx, "id = $1", id, false, partnerNotFound("id", id))
		return err
	})
	return out, s.wrap("set partner credentials", err)
}

// setReceiver makes partner id's receiver subscription follow url: created with the
// inventory event types, its URL updated, or deleted (with its pending pushes) when url
// is "".
func setReceiver(ctx context.Context, tx pgx.Tx, id, url string, now time.Time) error {
	if url == "" {
		_, err := tx.Exec(ctx, `DELETE FROM webhooks WHERE id = $1 AND partner_id = $1`, id)
		return err
	}
	tag, err := tx.Exec(ctx, `UPDATE webhooks SET url = $2, updated_at = $3 WHERE id = $1 AND partner_id = $1`, id, url, chargenet.Stamp(now))
	if err != nil || tag.RowsAffected() > 0 {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO webhooks (`+webhookColumns+`) `+
		`VALUES ($1, '', $2, $3, true, '', '', '', NULL, $4, $4, $1)`, id, url, "OCPI Locations receiver", chargenet.Stamp(now)); err != nil {
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
	tag, err := s.pool.Exec(ctx, `DELETE FROM partners WHERE id = $1`, id)
	if err != nil {
		return s.wrap("delete partner", err)
	}
	if tag.RowsAffected() == 0 {
		return partnerNotFound("id", id)
	}
	return nil
}
