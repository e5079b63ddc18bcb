package ocpp

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/gorilla/websocket"
	"github.com/lorenzodonini/ocpp-go/ws"
)

// Why a connection ended, as the disconnect hook sees it: one of chargenet's reasons
// (ReasonClosed: the box or the network closed it, or a write failed; ReasonOffline:
// nothing came from the box for the idle timeout; ReasonRevoked: the registration was
// revoked or its password replaced), recorded as the connection's end, or one of these,
// which record no end.
const (
	reasonReplaced = "replaced" // a new connection of the same identity took its place
	reasonShutdown = "shutdown" // the server is stopping
)

// transportConfig holds the limits of the WebSocket server.
type transportConfig struct {
	// MaxMessage is the largest frame read, in bytes; a larger one closes the
	// connection with 1009 (message too big).
	MaxMessage int64
	// HandshakeTimeout bounds the whole HTTP upgrade: a request that has not sent its
	// headers by then is closed.
	HandshakeTimeout time.Duration
	// PingInterval is how often the server pings every connection.
	PingInterval time.Duration
	// IdleTimeout closes a connection from which nothing (frame, ping or pong) came
	// for that long.
	IdleTimeout time.Duration
	// WriteTimeout bounds one write to a box; a write that takes longer closes it.
	WriteTimeout time.Duration
	// Rate and Burst bound the frames read from one box per second (a token bucket):
	// past them the box's reads wait, so TCP slows that box and no other.
	Rate  float64
	Burst int
}

// transportHooks are what the transport asks of the service.
type transportHooks struct {
	// authenticate checks a box's identity and password before the upgrade and returns
	// its registration. errUnauthorized refuses it with 401; another error with 503.
	authenticate func(ctx context.Context, identity, password string) (*chargenet.Chargebox, error)
	// connected runs after the upgrade, before the box's first frame is read; an error
	// closes the connection (1011).
	connected func(c *conn) error
	// disconnected runs once the connection is gone, after the OCPP layer forgot it.
	disconnected func(c *conn)
}

// errUnauthorized is authenticate's answer for an unknown identity or a wrong password.
var errUnauthorized = errors.New("unknown identity or wrong password")

// transport is the WebSocket server of the OCPP listener. It serves ws(s)://HOST:PORT/ocpp/{identity},
// checks HTTP Basic auth before the upgrade, keeps one connection per identity (a new
// one replaces the old), and hands frames to the OCPP-J layer of the subprotocol the box
// chose through an endpoint (ocpp-go's ws.WsServer). Each connection costs one
// goroutine, its read loop; writes happen on the writer's goroutine under the
// connection's lock. Its goroutines run in the service's group.
type transport struct {
	cfg      transportConfig
	hooks    transportHooks
	group    *group
	log      *slog.Logger
	upgrader websocket.Upgrader
	http     *http.Server

	mu        sync.Mutex
	conns     map[string]*conn // by identity
	endpoints map[string]*endpoint
	closing   bool

	stopPing chan struct{}
}

// newTransport returns a transport whose goroutines run in g; add an endpoint per
// subprotocol, then serve.
func newTransport(cfg transportConfig, hooks transportHooks, g *group, log *slog.Logger) *transport {
	t := &transport{cfg: cfg, hooks: hooks, group: g, log: log, conns: map[string]*conn{}, endpoints: map[string]*endpoint{},
		stopPing: make(chan struct{})}
	t.upgrader = websocket.Upgrader{
		// 512 bytes: an idle box costs little; larger frames are read in several calls.
		ReadBufferSize:   512,
		WriteBufferPool:  &sync.Pool{},
		HandshakeTimeout: cfg.HandshakeTimeout,
		CheckOrigin:      func(*http.Request) bool { return true }, // boxes send no Origin; auth is Basic
	}
	mux := http.NewServeMux()
	mux.HandleFunc(pathPrefix, t.handle)
	t.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: cfg.HandshakeTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	return t
}

