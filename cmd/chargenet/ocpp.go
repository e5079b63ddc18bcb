package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/intake"
	"github.com/chargenet/chargenet/ocpp"
)

// demoChargeboxes are the charge boxes of the demo inventory (chargenet.DemoInventory).
func demoChargeboxes() []int64 {
	seen := map[int64]bool{}
	var ids []int64
	for _, e := range chargenet.DemoInventory(time.Now()).EVSEs {
		if !seen[e.ChargeboxID] {
			seen[e.ChargeboxID] = true
			ids = append(ids, e.ChargeboxID)
		}
	}
	return ids
}

// registerDemoBoxes registers the demo charge boxes that are not registered, with
// identity their id and password the development password; registered ones keep theirs.
func registerDemoBoxes(ctx context.Context, store chargenet.Store, password string) (int, error) {
	n := 0
	for _, id := range demoChargeboxes() {
		_, err := store.Chargebox(ctx, id)
		if err == nil {
			continue
		}
		if !errors.Is(err, chargenet.ErrNotFound) {
			return n, err
		}
		if _, err := store.RegisterChargebox(ctx, id, strconv.FormatInt(id, 10), chargenet.HashChargeboxPassword(password), time.Now()); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// startOCPP starts the OCPP listener of cfg on store, its messages applied by in and
// told of other servers' boxes by signals (the store's hooks), and returns it with the
// function that closes it (within the shutdown timeout).
func startOCPP(cfg *config, store chargenet.Store, signals chargenet.ChargeboxSignals, in *intake.Service, log *slog.Logger) (*ocpp.Service, func(), error) {
	var tlsCfg *tls.Config
	if cfg.OCPPTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.OCPPTLSCert, cfg.OCPPTLSKey)
		if err != nil {
			return nil, nil, fmt.Errorf("--ocpp-tls-cert, --ocpp-tls-key: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	svc, err := ocpp.New(ocpp.Config{Addr: cfg.OCPPAddr, TLS: tlsCfg, Store: store, Signals: signals, Intake: in, Heartbeat: cfg.OCPPHeartbeat,
		OfflineAfter: cfg.OCPPOfflineAfter, Authorize: cfg.OCPPAuthorize == authorizeAccept, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	addr, err := svc.Listen()
	if err != nil {
		return nil, nil, err
	}
	url := ocppURL(addr, tlsCfg != nil)
	log.Info("ocpp listening", "url", url+"{identity}", "authorize", cfg.OCPPAuthorize, "heartbeat", cfg.OCPPHeartbeat.String(),
		"offline_after", cfg.OCPPOfflineAfter.String())
	if cfg.Demo {
		ids := demoChargeboxes()
		log.Info("ocpp demo charge boxes: connect with Basic auth, user = identity", "url", url+strconv.FormatInt(ids[0], 10),
			"identity", strconv.FormatInt(ids[0], 10), "password", cfg.OCPPDevPassword,
			"identities", fmt.Sprintf("%d to %d", ids[0], ids[len(ids)-1]))
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := svc.Serve(); err != nil {
			log.Error("ocpp listener failed", "error", err.Error())
		}
	}()
	return svc, func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		if err := svc.Close(ctx); err != nil {
			log.Warn("closing the ocpp connections", "error", err.Error())
		}
		<-served
	}, nil
}

// ocppURL is the URL boxes connect to, without the identity.
func ocppURL(addr net.Addr, tls bool) string {
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	scheme := "ws"
	if tls {
		scheme = "wss"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/ocpp/"
}

// chargebox runs `chargenet chargebox create|revoke`.
func chargebox(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "create" && args[0] != "revoke") {
		return fmt.Errorf("%w: chargebox needs a subcommand: create or revoke", errUsage)
	}
	var id int64
	var identity string
	cfg, fs, err := parse("chargebox "+args[0], args[1:], getenv, stderr, false, func(fs *flag.FlagSet) {
		fs.Int64Var(&id, "id", 0, "the charge box (its EVSEs' chargeboxId), a positive integer (required)")
		if args[0] == "create" {
			fs.StringVar(&identity, "identity", "", "the identity it connects with (the last part of its URL, its Basic auth user); default: the id in decimal")
		}
	})
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if id < 1 || fs.NArg() != 0 {
		return fmt.Errorf("%w: chargebox %s needs --id, a positive integer, and no other argument", errUsage, args[0])
	}
	if identity == "" {
		identity = strconv.FormatInt(id, 10)
	}
	if err := chargenet.CheckIdentity(identity); err != nil {
		return fmt.Errorf("%w: --identity: %v", errUsage, err)
	}
	store, err := openStore(ctx, cfg, nil, 0)
	if err != nil {
		return fmt.Errorf("opening the database: %w", err)
	}
	defer func() { _ = store.Close() }()
	if args[0] == "revoke" {
		if err := store.RevokeChargebox(ctx, id, time.Now()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked charge box %d; a live connection is closed within a second\n", id)
		return nil
	}
	password := chargenet.NewChargeboxPassword()
	created, err := store.RegisterChargebox(ctx, id, identity, chargenet.HashChargeboxPassword(password), time.Now())
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(stderr, "charge box %d registered with identity %q. Its password is shown only now; set it in the box:\n", id, identity)
	} else {
		fmt.Fprintf(stderr, "charge box %d: identity %q and a new password; a live connection is closed within a second. The password is shown only now:\n", id, identity)
	}
	fmt.Fprintln(stdout, password)
	return nil
}
