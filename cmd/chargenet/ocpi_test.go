package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet/ocpi"
	"github.com/chargenet/chargenet/ocpi/ocpitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOCPIUsage checks the OCPI flags and commands refuse what they cannot use.
func TestOCPIUsage(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "c.db")
	for _, args := range [][]string{
		{"serve", "--ocpi-country-code", "NL"},
		{"serve", "--ocpi-party-id", "CNE"},
		{"serve", "--ocpi-country-code", "NLD", "--ocpi-party-id", "CNE"},
		{"serve", "--ocpi-country-code", "NL", "--ocpi-party-id", "C*E"},
		{"serve", "--ocpi-business-name", "x"},
		{"serve", "--public-url", "ftp://chargenet.example.com"},
		{"serve", "--public-url", "https://chargenet.example.com/?x=1"},
		{"ocpi"},
		{"ocpi", "frobnicate"},
		{"ocpi", "register", "--database", db},
		{"ocpi", "register", "--database", db, "--name", "x"}, // no OCPI identity
		{"ocpi", "register", "--database", db, "--name", "bad name", "--ocpi-country-code", "NL", "--ocpi-party-id", "CNE"},
		{"ocpi", "connect", "--database", db, "--ocpi-country-code", "NL", "--ocpi-party-id", "CNE", "--token", "t"},
		{"ocpi", "unregister", "--database", db},
		{"ocpi", "list", "--database", db, "extra"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), append([]string{"chargenet"}, args...), env(nil), &out, &errOut)
			assert.ErrorIs(t, err, errUsage)
		})
	}
}

// TestOCPIFlagMessages checks that package ocpi's field errors reach the user worded as
// the flags that set the fields.
func TestOCPIFlagMessages(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "c.db")
	identity := []string{"--ocpi-country-code", "NL", "--ocpi-party-id", "CNE"}
	for _, c := range []struct {
		args  []string
		usage bool   // a usage error (exit status 2)
		names string // what the message must say
	}{
		{[]string{"serve", "--ocpi-country-code", "NLD", "--ocpi-party-id", "CNE"}, true, `--ocpi-country-code "NLD" must be`},
		{[]string{"serve", "--ocpi-country-code", "NL", "--ocpi-party-id", "C*E"}, true, `--ocpi-party-id "C*E" must be`},
		{append([]string{"serve", "--ocpi-business-name", "a\x01b"}, identity...), true, `--ocpi-business-name "a\x01b" must be`},
		{append([]string{"ocpi", "register", "--database", db, "--name", "bad name"}, identity...), true, `--name "bad name" must be`},
		{append([]string{"ocpi", "connect", "--database", db, "--token", "t", "--versions-url", "http://127.0.0.1:9/versions"}, identity...),
			false, `--versions-url is refused: scheme "http" is not allowed`},
		{append([]string{"ocpi", "connect", "--database", db, "--token", "t t", "--versions-url", "https://emsp.example.com/versions"},
			identity...), false, "--token must be"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), append([]string{"chargenet"}, c.args...), env(nil), &out, &errOut)
			require.Error(t, err)
			assert.Equal(t, c.usage, errors.Is(err, errUsage), "%v", err)
			assert.Contains(t, err.Error(), c.names)
		})
	}
}

