package ocpp

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/intake"
	"github.com/gorilla/websocket"
	"github.com/lorenzodonini/ocpp-go/ocpp"
	ocpp16 "github.com/lorenzodonini/ocpp-go/ocpp1.6"
	ocpp2 "github.com/lorenzodonini/ocpp-go/ocpp2.0.1"
	"github.com/lorenzodonini/ocpp-go/ocppj"
)

// Defaults of Config.
const (
	DefaultHeartbeat    = 5 * time.Minute
	DefaultOfflineAfter = 5 * time.Minute
	// DefaultMaxMessage is the largest frame a box may send: OCPP messages are small;
	// a MeterValues of a busy 2.0.1 station stays far below.
	DefaultMaxMessage = 64 << 10
	// DefaultHandshakeTimeout bounds the HTTP upgrade of a connection.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultWriteTimeout bounds one write to a box.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultRate and DefaultBurst bound the frames one box sends per second: a box
	// sends a handful at boot and a few a minute afterwards.
	DefaultRate  = 20
	DefaultBurst = 60
	// DefaultCommandTimeout is how long a box has to answer a ChangeAvailability.
	DefaultCommandTimeout = 30 * time.Second
)

// Intervals of the background work.
const (
	maxPing        = 30 * time.Second // server pings at least this often
	maxSeenFlush   = time.Minute      // lastSeenAt is recorded at least this often
	epochInterval  = time.Second      // how often the registrations' epoch is read
	pendingSweep   = 30 * time.Second // how often owed availability is sent again
	expireLimit    = 500              // connections ended per ExpireConnections call
	messageTimeout = 30 * time.Second // bound on the store work of one message
)

// Store is what the OCPP listener needs of a store: the EVSEs (status notifications)
// and the charge boxes.
type Store interface {
	chargenet.EVSEService
	chargenet.ChargeboxService
}

// Config configures the OCPP listener. Store and Addr are required.
type Config struct {
	// Addr is the listen address, HOST:PORT.
	Addr string
	// TLS, when set, serves wss:// (OCPP Security Profile 2).
	TLS *tls.Config
	// Store keeps registrations, connections and availability requests.
	Store Store
	// Signals, when set, tells of the boxes another server registered, revoked or
	// connected, or recorded availability for (the store's chargenet.Hooks): the box is
	// acted on at once rather than at the next sweep.
	Signals chargenet.ChargeboxSignals
	// Intake applies the boxes' messages (status notifications) as it applies the HTTP
	// ingestion's; give it Deliver (intake.Config.Deliver) so that the availability the
	// operator sets reaches the boxes connected here at once. Nil builds one over
	// Store with Now and Logger, delivering to this service, without metrics or
	// tracing.
	Intake *intake.Service
	// Heartbeat is the interval a BootNotification is answered with.
	Heartbeat time.Duration
	// OfflineAfter closes a connection from which nothing came for that long; its EVSEs
	// turn UNKNOWN. A connection left recorded by a server that stopped ends when the
	// box was not seen for that long either.
	OfflineAfter time.Duration
	// Authorize accepts every idTag (1.6) and idToken (2.0.1); false rejects them.
	Authorize bool
	// Logger receives connections, refusals and failures; nil discards.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time

	// Limits; zero picks the defaults above.
	MaxMessage       int64
	HandshakeTimeout time.Duration
	WriteTimeout     time.Duration
	Rate             float64
	Burst            int
	CommandTimeout   time.Duration
}