// pathPrefix is the path before a box's identity.
const pathPrefix = "/ocpp/"

// endpoint returns the ws.WsServer of subprotocol proto.
func (t *transport) endpoint(proto string) *endpoint {
	e := &endpoint{t: t, proto: proto}
	t.endpoints[proto] = e
	return e
}

// serve serves ln (already wrapped in TLS when TLS is on) until close; it returns
// http.ErrServerClosed after close.
func (t *transport) serve(ln net.Listener) error {
	t.group.Go(t.pinger)
	return t.http.Serve(ln)
}

// close stops accepting connections, closes every connection with 1001 (going away)
// and waits, up to ctx, until each has ended and its disconnect hook has run.
func (t *transport) close(ctx context.Context) error {
	t.mu.Lock()
	t.closing = true
	conns := make([]*conn, 0, len(t.conns))
	for _, c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	err := t.http.Close() // hijacked connections are ours to close
	select {
	case <-t.stopPing:
	default:
		close(t.stopPing)
	}
	for _, c := range conns {
		c.close(websocket.CloseGoingAway, "server shutting down", reasonShutdown)
	}
	for _, c := range conns {
		select {
		case <-c.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

// count returns the number of connected boxes.
func (t *transport) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

// lookup returns the connection of identity, or nil.
func (t *transport) lookup(identity string) *conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conns[identity]
}

// each calls f for every connection.
func (t *transport) each(f func(*conn)) {
	t.mu.Lock()
	list := make([]*conn, 0, len(t.conns))
	for _, c := range t.conns {
		list = append(list, c)
	}
	t.mu.Unlock()
	for _, c := range list {
		f(c)
	}
}

// subprotocol returns the first subprotocol the request offers that an endpoint
// serves: the box's order of preference decides.
func (t *transport) subprotocol(r *http.Request) string {
	for _, p := range websocket.Subprotocols(r) {
		if t.endpoints[p] != nil {
			return p
		}
	}
	return ""
}

// handle upgrades one box: identity from the path, Basic auth, subprotocol, then the
// identity is taken (replacing an older connection) before the 101 is written, so that
// a box that saw its 101 is the one registered.
func (t *transport) handle(w http.ResponseWriter, r *http.Request) {
	identity := strings.TrimPrefix(r.URL.Path, pathPrefix)
	if !chargenet.ValidIdentity(identity) {
		http.Error(w, "not found: connect to /ocpp/{identity}", http.StatusNotFound)
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		http.Error(w, "this endpoint speaks OCPP-J over WebSocket only", http.StatusBadRequest)
		return
	}
	user, password, ok := r.BasicAuth()
	if !ok || user != identity {
		t.refuse(w, identity, r, "no Basic credentials for the identity of the path")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), t.cfg.HandshakeTimeout)
	box, err := t.hooks.authenticate(ctx, identity, password)
	cancel()
	switch {
	case errors.Is(err, errUnauthorized):
		t.refuse(w, identity, r, err.Error())
		return
	case err != nil:
		t.log.Warn("ocpp: checking a box's credentials failed", "identity", identity, "error", err.Error())
		http.Error(w, "service unavailable, retry later", http.StatusServiceUnavailable)
		return
	}
	proto := t.subprotocol(r)
	if proto == "" {
		http.Error(w, "Sec-WebSocket-Protocol must offer ocpp1.6 or ocpp2.0.1", http.StatusBadRequest)
		return
	}
	c := &conn{t: t, identity: identity, box: box.ID, hash: box.PasswordHash, ep: t.endpoints[proto], tls: r.TLS,
		done: make(chan struct{}), quit: make(chan struct{}), slot: make(chan struct{}, 1)}
	c.tokens, c.last = float64(t.cfg.Burst), time.Now()
	if !t.take(c) {
		http.Error(w, "server shutting down", http.StatusServiceUnavailable)
		close(c.done)
		return
	}
	wc, err := t.upgrader.Upgrade(w, r, http.Header{"Sec-Websocket-Protocol": {proto}})
	if err != nil {
		t.release(c)
		close(c.done)
		return // the upgrader answered 4xx
	}
	c.wmu.Lock()
	c.ws = wc
	c.wmu.Unlock()
	if c.closing.Load() { // replaced, revoked or shut down during the upgrade
		c.closeSocket()
	}
	if !t.group.Go(c.readLoop) { // the service is closing: the box never reaches the OCPP layer
		c.closeSocket()
		t.release(c)
		close(c.done)
	}
}

// refuse answers 401 and logs why.
func (t *transport) refuse(w http.ResponseWriter, identity string, r *http.Request, why string) {
	t.log.Info("ocpp: connection refused", "identity", identity, "remote", r.RemoteAddr, "why", why)
	w.Header().Set("WWW-Authenticate", `Basic realm="chargenet OCPP", charset="UTF-8"`)
	http.Error(w, "unauthorized", http.StatusUnauthorized)
}

// take registers c under its identity, closing and awaiting the connection it
// replaces. It returns false while the transport closes.
func (t *transport) take(c *conn) bool {
	for {
		t.mu.Lock()
		if t.closing {
			t.mu.Unlock()
			return false
		}
		old := t.conns[c.identity]
		if old == nil {
			t.conns[c.identity] = c
			t.mu.Unlock()
			return true
		}
		t.mu.Unlock()
		old.close(websocket.ClosePolicyViolation, "replaced by a new connection", reasonReplaced)
		<-old.done
	}
}

// release forgets c if it is still the connection of its identity.
func (t *transport) release(c *conn) {
	t.mu.Lock()
	if t.conns[c.identity] == c {
		delete(t.conns, c.identity)
	}
	t.mu.Unlock()
}

// pinger pings every connection each PingInterval, from one goroutine for all.
func (t *transport) pinger() {
	tick := time.NewTicker(t.cfg.PingInterval)
	defer tick.Stop()
	for {
		select {
		case <-t.stopPing:
			return
		case <-tick.C:
		}
		t.each(func(c *conn) {
			if wc := c.socket(); wc != nil {
				_ = wc.WriteControl(websocket.PingMessage, nil, time.Now().Add(t.cfg.WriteTimeout))
			}
		})
	}
}

// conn is one box's connection; it implements ws.Channel.
type conn struct {
	t        *transport
	identity string
	box      int64             // chargeboxId
	hash     [sha256.Size]byte // the password hash it authenticated with
	ep       *endpoint
	tls      *tls.ConnectionState
	// recorded holds the session id the connected hook recorded, before the first frame
	// is read; read it with session.
	recorded atomic.Pointer[string]
	ready    atomic.Bool // the OCPP layer knows the connection: requests can be sent
	// seen is when a frame, ping or pong last came (Unix nanoseconds); flushed is the
	// value last recorded.
	seen, flushed atomic.Int64

	wmu sync.Mutex // guards ws and serialises writes
	ws  *websocket.Conn

	done    chan struct{} // closed when the read loop ended and the hooks ran
	quit    chan struct{} // closed when the connection starts closing
	qonce   sync.Once
	closing atomic.Bool
	reason  atomic.Pointer[string]

	// slot holds the box's one CALL not yet answered: the read loop takes it before
	// handing a CALL on, a response written gives it back.
	slot chan struct{}
	// The box's token bucket, used by the read loop only.
	tokens float64
	last   time.Time
}

func (c *conn) ID() string                               { return c.identity }
func (c *conn) RemoteAddr() net.Addr                     { return c.socket().RemoteAddr() }
func (c *conn) TLSConnectionState() *tls.ConnectionState { return c.tls }

// session returns the id of the connection as recorded, "" until it is.
func (c *conn) session() string {
	if p := c.recorded.Load(); p != nil {
		return *p
	}
	return ""
}

// protocol is the subprotocol the box speaks.
func (c *conn) protocol() string { return c.ep.proto }

func (c *conn) socket() *websocket.Conn {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws
}

// why returns the reason the connection ended (chargenet.ReasonClosed unless a closer
// set one).
func (c *conn) why() string {
	if r := c.reason.Load(); r != nil {
		return *r
	}
	return chargenet.ReasonClosed
}

// close closes the connection with a close frame (code, text), recording reason
// unless another reason was recorded first. The read loop then ends.
func (c *conn) close(code int, text, reason string) {
	c.reason.CompareAndSwap(nil, &reason)
	c.qonce.Do(func() { close(c.quit) })
	if c.closing.Swap(true) {
		return
	}
	if wc := c.socket(); wc != nil {
		_ = wc.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
		c.closeSocket()
	}
}

func (c *conn) closeSocket() {
	if wc := c.socket(); wc != nil {
		_ = wc.Close()
	}
}

// readLoop reads the box's frames until the connection ends, then runs the disconnect
// hooks.
func (c *conn) readLoop() {
	t, wc := c.t, c.socket()
	defer func() {
		c.qonce.Do(func() { close(c.quit) })
		c.closing.Store(true)
		_ = wc.Close()
		t.release(c)
		if h := c.ep.onDisconnect; h != nil {
			h(c)
		}
		if c.session() != "" {
			t.hooks.disconnected(c)
		}
		close(c.done)
	}()
	wc.SetReadLimit(t.cfg.MaxMessage) // past it gorilla closes with 1009
	extend := func() {
		now := time.Now()
		c.seen.Store(now.UnixNano())
		_ = wc.SetReadDeadline(now.Add(t.cfg.IdleTimeout))
	}
	extend()
	wc.SetPongHandler(func(string) error { extend(); return nil })
	wc.SetPingHandler(func(data string) error {
		extend()
		err := wc.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(t.cfg.WriteTimeout))
		if err != nil && !errors.Is(err, websocket.ErrCloseSent) {
			return err
		}
		return nil
	})
	if c.closing.Load() {
		return // replaced or shut down during the upgrade
	}
	if err := t.hooks.connected(c); err != nil {
		t.log.Warn("ocpp: recording a connection failed", "identity", c.identity, "error", err.Error())
		c.close(websocket.CloseInternalServerErr, "service unavailable, retry later", reasonShutdown)
		return
	}
	if h := c.ep.onConnect; h != nil {
		h(c)
	}
	for {
		_, data, err := wc.ReadMessage() // binary frames are read as text: OCPP-J sends JSON either way
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.reason.CompareAndSwap(nil, ptr(chargenet.ReasonOffline))
			}
			return
		}
		extend()
		c.throttle()
		call := isCall(data)
		if call {
			select {
			case c.slot <- struct{}{}:
			case <-c.quit:
				return
			}
		}
		if answered := c.ep.handle(c, data); call && !answered {
			c.free()
		}
	}
}

