package traptls

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flytrap/flytrap/settings"
)

// Config is the trap listener's TLS: off, a certificate of one's own (CertFile, KeyFile),
// and what plain HTTP gets while TLS is on (HTTPAddr, HTTPServe).
type Config struct {
	// Auto is --trap-tls auto: certificates by ACME for the verified sites' hosts.
	Auto bool
	// Email, ACMECA, ACMERoots and Dir are --trap-tls auto's account email, ACME directory,
	// the roots that directory's HTTPS chains to (empty: the system's), and the storage.
	Email, ACMECA, ACMERoots, Dir string
	// RenewCheck is how often --trap-tls auto's certificates are checked for renewal.
	RenewCheck time.Duration

	CertFile, KeyFile string
	// HTTPAddr is the plain-HTTP listener beside the TLS one; empty: none.
	HTTPAddr string
	// HTTPServe are the hosts answered over plain HTTP as over HTTPS; every other host is
	// redirected to https (308). "*": every host is served.
	HTTPServe map[string]bool
	// FilesCheck is how often CertFile and KeyFile are checked for a change.
	FilesCheck time.Duration
}

// DefaultFilesCheck is how often a certificate of one's own is checked for a change.
const DefaultFilesCheck = 30 * time.Second

// Enabled reports whether the trap listener speaks TLS.
func (c *Config) Enabled() bool { return c.Auto || c.CertFile != "" }

// Serves reports whether plain HTTP to host is answered as over HTTPS (not redirected).
func (c *Config) Serves(host string) bool { return c.HTTPServe["*"] || c.HTTPServe[host] }

// Declare declares the trap listener's TLS settings over c.
func (c *Config) Declare(s *settings.Set) {
	c.FilesCheck, c.RenewCheck = DefaultFilesCheck, autoRenewCheck
	s.Func("trap-tls", "", "auto: the trap listener speaks HTTPS with certificates obtained and renewed by ACME for the verified sites' hosts", func(v string) error {
		switch v {
		case "auto":
			c.Auto = true
		case "", "off":
			c.Auto = false
		default:
			return fmt.Errorf("trap-tls: %q is not auto or off (a certificate of your own: --trap-tls-cert and --trap-tls-key)", v)
		}
		return nil
	}).Doc("`auto`: the trap listener speaks HTTPS with certificates obtained and renewed by ACME (Let's Encrypt by default) for the hosts of verified sites, on their first visit; never for another name. See [deployment](docs/deployment.md#https-on-the-trap-listener)").
		DefaultDoc("off")
	s.String(&c.Email, "trap-tls-email", "", "--trap-tls auto: the ACME account's email, for the CA's expiry notices").
		Doc("`--trap-tls auto`: the ACME account's email, for the CA's notices").DefaultDoc("none")
	s.String(&c.ACMECA, "trap-tls-acme-ca", LetsEncrypt, "--trap-tls auto: the ACME directory URL").
		Doc("`--trap-tls auto`: the ACME directory URL (another CA, its staging, or a private one such as step-ca)")
	s.String(&c.ACMERoots, "trap-tls-acme-roots", "", "--trap-tls auto: PEM roots the ACME directory's HTTPS chains to, for a private CA").
		Doc("`--trap-tls auto`: PEM roots the ACME directory's own HTTPS chains to, for a private CA").DefaultDoc("the system's")
	s.String(&c.Dir, "trap-tls-dir", "", "--trap-tls auto: directory of the certificates, keys and ACME account; instances that share it share them (locked)").
		Doc("`--trap-tls auto`: directory of the certificates, keys and ACME account; instances that share it (a shared volume) share them, one obtaining or renewing a name at a time (lock files)").
		DefaultDoc("`flytrap/certs` in the user's configuration directory")
	s.String(&c.CertFile, "trap-tls-cert", "", "PEM certificate chain of the trap listener: it speaks HTTPS (HTTP/2 and HTTP/1.1); reloaded when the file changes or on SIGHUP").
		Doc("PEM certificate chain of the trap listener, which then speaks HTTPS (HTTP/2 and HTTP/1.1). Reloaded when the file changes (checked every 30s) or on SIGHUP; a pair that does not load keeps the last good one. See [deployment](docs/deployment.md#https-on-the-trap-listener)").
		DefaultDoc("none: plain HTTP")
	s.String(&c.KeyFile, "trap-tls-key", "", "PEM private key of --trap-tls-cert").
		Doc("PEM private key of `--trap-tls-cert`").DefaultDoc("none")
	s.String(&c.HTTPAddr, "trap-http-addr", "", "with TLS on, address of the trap listener's plain HTTP (e.g. :80): it redirects to https, or serves the hosts of --trap-http-serve").
		Doc("With TLS on, address of the trap listener's plain HTTP (e.g. `:80`): each host is redirected to `https` (308), or answered as over HTTPS if `--trap-http-serve` names it").
		DefaultDoc("none")
	s.Func("trap-http-serve", "", "comma-separated site hosts answered over plain HTTP as over HTTPS, not redirected; * for every host", func(v string) error {
		c.HTTPServe = map[string]bool{}
		for h := range strings.SplitSeq(v, ",") {
			h = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
			if h == "" {
				continue
			}
			if h != "*" && (len(h) > 253 || strings.ContainsAny(h, "/:@ \t")) {
				return fmt.Errorf("trap-http-serve: %q is not a host name", h)
			}
			c.HTTPServe[h] = true
		}
		return nil
	}).Doc("Comma-separated site hosts answered over plain HTTP as over HTTPS (recorded as hits), not redirected; `*` for every host").
		DefaultDoc("none: every host is redirected")
	s.Rule(func() error {
		if (c.CertFile == "") != (c.KeyFile == "") {
			return errors.New("trap-tls-cert and trap-tls-key: set both or neither")
		}
		if c.Auto && c.CertFile != "" {
			return errors.New("trap-tls: auto or a certificate of your own (--trap-tls-cert), not both")
		}
		if c.HTTPAddr != "" && !c.Enabled() {
			return errors.New("trap-http-addr: only with TLS on (--trap-tls or --trap-tls-cert); without it --trap-addr is plain HTTP")
		}
		return nil
	})
}