// Validate checks the configuration and fills in the defaults.
func (c *Config) Validate() error {
	switch {
	case c.Store == nil:
		return errors.New("ocpp: Store is required")
	case c.Heartbeat < 0 || c.OfflineAfter < 0:
		return errors.New("ocpp: the heartbeat interval and the offline timeout must not be negative")
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("ocpp: address %q is not HOST:PORT: %v", c.Addr, err)
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Heartbeat, DefaultHeartbeat)
	def(&c.OfflineAfter, DefaultOfflineAfter)
	def(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.CommandTimeout, DefaultCommandTimeout)
	if c.MaxMessage <= 0 {
		c.MaxMessage = DefaultMaxMessage
	}
	if c.Rate <= 0 {
		c.Rate, c.Burst = DefaultRate, DefaultBurst
	}
	if c.Burst < 1 {
		c.Burst = 1
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Service is the OCPP-J endpoint: charge boxes connect to it over OCPP 1.6 or 2.0.1,
// their status notifications take the application path (intake) as the HTTP
// ingestion's do, their connections are recorded, and the availability the operator
// sets is passed on to them. Create it with New, then Serve; Close ends it.
type Service struct {
	cfg    Config
	log    *slog.Logger
	intake *intake.Service
	t      *transport
	cs16   ocpp16.CentralSystem
	csms   ocpp2.CSMS
	writer *stateWriter
	group  *group // every goroutine of the service, and its handlers' work

	ctx    context.Context // ends when the service is closed
	cancel context.CancelFunc

	mu       sync.Mutex
	boxes    map[int64]*conn // connections recorded, by chargeboxId
	inflight map[availabilityKey]bool

	ln       net.Listener
	closeErr error
	closed   sync.Once
}

// availabilityKey identifies one availability request.
type availabilityKey struct {
	uid int64
	at  time.Time
}

// New returns the service for cfg, checked by Config.Validate. The first New of the
// process also sets up ocpp-go, whose settings are process-wide (see
// registerErrorCodes and setLibraryLogger).
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, log: cfg.Logger, intake: cfg.Intake, group: newGroup(), boxes: map[int64]*conn{},
		inflight: map[availabilityKey]bool{}}
	if s.intake == nil {
		var err error
		if s.intake, err = intake.New(intake.Config{Store: cfg.Store, Now: cfg.Now, Logger: cfg.Logger, Deliver: s.Deliver}); err != nil {
			return nil, fmt.Errorf("ocpp: %w", err)
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	registerErrorCodes()
	setLibraryLogger(cfg.Logger)
	ping := min(maxPing, cfg.OfflineAfter/3)
	s.t = newTransport(transportConfig{MaxMessage: cfg.MaxMessage, HandshakeTimeout: cfg.HandshakeTimeout,
		PingInterval: ping, IdleTimeout: cfg.OfflineAfter, WriteTimeout: cfg.WriteTimeout, Rate: cfg.Rate, Burst: cfg.Burst},
		transportHooks{authenticate: s.authenticate, connected: s.connected, disconnected: s.disconnected}, s.group, cfg.Logger)
	s.cs16 = s.newCentralSystem(s.t.endpoint(chargenet.ProtocolOCPP16))
	s.csms = s.newCSMS(s.t.endpoint(chargenet.ProtocolOCPP201))
	s.writer = newStateWriter(cfg.Store, cfg.Logger)
	return s, nil
}

// Listen binds the listen address and returns it (the port chosen for ":0").
func (s *Service) Listen() (net.Addr, error) {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("ocpp: listening on %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	return ln.Addr(), nil
}

// Serve serves the connections (after Listen) and runs the background work until Close;
// it then returns nil, or the error that stopped the listener.
func (s *Service) Serve() error {
	if s.ln == nil {
		return errors.New("ocpp: Serve before Listen")
	}
	epoch, err := s.cfg.Store.ChargeboxEpoch(s.ctx)
	if err != nil {
		s.log.Warn("ocpp: reading the registrations' epoch failed", "error", err.Error())
	}
	s.writer.start(s.group)
	s.group.Go(func() { s.every(s.seenFlush(), s.flushSeen) })
	s.group.Go(func() { s.every(s.seenFlush(), s.expire) })
	s.group.Go(func() { s.watchEpoch(epoch) })
	s.group.Go(func() { s.every(pendingSweep, s.sendPending) })
	if s.cfg.Signals != nil {
		s.cfg.Signals.OnChargeboxSignal(s.signalled)
	}
	ln := s.ln
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	if err := s.t.serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close stops accepting connections and closes every connection with 1001 (going away),
// then ends the background work, and waits up to ctx until every goroutine the service
// started, and every message being handled, has ended; past ctx it returns ctx's error.
// It does not record the connections' end: a box that does not come back within the
// offline timeout is ended by the next server to run.
func (s *Service) Close(ctx context.Context) error {
	s.closed.Do(func() {
		s.group.stop() // nothing new starts
		err := s.t.close(ctx)
		s.cancel()
		s.writer.close()
		if werr := s.group.wait(ctx); err == nil {
			err = werr
		}
		s.cs16.Stop()
		s.csms.Stop()
		s.closeErr = err
	})
	return s.closeErr
}

// Connected returns the number of boxes connected to this server.
func (s *Service) Connected() int { return s.t.count() }

// seenFlush is how often lastSeenAt is recorded, and the sweep for connections left
// behind runs.
func (s *Service) seenFlush() time.Duration { return min(maxSeenFlush, s.cfg.OfflineAfter/4) }

// every runs f each d until the service closes.
func (s *Service) every(d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// now is the current time as the stores keep it (UTC, to the microsecond).
func (s *Service) now() time.Time { return chargenet.Stamp(s.cfg.Now()) }

// heartbeat is the interval a BootNotification is answered with, in seconds.
func (s *Service) heartbeat() int { return int(s.cfg.Heartbeat / time.Second) }

// authenticate checks a box's credentials (the transport's hook).
func (s *Service) authenticate(ctx context.Context, identity, password string) (*chargenet.Chargebox, error) {
	c, err := s.cfg.Store.ChargeboxByIdentity(ctx, identity)
	if errors.Is(err, chargenet.ErrNotFound) {
		return nil, errUnauthorized
	}
	if err != nil {
		return nil, err
	}
	if !c.CheckPassword(password) {
		return nil, errUnauthorized
	}
	return c, nil
}

// newSession returns a new connection id.
func newSession() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// connected records a new connection before its first frame is read (the transport's
// hook): its chargebox.connected event, and its session, which any older connection's
// end then no longer matches.
func (s *Service) connected(c *conn) error {
	session := newSession()
	ctx, cancel := context.WithTimeout(s.ctx, messageTimeout)
	defer cancel()
	if err := s.writer.record(ctx, chargenet.ConnectionChange{Kind: chargenet.Connected, Chargebox: c.box, Session: session,
		Protocol: c.protocol(), At: s.now()}); err != nil {
		return err
	}
	c.recorded.Store(&session)
	s.mu.Lock()
	s.boxes[c.box] = c
	s.mu.Unlock()
	s.log.Info("ocpp: charge box connected", "identity", c.identity, "chargeboxId", c.box, "protocol", c.protocol(),
		"remote", c.socket().RemoteAddr().String())
	return nil
}

// disconnected records the end of a connection (the transport's hook). A connection
// replaced by a newer one of the same box, or closed because the server stops, is not
// recorded as ended: the newer one took its place, or the box comes back.
func (s *Service) disconnected(c *conn) {
	s.mu.Lock()
	if s.boxes[c.box] == c {
		delete(s.boxes, c.box)
	}
	s.mu.Unlock()
	reason := c.why()
	s.log.Info("ocpp: charge box disconnected", "identity", c.identity, "chargeboxId", c.box, "reason", reason)
	switch reason {
	case chargenet.ReasonClosed, chargenet.ReasonOffline, chargenet.ReasonRevoked:
	default: // replaced or shut down: not an end
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), messageTimeout)
	defer cancel()
	if err := s.writer.record(ctx, chargenet.ConnectionChange{Kind: chargenet.Disconnected, Chargebox: c.box,
		Session: c.session(), Reason: reason, At: s.now()}); err != nil {
		s.log.Warn("ocpp: recording the end of a connection failed; it ends when the box is not seen for the offline timeout",
			"identity", c.identity, "error", err.Error())
	}
}

// ready runs once the OCPP layer knows a new connection: what the box owes is sent.
func (s *Service) ready(identity string) {
	c := s.t.lookup(identity)
	if c == nil {
		return
	}
	c.ready.Store(true)
	s.group.Go(func() {
		ctx, cancel := context.WithTimeout(s.ctx, messageTimeout)
		defer cancel()
		owed, err := s.intake.Owed(ctx, c.box)
		if err != nil {
			if !errors.Is(err, chargenet.ErrNotFound) && s.ctx.Err() == nil {
				s.log.Warn("ocpp: reading what a box owes failed", "identity", identity, "error", err.Error())
			}
			return
		}
		s.deliver(c, owed)
	})
}

// connOf returns the connection of identity for a message's handler.
func (s *Service) connOf(identity string) (*conn, error) {
	c := s.t.lookup(identity)
	if c == nil || c.session() == "" {
		return nil, ocpp.NewError(ocppj.InternalError, "the connection is closing", "")
	}
	return c, nil
}

// recovered turns a panic of a message's work into an InternalError for the box (and a
// log line with the stack), so that one message never takes the server down.
func (s *Service) recovered(identity, action string, err *error) {
	if r := recover(); r != nil {
		s.log.Error("ocpp: handling a message panicked", "identity", identity, "action", action, "panic", fmt.Sprint(r),
			"stack", string(debug.Stack()))
		*err = ocpp.NewError(ocppj.InternalError, "internal error", "")
	}
}

// handling counts the work of a message's handler, which runs on a goroutine of the
// OCPP layer, so that Close waits for it; call s.group.leave when it is done. Once the
// service is closing, it returns the InternalError answering the message instead.
func (s *Service) handling() error {
	if !s.group.enter() {
		return ocpp.NewError(ocppj.InternalError, "the service is closing; retry later", "")
	}
	return nil
}

// booted records a box's boot information.
func (s *Service) booted(identity string, boot chargenet.BootInfo) (err error) {
	defer s.recovered(identity, "BootNotification", &err)
	if err := s.handling(); err != nil {
		return err
	}
	defer s.group.leave()
	c, err := s.connOf(identity)
	if err != nil {
		return err
	}
	boot.At = s.now()
	ctx, cancel := context.WithTimeout(s.ctx, messageTimeout)
	defer cancel()
	err = s.writer.record(ctx, chargenet.ConnectionChange{Kind: chargenet.Booted, Chargebox: c.box, Session: c.session(),
		Boot: &boot, At: boot.At})
	return s.ocppError(identity, "BootNotification", err)
}

// notify applies a status notification n of the box, as decoded, through the
// application path and returns once it is committed.
func (s *Service) notify(identity string, n *chargenet.StatusNotification) (err error) {
	defer s.recovered(identity, "StatusNotification", &err)
	if err := s.handling(); err != nil {
		return err
	}
	defer s.group.leave()
	c, err := s.connOf(identity)
	if err != nil {
		return err
	}
	n.ChargeboxID = c.box
	ctx, cancel := context.WithTimeout(s.ctx, messageTimeout)
	defer cancel()
	_, err = s.intake.StatusNotification(ctx, intake.Chargebox(identity), n)
	return s.ocppError(identity, "StatusNotification", err)
}

// ocppError turns the error of a message's work into the CALLERROR answering it: a
// domain error (the notification names no connector of the box, its timestamp is too
// far ahead) is PropertyConstraintViolation with the domain's message; anything else is
// InternalError without detail, logged.
func (s *Service) ocppError(identity, action string, err error) error {
	if err == nil {
		return nil
	}
	var de *chargenet.Error
	switch {
	case errors.Is(err, chargenet.ErrUnavailable):
		s.log.Warn("ocpp: the database is unavailable", "identity", identity, "action", action, "error", err.Error())
		return ocpp.NewError(ocppj.InternalError, "the service cannot reach its database; retry later", "")
	case errors.As(err, &de):
		return ocpp.NewError(ocppj.PropertyConstraintViolation, de.Message, "")
	}
	s.log.Error("ocpp: handling a message failed", "identity", identity, "action", action, "error", err.Error())
	return ocpp.NewError(ocppj.InternalError, "internal error", "")
}

// checker returns the endpoint's frame check: a frame the OCPP-J layer would drop or
// misjudge (see checkFrame) is answered here with the CALLERROR of d.
func (s *Service) checker(d dialect, srv *ocppj.Server) func(c *conn, data []byte) bool {
	return func(c *conn, data []byte) bool {
		fe := d.checkFrame(data)
		if fe == nil {
			return false
		}
		s.log.Debug("ocpp: malformed frame", "identity", c.identity, "code", string(fe.code), "why", fe.description)
		if err := srv.SendError(c.identity, fe.id, fe.code, fe.description, nil); err != nil {
			s.log.Debug("ocpp: answering a malformed frame failed", "identity", c.identity, "error", err.Error())
		}
		return true
	}
}

// flushSeen records when something last came from each connection, for those from
// which something came since the last flush.
func (s *Service) flushSeen() {
	s.t.each(func(c *conn) {
		seen := c.seen.Load()
		if c.session() == "" || seen <= c.flushed.Load() {
			return
		}
		c.flushed.Store(seen)
		s.writer.post(chargenet.ConnectionChange{Kind: chargenet.Seen, Chargebox: c.box, Session: c.session(),
			At: chargenet.Stamp(time.Unix(0, seen))})
	})
}

// expire ends the connections recorded by servers that stopped, once their boxes were
// not seen for the offline timeout (plus two flushes, the most a live connection's
// record can lag).
func (s *Service) expire() {
	before := s.now().Add(-s.cfg.OfflineAfter - 2*s.seenFlush())
	for {
		ids, err := s.cfg.Store.ExpireConnections(s.ctx, before, s.now(), expireLimit)
		if err != nil {
			if s.ctx.Err() == nil {
				s.log.Warn("ocpp: ending connections left behind failed", "error", err.Error())
			}
			return
		}
		if len(ids) > 0 {
			s.log.Info("ocpp: ended connections whose boxes were not seen for the offline timeout", "chargeboxes", len(ids))
		}
		if len(ids) < expireLimit {
			return
		}
	}
}

// watchEpoch checks every connection's registration whenever the registrations' epoch
// changes (chargenet chargebox create or revoke, maybe from another process).
func (s *Service) watchEpoch(last int64) {
	t := time.NewTicker(epochInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		epoch, err := s.cfg.Store.ChargeboxEpoch(s.ctx)
		if err != nil || epoch == last {
			continue
		}
		last = epoch
		s.t.each(func(c *conn) { s.check(c, false) })
	}
}

// signalled acts on a signal of another server (ChargeboxSignals): box id's
// registration, connection or availability changed; 0: anything may have.
func (s *Service) signalled(id int64) {
	if id == 0 {
		s.t.each(func(c *conn) { s.check(c, true) })
		return
	}
	s.mu.Lock()
	c := s.boxes[id]
	s.mu.Unlock()
	if c != nil {
		s.group.Go(func() { s.check(c, true) })
	}
}

// check compares a connection with the box's record: a revoked registration or a new
// password closes it (revoked); another session, recorded by another server, means a
// newer connection of the box took over there (replaced); a connection ended there by
// mistake is recorded again. With owed, the availability the box owes is sent.
func (s *Service) check(c *conn, owed bool) {
	if c.session() == "" {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, messageTimeout)
	defer cancel()
	box, err := s.cfg.Store.Chargebox(ctx, c.box)
	switch {
	case errors.Is(err, chargenet.ErrNotFound):
		c.close(websocket.ClosePolicyViolation, "registration revoked", chargenet.ReasonRevoked)
		return
	case err != nil:
		if s.ctx.Err() == nil {
			s.log.Warn("ocpp: checking a box's registration failed", "identity", c.identity, "error", err.Error())
		}
		return
	case box.PasswordHash != c.hash || box.Identity != c.identity:
		c.close(websocket.ClosePolicyViolation, "registration replaced", chargenet.ReasonRevoked)
		return
	case box.Session != "" && box.Session != c.session():
		if s.t.lookup(c.identity) == c {
			c.close(websocket.ClosePolicyViolation, "replaced by a new connection", reasonReplaced)
		}
		return
	case box.Session == "":
		if err := s.writer.record(ctx, chargenet.ConnectionChange{Kind: chargenet.Connected, Chargebox: c.box,
			Session: c.session(), Protocol: c.protocol(), At: s.now()}); err != nil {
			s.log.Warn("ocpp: recording a connection again failed", "identity", c.identity, "error", err.Error())
		}
	}
	if owed {
		s.deliver(c, chargenet.PendingRequests(box.Availability))
	}
}

// Deliver sends owed, the availability requests charge box id owes (intake.Service.Owed,
// after the operator changed an EVSE's availability), to the box when its connection is
// held here; another server holding it learns them from the store (ChargeboxSignals, or
// its next sweep). It is the hook intake.Config.Deliver.
func (s *Service) Deliver(id int64, owed []chargenet.AvailabilityRequest) {
	s.mu.Lock()
	c := s.boxes[id]
	s.mu.Unlock()
	if c != nil {
		s.deliver(c, owed)
	}
}

// sendPending sends every pending request whose box is connected here.
func (s *Service) sendPending() {
	pending, err := s.cfg.Store.PendingAvailability(s.ctx)
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Warn("ocpp: reading pending availability failed", "error", err.Error())
		}
		return
	}
	byBox := map[int64][]chargenet.AvailabilityRequest{}
	for _, a := range pending {
		byBox[a.ChargeboxID] = append(byBox[a.ChargeboxID], a)
	}
	s.mu.Lock()
	var conns []*conn
	for id := range byBox {
		if c := s.boxes[id]; c != nil {
			conns = append(conns, c)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		s.deliver(c, byBox[c.box])
	}
}
