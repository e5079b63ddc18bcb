package ocpi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chargenet/chargenet/ocpi"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFieldErrors checks that a value the package cannot use is a *FieldError naming
// the field or argument as a Go caller sets it, and no command's flag.
func TestFieldErrors(t *testing.T) {
	store, err := sqlite.Open(t.Context(), ":memory:")
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	party := ocpi.Party{CountryCode: "NL", PartyID: "CNE", Name: "chargenet"}
	svc, err := ocpi.New(ocpi.Config{Store: store, Party: party, PublicURL: "https://chargenet.example.com"})
	require.NoError(t, err)
	with := func(change func(*ocpi.Party)) ocpi.Party {
		p := party
		change(&p)
		return p
	}
	for _, c := range []struct {
		name  string
		err   error
		field string
	}{
		{"country code", with(func(p *ocpi.Party) { p.CountryCode = "NLD" }).Validate(), "Party.CountryCode"},
		{"party ID", with(func(p *ocpi.Party) { p.PartyID = "C*E" }).Validate(), "Party.PartyID"},
		{"business name", with(func(p *ocpi.Party) { p.Name = "" }).Validate(), "Party.Name"},
		{"a party through New", func() error {
			_, err := ocpi.New(ocpi.Config{Store: store, Party: with(func(p *ocpi.Party) { p.PartyID = "c" }),
				PublicURL: "https://chargenet.example.com"})
			return err
		}(), "Party.PartyID"},
		{"partner name", ocpi.CheckPartnerName("bad name"), "name"},
		{"connect: name", func() error {
			_, err := svc.Connect(t.Context(), "", "https://emsp.example.com/versions", "a")
			return err
		}(), "name"},
		{"connect: versions URL", func() error {
			_, err := svc.Connect(t.Context(), "emsp", "http://127.0.0.1/versions", "a")
			return err
		}(), "versionsURL"},
		{"connect: token", func() error {
			_, err := svc.Connect(t.Context(), "emsp", "https://emsp.example.com/versions", "a b")
			return err
		}(), "tokenA"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var fe *ocpi.FieldError
			require.True(t, errors.As(c.err, &fe), "%v", c.err)
			assert.Equal(t, c.field, fe.Field)
			assert.NotEmpty(t, fe.Reason)
			assert.True(t, strings.HasPrefix(fe.Error(), c.field+" "), "%q", fe.Error())
			assert.NotContains(t, c.err.Error(), "--")
		})
	}
	assert.NoError(t, party.Validate())
}
