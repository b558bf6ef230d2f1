package traptls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// LetsEncrypt is the default ACME directory of --trap-tls auto.
const LetsEncrypt = certmagic.LetsEncryptProductionCA

// Auto is --trap-tls auto: certificates obtained and renewed by ACME (certmagic) for the
// hosts allowed says are verified sites, on the first handshake that names one, kept in a
// directory that several instances may share (certmagic's file storage, which locks).
type Auto struct {
	magic  *certmagic.Config
	issuer *certmagic.ACMEIssuer
	cache  *certmagic.Cache
	stop   sync.Once
}

// AutoPorts are where the trap listener takes ACME challenges: its TLS port (TLS-ALPN-01)
// and its plain-HTTP port (HTTP-01; 0: none, the challenge is off).
type AutoPorts struct{ TLS, HTTP int }

// NewAuto readies --trap-tls auto. allowed is the on-demand decision: a certificate is
// asked for only for a name it accepts (a verified site's host), never for any SNI.
func NewAuto(c *Config, ports AutoPorts, allowed func(ctx context.Context, host string) bool) (*Auto, error) {
	var roots *x509.CertPool
	if c.ACMERoots != "" {
		pem, err := os.ReadFile(c.ACMERoots)
		if err != nil {
			return nil, fmt.Errorf("trap-tls-acme-roots: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("trap-tls-acme-roots: %s holds no PEM certificate", c.ACMERoots)
		}
	}
	dir := c.Dir
	if dir == "" {
		base, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("trap-tls-dir: no default (%v): set it", err)
		}
		dir = filepath.Join(base, "flytrap", "certs")
	}
	// certmagic logs with zap: its warnings and errors (a failed issuance or renewal) go to stderr as JSON.
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.RFC3339TimeEncoder
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(os.Stderr), zap.WarnLevel)).Named("trap-tls")
	a := &Auto{}
	a.cache = certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert:   func(certmagic.Certificate) (*certmagic.Config, error) { return a.magic, nil },
		RenewCheckInterval: c.RenewCheck,
		Logger:             log,
	})
	a.magic = certmagic.New(a.cache, certmagic.Config{
		Storage: &certmagic.FileStorage{Path: dir},
		OnDemand: &certmagic.OnDemandConfig{DecisionFunc: func(ctx context.Context, name string) error {
			if !allowed(ctx, name) {
				return errors.New("not the verified host of a site")
			}
			return nil
		}},
		Logger: log,
	})
	a.issuer = certmagic.NewACMEIssuer(a.magic, certmagic.ACMEIssuer{
		CA: c.ACMECA, Email: c.Email, Agreed: true, TrustedRoots: roots,
		AltTLSALPNPort: ports.TLS, AltHTTPPort: ports.HTTP, DisableHTTPChallenge: ports.HTTP == 0,
		Logger: log,
	})
	a.magic.Issuers = []certmagic.Issuer{a.issuer}
	return a, nil
}

// GetCertificate is tls.Config.GetCertificate: a cached certificate, one loaded from the
// storage (another instance's), or one obtained now for a verified host.
func (a *Auto) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if hello.ServerName == "" || strings.HasSuffix(hello.ServerName, ".") {
		return nil, errors.New("no server name")
	}
	return a.magic.GetCertificate(hello)
}

// HTTPChallenge answers ACME HTTP-01 challenges on the plain-HTTP listener, next otherwise.
func (a *Auto) HTTPChallenge(next http.Handler) http.Handler {
	return a.issuer.HTTPChallengeHandler(next)
}

// Stop ends the renewals.
func (a *Auto) Stop() { a.stop.Do(a.cache.Stop) }

// autoRenewCheck is how often certificates are checked for renewal by default.
const autoRenewCheck = 10 * time.Minute
