package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flytrap/flytrap/ent"
)

// Network is the outbound policy of one organization's deliveries: the operator's
// instance-wide default (Config) joined with what the operator allowed that organization.
type Network struct {
	AllowPrivate bool
	Allow        []netip.Prefix
	// ShowPrivateResponses keeps receivers' answers from addresses that only an allow-list
	// let through; otherwise their bodies are dropped, so an allowed internal host cannot be
	// read back by whoever can create endpoints.
	ShowPrivateResponses bool
}

// OrgNetwork reads an organization's operator-set network fields. Stored CIDRs that do not
// parse are skipped (the schema validates them on write).
func OrgNetwork(o *ent.Organization) Network {
	n := Network{AllowPrivate: o.WebhookAllowPrivate, ShowPrivateResponses: o.WebhookShowPrivateResponses}
	for _, c := range o.WebhookAllowCidrs {
		if p, err := netip.ParsePrefix(c); err == nil {
			n.Allow = append(n.Allow, p.Masked())
		}
	}
	return n
}

// guard is what an organization's deliveries may connect to: the instance-wide default
// and the organization's own allow-list together.
func (d *Dispatcher) guard(n Network) Guard {
	return Guard{
		AllowPrivate: d.cfg.AllowPrivate || n.AllowPrivate,
		Allow:        append(slices.Clip(d.cfg.AllowCIDRs), n.Allow...),
	}
}

// key names a guard canonically, so organizations with one policy share one client.
func (g Guard) key() string {
	if g.AllowPrivate {
		return "*"
	}
	ps := make([]string, len(g.Allow))
	for i, p := range g.Allow {
		ps[i] = p.Masked().String()
	}
	slices.Sort(ps)
	return strings.Join(slices.Compact(ps), ",")
}

// maxClients bounds the clients kept, one per distinct policy.
const maxClients = 256

// clients holds one HTTP client per guard. Connections are pooled per client, never
// across policies: a connection an allowed organization opened to an internal host
// must not be reused for an organization that may not reach it.
type clients struct {
	timeout time.Duration
	roots   *x509.CertPool // nil: the system's
	mu      sync.Mutex
	byKey   map[string]*http.Client
}

func (c *clients) get(g Guard) *http.Client {
	k := g.key()
	c.mu.Lock()
	defer c.mu.Unlock()
	if hc, ok := c.byKey[k]; ok {
		return hc
	}
	if len(c.byKey) >= maxClients {
		for _, hc := range c.byKey {
			hc.CloseIdleConnections()
		}
		clear(c.byKey)
	}
	hc := g.Client(c.timeout)
	if c.roots != nil {
		hc.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: c.roots, MinVersion: tls.VersionTLS12}
	}
	c.byKey[k] = hc
	return hc
}

// publicOnly is the guard with nothing allowed: what needs no allow-list.
var publicOnly Guard

// needsAllowList reports whether a connection's remote address is one only an allow-list lets through.
func needsAllowList(addr net.Addr) bool {
	if addr == nil {
		return true
	}
	ap, err := netip.ParseAddrPort(addr.String())
	return err != nil || !publicOnly.Permits(ap.Addr())
}

// Safe messages for failed attempts: tenants see these, the cause goes to the log.
// They never carry addresses, resolver names or the library's wording.
const (
	MsgNotAllowed   = "address not allowed: it is private, loopback or link-local; an operator allows it with flytrap admin orgs set-webhook-network --org ORG_ID --allow-cidrs CIDR (or --allow-private=true)"
	MsgNotFound     = "host not found"
	MsgLookup       = "host lookup failed"
	MsgTimeout      = "timeout"
	MsgRefused      = "connection refused"
	MsgReset        = "connection reset"
	MsgUnreachable  = "host unreachable"
	MsgTLS          = "TLS handshake failed"
	MsgCertificate  = "TLS certificate not accepted"
	MsgConnection   = "connection failed"
	MsgBuildRequest = "could not build the request"
)

// SafeError turns a failed attempt's error into a stable message safe to show the tenant.
func SafeError(err error) string {
	var (
		dnsErr  *net.DNSError
		netErr  net.Error
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		invalid x509.CertificateInvalidError
		host    x509.HostnameError
		record  tls.RecordHeaderError
		alert   tls.AlertError
	)
	switch {
	case errors.Is(err, ErrForbiddenAddress):
		return MsgNotAllowed
	case errors.As(err, &dnsErr):
		switch {
		case dnsErr.IsNotFound:
			return MsgNotFound
		case dnsErr.IsTimeout:
			return MsgTimeout
		}
		return MsgLookup
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return MsgTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return MsgRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return MsgReset
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return MsgUnreachable
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &host):
		return MsgCertificate
	case errors.As(err, &record), errors.As(err, &alert):
		return MsgTLS
	}
	return MsgConnection
}

// answered is the message of an attempt the receiver answered with a non-2xx status. The
// reason phrase is the standard one, never the receiver's own text.
func answered(code int) string {
	if t := http.StatusText(code); t != "" {
		return "the receiver answered " + strconv.Itoa(code) + " " + t
	}
	return "the receiver answered " + strconv.Itoa(code)
}

// PrivateHint says, for a new endpoint's URL, whether the organization's deliveries will be
// refused because its host is (or resolves to) an address that only an allow-list lets
// through, and what an operator runs to allow it; empty when nothing is in the way (or the
// name does not resolve yet: the attempts will say so). g is the instance-wide default with
// the organization's own allowances.
func PrivateHint(ctx context.Context, rawURL, org string, g Guard) string {
	host := rawURL
	if _, rest, ok := strings.Cut(rawURL, "://"); ok {
		host = rest
	}
	host, _, _ = strings.Cut(host, "/")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		addrs, _ = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}
	for _, a := range addrs {
		if !g.Permits(a) {
			return fmt.Sprintf("%s is a private, loopback or link-local address, so deliveries will fail with %q until an operator allows it: "+
				"flytrap admin orgs set-webhook-network --org %s --allow-cidrs %s (or --allow-private=true)",
				a.Unmap(), "address not allowed", org, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return ""
}