func ptr[T any](v T) *T { return &v }

// throttle makes the read loop wait while the box is over its rate.
func (c *conn) throttle() {
	rate := c.t.cfg.Rate
	if rate <= 0 {
		return
	}
	now := time.Now()
	c.tokens = min(c.tokens+now.Sub(c.last).Seconds()*rate, float64(c.t.cfg.Burst))
	c.last = now
	if c.tokens < 1 {
		wait := time.Duration((1 - c.tokens) / rate * float64(time.Second))
		select {
		case <-time.After(wait):
		case <-c.quit:
		}
		c.tokens, c.last = 1, time.Now()
	}
	c.tokens--
}

// free gives back the box's CALL slot.
func (c *conn) free() {
	select {
	case <-c.slot:
	default:
	}
}

// write sends one text frame. A failed write closes the connection.
func (c *conn) write(data []byte) error {
	if c.closing.Load() {
		return fmt.Errorf("connection of %s is closed", c.identity)
	}
	c.wmu.Lock()
	if c.ws == nil {
		c.wmu.Unlock()
		return fmt.Errorf("connection of %s is not upgraded yet", c.identity)
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.t.cfg.WriteTimeout))
	err := c.ws.WriteMessage(websocket.TextMessage, data)
	c.wmu.Unlock()
	if err != nil {
		c.close(websocket.CloseAbnormalClosure, "", chargenet.ReasonClosed)
		return err
	}
	if isResponse(data) {
		c.free()
	}
	return nil
}

