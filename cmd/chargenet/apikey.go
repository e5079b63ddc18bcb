package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/server"
)

// keyFlags are the flags of the apikey subcommands, checked by check.
type keyFlags struct {
	name      string
	scopes    scopeList
	expires   string
	rateLimit string
	overlap   time.Duration

	// Set by check.
	expiresAt *time.Time
	limit     chargenet.RateLimit
}

// scopeList is a repeatable --scope.
type scopeList []string

func (l *scopeList) String() string     { return strings.Join(*l, ",") }
func (l *scopeList) Set(v string) error { *l = append(*l, v); return nil }

// bind registers the flags of subcommand cmd on fs.
func (f *keyFlags) bind(cmd string, fs *flag.FlagSet) {
	switch cmd {
	case "create", "rotate":
		fs.StringVar(&f.name, "name", "", "name of the key (required)")
		fs.StringVar(&f.expires, "expires", "", "when the key stops working: a duration from now (90d, 12h, 2s) or an RFC 3339 time")
	}
	switch cmd {
	case "create":
		fs.Var(&f.scopes, "scope", "a scope the key holds, repeatable: "+strings.Join(chargenet.Scopes, ", ")+
			", or partner (the first four); partner when none is given")
		fs.StringVar(&f.rateLimit, "rate-limit", "", "the key's own rate limit as N/DURATION (600/1m), replacing serve's --rate-limit for it")
	case "rotate":
		fs.DurationVar(&f.overlap, "overlap", server.DefaultKeyOverlap, "how long the old secret keeps working")
	}
}

// check validates the flags of subcommand cmd at now.
func (f *keyFlags) check(cmd string, now time.Time) error {
	if cmd == "list" || cmd == "revoke" {
		return nil
	}
	if f.name == "" {
		return fmt.Errorf("apikey %s needs --name NAME", cmd)
	}
	if cmd == "create" {
		if err := chargenet.CheckKeyName(f.name); err != nil {
			return err
		}
		scopes, err := chargenet.ParseScopes(f.scopes)
		if err != nil {
			return fmt.Errorf("--scope: %w", err)
		}
		f.scopes = scopes
		if f.rateLimit != "" {
			if f.limit, err = parseRateLimit(f.rateLimit); err != nil {
				return err
			}
			if err := chargenet.CheckKeyRateLimit(f.limit); err != nil {
				return fmt.Errorf("--rate-limit: %w", err)
			}
		}
	}
	if f.overlap < 0 || f.overlap > 30*24*time.Hour {
		return fmt.Errorf("--overlap %s must be between 0 and 720h", f.overlap)
	}
	if f.expires != "" {
		at, err := parseExpiry(f.expires, now)
		if err != nil {
			return err
		}
		f.expiresAt = &at
	}
	return nil
}

// parseExpiry reads --expires: a duration from now, with "d" for days (90d) besides Go's
// units, or an RFC 3339 time. The result is after now, to the second.
func parseExpiry(s string, now time.Time) (time.Time, error) {
	var at time.Time
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 && n <= 36500 {
			at = now.Add(time.Duration(n) * 24 * time.Hour)
		}
	} else if d, err := time.ParseDuration(s); err == nil {
		at = now.Add(d)
	} else if t, err := time.Parse(time.RFC3339, s); err == nil {
		at = t
	}
	if at.IsZero() {
		return time.Time{}, fmt.Errorf("--expires %q must be a duration (90d, 12h, 2s) or an RFC 3339 time", s)
	}
	at = at.UTC().Truncate(time.Second)
	if !at.After(now) {
		return time.Time{}, fmt.Errorf("--expires %q must be in the future", s)
	}
	return at, nil
}

func apikey(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, clock func() time.Time) error {
	if len(args) == 0 || !strings.Contains(" create rotate list revoke ", " "+args[0]+" ") {
		return fmt.Errorf("%w: apikey needs a subcommand: create, rotate, list or revoke", errUsage)
	}
	cmd := args[0]
	var f keyFlags
	cfg, fs, err := parse("apikey "+cmd, args[1:], getenv, stderr, false, func(fs *flag.FlagSet) { f.bind(cmd, fs) })
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	now := clock().UTC().Truncate(time.Second)
	switch {
	case cmd == "revoke" && fs.NArg() != 1:
		return fmt.Errorf("%w: apikey revoke needs exactly one NAME", errUsage)
	case cmd != "revoke" && fs.NArg() != 0:
		return fmt.Errorf("%w: apikey %s takes no argument besides its flags", errUsage, cmd)
	}
	if err := f.check(cmd, now); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	store, err := openStore(ctx, cfg, nil, 0)
	if err != nil {
		return fmt.Errorf("opening the database: %w", err)
	}
	defer func() { _ = store.Close() }()
	switch cmd {
	case "revoke":
		name := fs.Arg(0)
		if err := store.RevokeAPIKey(ctx, name, now); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked API key %q\n", name)
		return nil
	case "list":
		return listKeys(ctx, store, now, stdout)
	case "rotate":
		secret := server.NewAPIKey()
		key, err := store.RotateAPIKey(ctx, f.name, chargenet.KeyRotation{Hash: chargenet.HashAPIKey(secret),
			PreviousUntil: now.Add(f.overlap), ExpiresAt: f.expiresAt})
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "API key %q rotated; its old secret works until %s (within --key-cache-ttl on running servers). "+
			"The new one is shown only now; store it safely:\n", key.Name, key.PreviousUntil.Format(time.RFC3339))
		fmt.Fprintln(stdout, secret)
		return nil
	}
	secret := server.NewAPIKey()
	key := chargenet.APIKey{Name: f.name, Hash: chargenet.HashAPIKey(secret), Scopes: f.scopes, CreatedAt: now, RateLimit: f.limit}
	if f.expiresAt != nil {
		key.ExpiresAt = *f.expiresAt
	}
	if err := store.CreateAPIKey(ctx, key); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "API key %q created (scopes %s). It is shown only now; store it safely:\n", f.name, strings.Join(f.scopes, " "))
	fmt.Fprintln(stdout, secret)
	return nil
}

// listKeys writes a table of the keys not revoked: name, scopes, creation, expiry, own
// rate limit, last use (to the minute, see server.Keys), and the end of a rotation's
// overlap while it runs.
func listKeys(ctx context.Context, store chargenet.Store, now time.Time, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSCOPES\tCREATED\tEXPIRES\tRATE LIMIT\tLAST USED\tOLD SECRET UNTIL")
	seek := chargenet.Seek[string]{Limit: chargenet.MaxPageSize}
	for {
		keys, err := store.ListAPIKeys(ctx, seek)
		if err != nil {
			return err
		}
		for _, k := range keys {
			expires := stamp(k.ExpiresAt, "never")
			if !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt) {
				expires += " (expired)"
			}
			limit := "default"
			if k.RateLimit.Requests > 0 {
				limit = k.RateLimit.String()
			}
			previous := "-"
			if k.PreviousUntil.After(now) {
				previous = stamp(k.PreviousUntil, "-")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.Name, strings.Join(k.Scopes, ","), stamp(k.CreatedAt, "-"),
				expires, limit, stamp(k.LastUsedAt, "never"), previous)
		}
		if len(keys) < seek.Limit {
			return tw.Flush()
		}
		seek.Key, seek.HasKey = keys[len(keys)-1].Name, true
	}
}

// stamp writes t in RFC 3339 (UTC), or none when t is zero.
func stamp(t time.Time, none string) string {
	if t.IsZero() {
		return none
	}
	return t.UTC().Format(time.RFC3339)
}
