package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// writeCert writes a self-signed certificate for the trap's names (its own root) and its
// key to dir, and returns the certificate.
func writeCert(t *testing.T, dir string, serial int64) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "shop.example"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"shop.example", "plain.example"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	// The key first: a reload between the two writes sees a pair that does not match and keeps the old one.
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

// tlsTrap serves env's trap listener as Serve does with TLS on: HTTPS on one address, plain
// HTTP on another. It returns both addresses.
func tlsTrap(t *testing.T, env *ft.Env) (tlsAddr, httpAddr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tlsAddr, httpAddr = tlsTrapOn(t, env, ln)
	return tlsAddr, httpAddr
}

// tlsTrapOn is tlsTrap with the HTTPS listener given.
func tlsTrapOn(t *testing.T, env *ft.Env, tl net.Listener) (tlsAddr, httpAddr string) {
	t.Helper()
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvs, serves, err := env.Server.TrapServers(tl, hl)
	if err != nil {
		t.Fatal(err)
	}
	if len(srvs) != 2 {
		t.Fatalf("%d trap servers, want HTTPS and plain HTTP", len(srvs))
	}
	for _, serve := range serves {
		go serve()
	}
	t.Cleanup(func() {
		for _, s := range srvs {
			s.Shutdown(context.Background())
		}
	})
	return tl.Addr().String(), hl.Addr().String()
}

// The trap listener over TLS: HTTP/2 and HTTP/1.1 by ALPN, decoys, hits and sessions
// recorded through the journal, the lure proxy in front of an upstream (which learns the
// visitor came over https), plain HTTP redirected or served per host, and a certificate
// replaced on disk served from the next handshake.
func TestTrapOverTLS(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "app saw proto="+r.Header.Get("X-Forwarded-Proto")+" host="+r.Host)
		}))
		t.Cleanup(app.Close)
		u, _ := url.Parse(app.URL)
		dir := t.TempDir()
		first := writeCert(t, dir, 1)
		env := ft.Start(t, b, ft.JournalAck, func(c *server.Config) {
			c.Proxy.Upstream = u
			c.TrapTLS.CertFile, c.TrapTLS.KeyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
			c.TrapTLS.HTTPServe = map[string]bool{"plain.example": true}
		})
		tn := env.Tenant("shop")
		createTrap(t, env, tn.ReadWrite, map[string]any{"name": "Payroll wiki", "type": "page", "path": "/internal/payroll"})
		tlsAddr, httpAddr := tlsTrap(t, env)
		_, tlsPort, _ := net.SplitHostPort(tlsAddr)

		roots := x509.NewCertPool()
		roots.AddCert(first)
		h2 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "shop.example"}, ForceAttemptHTTP2: true}}
		h1 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "shop.example"},
			TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}}
		get := func(c *http.Client, rawURL, ua string, wantProto int) (*http.Response, string) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, rawURL, nil)
			req.Host = "shop.example"
			req.Header.Set("User-Agent", ua)
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.ProtoMajor != wantProto || res.TLS == nil {
				t.Fatalf("GET %s: HTTP/%d (TLS %v), want HTTP/%d over TLS", rawURL, res.ProtoMajor, res.TLS != nil, wantProto)
			}
			return res, string(body)
		}
		base := "https://" + tlsAddr
		const ua2, ua1 = "tls-h2-agent/1.0", "tls-h1-agent/1.0"
		for _, c := range []struct {
			client *http.Client
			ua     string
			proto  int
		}{{h2, ua2, 2}, {h1, ua1, 1}} {
			res, page := get(c.client, base+"/internal/payroll", c.ua, c.proto)
			links := tokenURL.FindAllString(page, -1)
			if res.StatusCode != http.StatusOK || len(links) == 0 {
				t.Fatalf("HTTP/%d decoy: %d, %d hidden links", c.proto, res.StatusCode, len(links))
			}
			for _, l := range links {
				get(c.client, base+l, c.ua, c.proto)
			}
			// The lure proxy: a path of no trap goes to the application, which learns the scheme.
			if _, body := get(c.client, base+"/shop", c.ua, c.proto); body != "app saw proto=https host=shop.example" {
				t.Fatalf("HTTP/%d upstream answered %q", c.proto, body)
			}
			// Hits and the session, stored from the journal.
			q := `{ sessions(first: 5, where: {userAgent: "` + c.ua + `"}) { edges { node { hitCount trapsTriggered } } } }`
			pollGraphQL(t, env, tn.ReadOnly, q, func(d map[string]any) bool {
				n, _ := ft.Dig(d, "sessions", "edges", 0, "node").(map[string]any)
				return n != nil && num(n["hitCount"]) == 1+len(links)
			})
		}

		// Plain HTTP: redirected to the same URL over https, or served for a host that asks it.
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		plain := func(host string) (*http.Response, string) {
			req, _ := http.NewRequest(http.MethodGet, "http://"+httpAddr+"/internal/payroll?x=1", nil)
			req.Host = host
			res, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return res, string(b)
		}
		res, body := plain("Shop.Example:80")
		if want := "https://shop.example:" + tlsPort + "/internal/payroll?x=1"; res.StatusCode != http.StatusPermanentRedirect || res.Header.Get("Location") != want ||
			res.Header.Get("Server") != "nginx" || !strings.Contains(body, "308 Permanent Redirect") {
			t.Fatalf("plain HTTP to shop.example: %d %q %q %q, want 308 to %s", res.StatusCode, res.Header.Get("Location"), res.Header.Get("Server"), body, want)
		}
		if res, body := plain("plain.example"); res.StatusCode != http.StatusOK || len(tokenURL.FindAllString(body, -1)) == 0 {
			t.Fatalf("plain HTTP to plain.example (served): %d %.80q", res.StatusCode, body)
		}

		// curl, if there is one, speaks HTTP/2 to it too.
		if curl, err := exec.LookPath("curl"); err == nil {
			ca := filepath.Join(t.TempDir(), "ca.pem")
			os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: first.Raw}), 0o644)
			out, err := exec.Command(curl, "-sS", "--http2", "--cacert", ca, "--resolve", "shop.example:"+tlsPort+":127.0.0.1",
				"-A", "curl-tls-test", "-o", "/dev/null", "-w", "%{http_version} %{http_code}", "https://shop.example:"+tlsPort+"/internal/payroll").CombinedOutput()
			if err != nil || string(out) != "2 200" {
				t.Fatalf("curl: %q %v, want HTTP/2 200", out, err)
			}
		}

		// A certificate replaced on disk serves from the next handshake once reloaded (on a
		// change seen by the watcher, or SIGHUP: Files.Watch, tested in traptls).
		second := writeCert(t, dir, 2)
		if ok, err := env.Server.TrapTLSFiles().Reload(false); !ok || err != nil {
			t.Fatalf("reload after the files changed: %v %v", ok, err)
		}
		conn, err := tls.Dial("tcp", tlsAddr, &tls.Config{ServerName: "shop.example", InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if got := conn.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(second.SerialNumber) != 0 {
			t.Fatalf("served serial %v after the reload, want %v", got, second.SerialNumber)
		}
	})
}
