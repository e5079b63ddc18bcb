package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/outbound"
	"github.com/chargenet/chargenet/ocpi"
)

// newOCPI returns the OCPI service of the configuration over store; without the OCPI
// identity configured, one that can only unregister partners.
func newOCPI(cfg *config, store chargenet.Store, cursors *chargenet.CursorCodec, log *slog.Logger) (*ocpi.Service, error) {
	var party ocpi.Party
	if cfg.ocpiOn() {
		party = cfg.party()
	}
	return ocpi.New(ocpi.Config{Store: store, Party: party, PublicURL: cfg.publicURL(), Cursors: cursors,
		Client: outbound.Client(cfg.WebhookTimeout, 4, cfg.WebhookAllowInsecure), AllowInsecure: cfg.WebhookAllowInsecure,
		TokenCacheTTL: cfg.KeyCacheTTL, Logger: log})
}

// partyFlags and connectFlags name the flags that set the fields and arguments of
// package ocpi's *ocpi.FieldError: serve's OCPI identity, and the partner of register,
// connect and unregister.
var (
	partyFlags   = map[string]string{"Party.CountryCode": "ocpi-country-code", "Party.PartyID": "ocpi-party-id", "Party.Name": "ocpi-business-name"}
	connectFlags = map[string]string{"name": "name", "versionsURL": "versions-url", "tokenA": "token"}
)

// asFlag words err as an error of the flag that sets its field when it is an
// *ocpi.FieldError that flags names ("--ocpi-party-id "C*E" must be three letters or
// digits"); any other error as it is.
func asFlag(err error, flags map[string]string) error {
	var fe *ocpi.FieldError
	if errors.As(err, &fe) {
		if flag, ok := flags[fe.Field]; ok {
			return fmt.Errorf("--%s %s", flag, fe.Reason)
		}
	}
	return err
}

// ocpiCmd runs `chargenet ocpi SUBCOMMAND`: register, connect, list, unregister. Each
// takes serve's configuration (flags and environment), so that the URLs and the
// identity it hands out are those serve answers with.
func ocpiCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	subs := []string{"register", "connect", "list", "unregister"}
	if len(args) == 0 || !contains(subs, args[0]) {
		return fmt.Errorf("%w: ocpi needs a subcommand: %s", errUsage, strings.Join(subs, ", "))
	}
	sub := args[0]
	var name, versionsURL, token string
	cfg, fs, err := parse("ocpi "+sub, args[1:], getenv, stderr, true, func(fs *flag.FlagSet) {
		switch sub {
		case "register", "unregister":
			fs.StringVar(&name, "name", "", "the partner's name (required, unique)")
		case "connect":
			fs.StringVar(&name, "name", "", "the partner's name (unique); empty: its versions URL's host and port")
			fs.StringVar(&versionsURL, "versions-url", "", "the partner's versions URL (required)")
			fs.StringVar(&token, "token", "", "the registration token the partner handed out (its token A; required)")
		}
	})
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: ocpi %s takes no arguments, only flags", errUsage, sub)
	}
	switch {
	case (sub == "register" || sub == "unregister") && name == "":
		return fmt.Errorf("%w: ocpi %s needs --name NAME", errUsage, sub)
	case sub == "connect" && (versionsURL == "" || token == ""):
		return fmt.Errorf("%w: ocpi connect needs --versions-url URL and --token TOKEN", errUsage)
	case (sub == "register" || sub == "connect") && !cfg.ocpiOn():
		return fmt.Errorf("%w: ocpi %s needs --ocpi-country-code and --ocpi-party-id (or CHARGENET_OCPI_COUNTRY_CODE and CHARGENET_OCPI_PARTY_ID), as serve has them", errUsage, sub)
	}
	if sub == "connect" && name == "" {
		name = ocpi.DefaultPartnerName(versionsURL)
	}
	if name != "" {
		if err := ocpi.CheckPartnerName(name); err != nil {
			return fmt.Errorf("%w: %v", errUsage, asFlag(err, connectFlags))
		}
	}
	store, err := openStore(ctx, cfg, nil, 0)
	if err != nil {
		return fmt.Errorf("opening the database: %w", err)
	}
	defer func() { _ = store.Close() }()
	if sub == "list" {
		return listPartners(ctx, store, stdout)
	}
	svc, err := newOCPI(cfg, store, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	switch sub {
	case "register":
		token, _, err := svc.NewPartner(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "OCPI partner %q created. Hand it chargenet's versions URL and this registration token (token A),\n"+
			"outside OCPI; the token is shown only now, and works until the partner registers with it:\n"+
			"  versions URL: %s\n", name, svc.VersionsURL())
		fmt.Fprintln(stdout, token)
	case "connect":
		p, err := svc.Connect(ctx, name, versionsURL, token)
		if err != nil {
			return fmt.Errorf("connecting to %s: %w", versionsURL, asFlag(err, connectFlags))
		}
		fmt.Fprintf(stdout, "registered with OCPI partner %q (%s)\n", p.Name, describeRoles(p.Roles))
		if u := p.ReceiverURL(); u != "" {
			fmt.Fprintf(stdout, "changes are pushed to its Locations receiver at %s\n", u)
		} else {
			fmt.Fprintln(stdout, "it has no Locations receiver: it pulls the Locations itself")
		}
	case "unregister":
		told, err := svc.Disconnect(ctx, name)
		if err != nil {
			return err
		}
		if told != nil {
			fmt.Fprintf(stderr, "warning: the partner was not told (%v); chargenet forgot it anyway\n", told)
		}
		fmt.Fprintf(stdout, "unregistered OCPI partner %q\n", name)
	}
	return nil
}

// listPartners prints the partners as a table.
func listPartners(ctx context.Context, store chargenet.Store, stdout io.Writer) error {
	ps, err := store.ListPartners(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSTATE\tROLES\tVERSIONS URL\tPUSHES TO\tSINCE")
	for _, p := range ps {
		state := "registered"
		switch {
		case p.RegistrationHash != nil:
			state = "waiting for registration"
		case !p.Registered:
			state = "connecting"
		}
		receiver := p.ReceiverURL()
		if receiver == "" {
			receiver = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, state, describeRoles(p.Roles), dash(p.VersionsURL), receiver,
			p.CreatedAt.UTC().Format(time.RFC3339))
	}
	return w.Flush()
}

// describeRoles writes roles as "EMSP NL-EXA, HUB NL-HUB".
func describeRoles(roles []chargenet.PartnerRole) string {
	if len(roles) == 0 {
		return "-"
	}
	parts := make([]string, len(roles))
	for i, r := range roles {
		parts[i] = r.Role + " " + r.CountryCode + "-" + r.PartyID
	}
	return strings.Join(parts, ", ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
