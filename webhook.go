package chargenet

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Webhook is a subscription that receives events of some types at a URL. It belongs to
// the API key (Owner, the key's name) that created it; other keys cannot see it.
type Webhook struct {
	ID             string
	Owner          string
	URL            string
	Description    string
	Subscriptions  []Subscription // one per event type, in type order
	Enabled        bool
	DisabledReason string // set when the service disabled the webhook (410 Gone)
	// Secret signs deliveries. During a rotation's overlap PreviousSecret signs them too,
	// until PreviousSecretUntil.
	Secret              string
	PreviousSecret      string
	PreviousSecretUntil time.Time
	CreatedAt           time.Time
	UpdatedAt           time.Time
	// Partner is the ID of the OCPI partner whose Locations RECEIVER this subscription
	// is ("" for an API key's webhook): its deliveries are OCPI pushes made by
	// the partner's rules (see PartnerService), not signed events.
	Partner string
}

// Subscription is one event type a webhook receives, in one payload version.
type Subscription struct {
	Type       string
	APIVersion string
}

// WebhookPatch holds the webhook fields a client wants to change; nil fields keep their
// value. Subscriptions, when set, replaces the whole list.
type WebhookPatch struct {
	URL           *string
	Subscriptions *[]Subscription
	Description   *string
	Enabled       *bool
}

// Apply returns w with the patch's fields set. Enabling a webhook clears its
// DisabledReason.
func (p WebhookPatch) Apply(w Webhook) Webhook {
	if p.URL != nil {
		w.URL = *p.URL
	}
	if p.Subscriptions != nil {
		w.Subscriptions = append([]Subscription(nil), *p.Subscriptions...)
	}
	if p.Description != nil {
		w.Description = *p.Description
	}
	if p.Enabled != nil {
		w.Enabled = *p.Enabled
		if w.Enabled {
			w.DisabledReason = ""
		}
	}
	return w
}

// SecretOverlap is how long deliveries stay signed with the previous secret after a
// rotation.
const SecretOverlap = 24 * time.Hour

// NewWebhookSecret returns a new signing secret: "whsec_" and the standard base64 of 32
// random bytes, as the Standard Webhooks specification describes.
func NewWebhookSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "whsec_" + base64.StdEncoding.EncodeToString(b[:])
}

// crockford is the alphabet of NewID: digits and upper-case letters without I, L, O, U.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// NewID returns prefix followed by 26 characters: 10 encode the time in milliseconds
// and 16 are random (80 bits), so identifiers created later sort after earlier ones
// (to the millisecond) and never collide in practice.
func NewID(prefix string, now time.Time) string {
	var b [26]byte
	ms := uint64(now.UnixMilli())
	for i := 9; i >= 0; i-- {
		b[i] = crockford[ms&31]
		ms >>= 5
	}
	var r [16]byte
	_, _ = rand.Read(r[:])
	x, y := binary.BigEndian.Uint64(r[:8]), binary.BigEndian.Uint64(r[8:])
	for i := 10; i < 26; i++ {
		b[i] = crockford[x&31]
		x = x>>5 | y<<59
		y >>= 5
	}
	return prefix + string(b[:])
}

// ResolveSubscriptions checks subs against the event type catalogue and returns them
// with every version resolved: an empty version or "latest" becomes the type's latest
// version. It returns an ErrInvalid *Error whose Param names the entry
// ("event_types[i].type" or "event_types[i].api_version") for an unknown type, a version
// the type does not list, a type given twice, or webhook.ping (EventWebhookPing: only
// the test operation sends it, to one webhook).
func ResolveSubscriptions(catalogue []EventType, subs []Subscription) ([]Subscription, error) {
	if len(subs) == 0 {
		return nil, Errorf(ErrInvalid, CodeInvalidBody, "event_types", "event_types must name at least one event type")
	}
	byType := make(map[string]*EventType, len(catalogue))
	for i := range catalogue {
		byType[catalogue[i].Type] = &catalogue[i]
	}
	seen := map[string]int{}
	out := make([]Subscription, len(subs))
	for i, s := range subs {
		if s.Type == EventWebhookPing {
			return nil, Errorf(ErrInvalid, CodeInvalidBody, fmt.Sprintf("event_types[%d].type", i),
				"event_types[%d].type: %s cannot be subscribed to; it is sent only by POST /emsp/v1/webhooks/{webhookId}/test", i, s.Type)
		}
		t, ok := byType[s.Type]
		if !ok {
			return nil, Errorf(ErrInvalid, CodeInvalidBody, fmt.Sprintf("event_types[%d].type", i),
				"event_types[%d].type: %q is not an event type; see GET /emsp/v1/webhooks/event_types", i, s.Type)
		}
		if j, dup := seen[s.Type]; dup {
			return nil, Errorf(ErrInvalid, CodeInvalidBody, fmt.Sprintf("event_types[%d].type", i),
				"event_types[%d].type: %q is already subscribed by event_types[%d]", i, s.Type, j)
		}
		seen[s.Type] = i
		v := s.APIVersion
		switch {
		case v == "" || v == "latest":
			v = t.Latest
		case !slices.Contains(t.APIVersions, v):
			return nil, Errorf(ErrInvalid, CodeInvalidBody, fmt.Sprintf("event_types[%d].api_version", i),
				"event_types[%d].api_version: %q is not a version of %s, which has %s", i, v, s.Type, strings.Join(t.APIVersions, ", "))
		}
		out[i] = Subscription{Type: s.Type, APIVersion: v}
	}
	return out, nil
}

// CheckWebhookURL checks that raw is an absolute https URL without credentials or
// fragment whose host is not "localhost" and not a non-public IP address (see
// PublicAddr). allowInsecure (the development flag) also accepts http and any host. It
// returns an ErrInvalid *Error with Param "url".
func CheckWebhookURL(raw string, allowInsecure bool) error {
	bad := func(format string, args ...any) error {
		return Errorf(ErrInvalid, CodeInvalidBody, "url", "url: "+format, args...)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("%q is not a URL", raw)
	}
	switch {
	case !u.IsAbs() || u.Host == "":
		return bad("%q is not an absolute URL", raw)
	case u.Scheme != "https" && (!allowInsecure || u.Scheme != "http"):
		return bad("scheme %q is not allowed; use https", u.Scheme)
	case u.User != nil:
		return bad("credentials in the URL are not allowed")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return bad("a fragment is not allowed")
	case u.Port() != "" && !validPort(u.Port()):
		return bad("port %q is not a valid port", u.Port())
	}
	if allowInsecure {
		return nil
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return bad("host %q is not public", u.Hostname())
	}
	if ip, err := netip.ParseAddr(host); err == nil && !PublicAddr(ip) {
		return bad("address %s is not public", ip)
	}
	return nil
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p) // url.Parse leaves only digits in a port
	return err == nil && n > 0 && n <= 65535
}

// nonPublic are the ranges PublicAddr refuses beyond what netip classifies: shared
// address space (carrier-grade NAT), benchmarking, documentation and reserved ranges,
// and NAT64 / 6to4 / Teredo prefixes that can embed any IPv4 address.
var nonPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "64:ff9b::/96", "64:ff9b:1::/48", "2001::/32",
		"2001:db8::/32", "2002::/16", "100::/64"} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// PublicAddr reports whether ip is a public unicast address: not loopback, private,
// link-local, multicast, unspecified, or one of the special-purpose ranges.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// PublicIP is PublicAddr for a net.IP.
func PublicIP(ip net.IP) bool {
	a, ok := netip.AddrFromSlice(ip)
	return ok && PublicAddr(a)
}