// isCall reports whether a frame is a CALL: a JSON array whose first element is 2.
func isCall(b []byte) bool { return messageType(b) == '2' }

// isResponse reports whether a frame is a CALLRESULT or CALLERROR.
func isResponse(b []byte) bool { t := messageType(b); return t == '3' || t == '4' }

// messageType returns the first character of a frame's first array element, or 0.
func messageType(b []byte) byte {
	open := false
	for _, ch := range b {
		switch {
		case ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n':
		case ch == '[' && !open:
			open = true
		case open:
			return ch
		default:
			return 0
		}
	}
	return 0
}

// endpoint is the transport as the OCPP-J layer of one subprotocol sees it: ocpp-go's
// ws.WsServer. Starting, stopping and the handshake are the transport's; the endpoint
// only routes frames and connection events.
type endpoint struct {
	t            *transport
	proto        string
	onMessage    func(ws.Channel, []byte) error
	onConnect    func(ws.Channel)
	onDisconnect func(ws.Channel)
	// check answers a frame the OCPP-J layer would drop or answer wrongly (see
	// frames.go); it reports whether it answered.
	check func(c *conn, data []byte) bool
}

var _ ws.WsServer = (*endpoint)(nil)

// handle hands one frame to the OCPP-J layer and reports whether a response was
// written for it synchronously (a CALLERROR for a bad frame).
func (e *endpoint) handle(c *conn, data []byte) bool {
	if e.check != nil && e.check(c, data) {
		return true
	}
	if e.onMessage != nil {
		_ = e.onMessage(c, data) // its errors are answered to the box and logged by the layer
	}
	return false
}

