// Package outbound builds the HTTP client of every request chargenet makes to a host a
// partner named: webhook deliveries, and the OCPI handshake and pushes. One guard
// applies to all of them: without the development flag, a connection to an address
// that is not public is refused at dial time, whatever the URL's host name resolves
// to, and a redirect is an answer like any other.
package outbound

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/chargenet/chargenet"
)

// ErrNotPublic is the cause of a request refused because its host resolved to an
// address that is not public (see chargenet.PublicAddr).
var ErrNotPublic = errors.New("address is not public")

// Client returns an HTTP client whose requests take at most timeout each, from
// connecting to the end of the answer's headers, that keeps up to conns idle
// connections per host and never follows redirects. Unless allowInsecure (development
// only), it refuses to connect to addresses that are not public.
func Client(timeout time.Duration, conns int, allowInsecure bool) *http.Client {
	return ClientWith(Transport(timeout, conns, allowInsecure), timeout)
}

// ClientWith returns a client over tr (tests pass their own) with Client's timeout and
// redirect rules.
func ClientWith(tr http.RoundTripper, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect is an answer like any non-2xx
		},
	}
}

// Transport returns the transport of Client.
func Transport(timeout time.Duration, conns int, allowInsecure bool) *http.Transport {
	dialer := &net.Dialer{Timeout: timeout}
	if !allowInsecure {
		dialer.Control = refuseNonPublic
	}
	return &http.Transport{
		Proxy:                 nil, // a proxy would bypass the address check
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   conns,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
}

// refuseNonPublic is the dialer's Control: it refuses to connect to addresses that are
// not public, checked on the resolved address so that DNS cannot point a public-looking
// name into the service's own network.
func refuseNonPublic(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !chargenet.PublicIP(ip) {
		return fmt.Errorf("%s: %w", host, ErrNotPublic)
	}
	return nil
}

// Describe shortens an error of Client to what a partner can act on, without the
// request URL (which they know): a refused address, a timeout, or the cause.
func Describe(err error) error {
	if errors.Is(err, ErrNotPublic) {
		return errors.New("refused: the host resolves to an address that is not public")
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			err = inner
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("timeout: no answer in time")
	}
	return errors.New(strings.TrimSpace(err.Error()))
}