// TestOCPICommands runs the commands against a serving chargenet: register prints token
// A alone on the last line, which a partner registers with; connect registers chargenet
// with another partner; list shows both; unregister tells the partner and forgets it.
// Without the OCPI flags nothing is served under /ocpi.
func TestOCPICommands(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "c.db")
	vars := map[string]string{"CHARGENET_DATABASE": db, "CHARGENET_OCPI_COUNTRY_CODE": "nl", "CHARGENET_OCPI_PARTY_ID": "cne",
		"CHARGENET_WEBHOOK_ALLOW_INSECURE": "true", "CHARGENET_API_KEYS": devKey, "CHARGENET_KEY_CACHE_TTL": "0s"}
	ctx := context.Background()
	command := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := run(ctx, append([]string{"chargenet", "ocpi"}, args...), env(vars), &out, &errOut)
		return out.String(), errOut.String(), err
	}

	plain := startServe(t, map[string]string{"CHARGENET_DATABASE": db, "CHARGENET_API_KEYS": devKey}, "--demo")
	res, body := plain.call(t, http.MethodGet, "/ocpi/versions", "")
	assert.Equal(t, http.StatusNotFound, res.StatusCode, "without --ocpi-country-code and --ocpi-party-id: %s", body)
	require.NoError(t, plain.stop())

	srv := startServe(t, vars)
	vars["CHARGENET_PUBLIC_URL"] = srv.base // the commands hand out the URLs serve answers at

	out, errOut, err := command("register", "--name", "emsp")
	require.NoError(t, err, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	tokenA := lines[len(lines)-1]
	assert.Regexp(t, `^[A-Za-z0-9_-]{43}$`, tokenA, "the token alone on the last line")
	assert.Contains(t, errOut, srv.base+"/ocpi/versions")
	_, _, err = command("register", "--name", "emsp")
	assert.Error(t, err, "the name is taken")

	out, _, err = command("list")
	require.NoError(t, err)
	assert.Contains(t, out, "waiting for registration")

	emsp := ocpitest.New(true)
	defer emsp.Close()
	require.NoError(t, emsp.Register(ctx, srv.base+"/ocpi/versions", tokenA))
	pages, err := emsp.Pull(ctx, nil)
	require.NoError(t, err)
	require.Len(t, pages, 2, "the demo inventory, in a page of 100 and one of 20")
	assert.Len(t, pages[1].Locations, 20)

	hub := ocpitest.New(true)
	defer hub.Close()
	out, errOut, err = command("connect", "--versions-url", hub.VersionsURL(), "--token", hub.IssueToken())
	require.NoError(t, err, errOut)
	assert.Contains(t, out, "registered with OCPI partner")
	assert.Contains(t, out, hub.URL()+"/partner/locations")
	assert.True(t, hub.Registered())

	out, _, err = command("list")
	require.NoError(t, err)
	assert.Equal(t, 3, len(strings.Split(strings.TrimSpace(out), "\n")), "a header and two partners:\n%s", out)
	assert.NotContains(t, out, "waiting for registration")
	assert.Contains(t, out, "EMSP NL-EXA")

	res, body = srv.call(t, http.MethodPatch, "/v2/evses/1001/connectors/1", `{"maxElectricPower": 42}`)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	for _, p := range []*ocpitest.EMSP{emsp, hub} {
		assert.True(t, p.WaitFor(5*time.Second, func() bool { return len(p.Pushes()) > 0 }), "both partners get the change")
	}

	out, errOut, err = command("unregister", "--name", ocpi.DefaultPartnerName(hub.VersionsURL()))
	require.NoError(t, err, errOut)
	assert.Empty(t, errOut, "the partner took the DELETE")
	assert.Contains(t, out, "unregistered")
	assert.False(t, hub.Registered())
	_, _, err = command("unregister", "--name", "nobody")
	assert.Error(t, err)
	assert.Empty(t, append(emsp.Violations(), hub.Violations()...))
}

// TestPublicURL: --public-url is the base of the URLs handed out, without a trailing
// slash; without it, the URL --addr serves, with 127.0.0.1 for every interface.
func TestPublicURL(t *testing.T) {
	for _, c := range []struct{ addr, public, want string }{
		{":8080", "", "http://127.0.0.1:8080"},
		{"0.0.0.0:8080", "", "http://127.0.0.1:8080"},
		{"[::]:8080", "", "http://127.0.0.1:8080"},
		{"10.1.2.3:9000", "", "http://10.1.2.3:9000"},
		{"[2001:db8::1]:9000", "", "http://[2001:db8::1]:9000"},
		{"chargenet.internal:80", "", "http://chargenet.internal:80"},
		{":8080", "https://chargenet.example.com/", "https://chargenet.example.com"},
		{":8080", "https://chargenet.example.com/base", "https://chargenet.example.com/base"},
	} {
		cfg := config{Addr: c.addr, PublicURL: c.public}
		assert.Equal(t, c.want, cfg.publicURL(), "--addr %q --public-url %q", c.addr, c.public)
	}
}