func (e *endpoint) Start(int, string)                                      {}
func (e *endpoint) Stop()                                                  {}
func (e *endpoint) Errors() <-chan error                                   { return nil }
func (e *endpoint) SetMessageHandler(h func(ws.Channel, []byte) error)     { e.onMessage = h }
func (e *endpoint) SetNewClientHandler(h func(ws.Channel))                 { e.onConnect = h }
func (e *endpoint) SetDisconnectedClientHandler(h func(ws.Channel))        { e.onDisconnect = h }
func (e *endpoint) SetTimeoutConfig(ws.ServerTimeoutConfig)                {}
func (e *endpoint) AddSupportedSubprotocol(string)                         {}
func (e *endpoint) SetBasicAuthHandler(func(string, string) bool)          {}
func (e *endpoint) SetCheckOriginHandler(func(*http.Request) bool)         {}
func (e *endpoint) SetCheckClientHandler(func(string, *http.Request) bool) {}
func (e *endpoint) Addr() *net.TCPAddr                                     { return nil }
func (e *endpoint) Connections(string) *ws.WebSocket                       { return nil }

// StopConnection closes the connection of identity.
func (e *endpoint) StopConnection(identity string, ce websocket.CloseError) error {
	c := e.t.lookup(identity)
	if c == nil {
		return fmt.Errorf("charge box %s is not connected", identity)
	}
	c.close(ce.Code, ce.Text, chargenet.ReasonClosed)
	return nil
}

// Write sends a frame to the connection of identity, if it speaks this subprotocol.
func (e *endpoint) Write(identity string, data []byte) error {
	c := e.t.lookup(identity)
	if c == nil || c.ep != e {
		return fmt.Errorf("charge box %s is not connected", identity)
	}
	return c.write(data)
}
