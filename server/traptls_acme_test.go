package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

const pebbleModule = "github.com/letsencrypt/pebble/v2@v2.8.0"

// pebble builds Let's Encrypt's test ACME server from the module proxy and starts it with
// certificates valid for validity, every challenge deemed valid (no DNS or reachability
// needed). It returns the directory URL, the file of the roots its own HTTPS chains to,
// and the roots of the certificates it issues.
func pebble(t *testing.T, validity time.Duration) (dir, acmeRoots string, issued *x509.CertPool) {
	t.Helper()
	bin := t.TempDir()
	build := exec.Command("go", "install", pebbleModule[:strings.Index(pebbleModule, "@")]+"/cmd/pebble"+pebbleModule[strings.Index(pebbleModule, "@"):])
	build.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=")
	build.Dir = bin
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building pebble (%s, from the module proxy): %v\n%s", pebbleModule, err, out)
	}
	modCache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(strings.TrimSpace(string(modCache)), "github.com/letsencrypt/pebble/v2@v2.8.0", "test", "certs")
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	addr, mgmt := free(), free()
	cfg, _ := json.Marshal(map[string]any{"pebble": map[string]any{
		"listenAddress": addr, "managementListenAddress": mgmt,
		"certificate": filepath.Join(src, "localhost", "cert.pem"), "privateKey": filepath.Join(src, "localhost", "key.pem"),
		"httpPort": 5002, "tlsPort": 5001, "ocspResponderURL": "",
		"profiles": map[string]any{"default": map[string]any{"description": "short-lived, for renewals", "validityPeriod": int(validity.Seconds())}},
	}})
	cfgFile := filepath.Join(bin, "pebble-config.json")
	os.WriteFile(cfgFile, cfg, 0o644)
	cmd := exec.Command(filepath.Join(bin, "pebble"), "-config", cfgFile)
	cmd.Env = append(os.Environ(), "PEBBLE_VA_ALWAYS_VALID=1", "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0")
	logFile, _ := os.Create(filepath.Join(bin, "pebble.log"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(bin, "pebble.log"))
			t.Logf("pebble's log:\n%s", b)
		}
	})
	acmeRoots = filepath.Join(src, "pebble.minica.pem")
	pem, _ := os.ReadFile(acmeRoots)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}, Timeout: 5 * time.Second}
	dir = "https://" + addr + "/dir"
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := c.Get(dir)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pebble did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, err := c.Get("https://" + mgmt + "/roots/0")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	root, _ := io.ReadAll(res.Body)
	issued = x509.NewCertPool()
	if !issued.AppendCertsFromPEM(root) {
		t.Fatalf("pebble's issuing root: %q", root)
	}
	return strings.Replace(dir, "127.0.0.1", "localhost", 1), acmeRoots, issued
}

// --trap-tls auto against a real ACME server (pebble): a certificate obtained on the first
// handshake for a verified site's host and served over HTTP/2, none for any other name, a
// second instance sharing the directory serving the stored certificate without asking the
// CA, and a renewal of the short-lived certificate before it expires.
func TestTrapTLSAuto(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		// A host of its own for each backend: certmagic serializes obtaining and renewing by
		// name across the process, and the SQLite instance's renewal goes on retrying against its
		// stopped pebble after that subtest (a renewal under way outlives Stop), which held the
		// PostgreSQL subtest's first certificate for over a minute under -race.
		host := "shop-" + b.Name + ".example"
		dir, acmeRoots, issued := pebble(t, 30*time.Second)
		store := t.TempDir()
		auto := func(c *server.Config) {
			c.TrapTLS.Auto = true
			c.TrapTLS.ACMECA, c.TrapTLS.ACMERoots, c.TrapTLS.Dir = dir, acmeRoots, store
			c.TrapTLS.Email = "ops@" + host
			c.TrapTLS.RenewCheck = time.Second
		}
		instance := func() (addr string) {
			env := ft.Start(t, b, auto)
			tn := env.Tenant("shop")
			env.DB.Client.Site.UpdateOneID(tn.Site.ID).SetHost(host).SetHostVerified(true).ExecX(ft.System())
			createTrap(t, env, tn.ReadWrite, map[string]any{"name": "Payroll wiki", "type": "page", "path": "/internal/payroll"})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr, _ = tlsTrapOn(t, env, ln)
			return addr
		}
		a := instance()
		client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{ForceAttemptHTTP2: true,
			TLSClientConfig: &tls.Config{RootCAs: issued, ServerName: host}}}
		req, _ := http.NewRequest(http.MethodGet, "https://"+a+"/internal/payroll", nil)
		req.Host = host
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("first visit (the certificate obtained now): %v", err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.ProtoMajor != 2 || len(tokenURL.FindAllString(string(page), -1)) == 0 {
			t.Fatalf("first visit: %d HTTP/%d", res.StatusCode, res.ProtoMajor)
		}
		first := res.TLS.PeerCertificates[0]
		if first.Subject.CommonName != host && (len(first.DNSNames) != 1 || first.DNSNames[0] != host) {
			t.Fatalf("certificate for %v %v", first.Subject, first.DNSNames)
		}

		// Any other name gets no certificate, and the CA is never asked for one.
		for _, name := range []string{"evil.example", "", "127.0.0.1"} {
			c, err := tls.Dial("tcp", a, &tls.Config{ServerName: name, InsecureSkipVerify: true})
			if err == nil {
				c.Close()
				t.Errorf("a handshake for %q succeeded", name)
			}
		}
		if b, _ := exec.Command("grep", "-rl", "evil.example", store).Output(); len(b) != 0 {
			t.Errorf("the storage holds something for evil.example: %s", b)
		}

		// A second instance sharing the directory serves the stored certificate.
		serial := func(addr string) *big.Int {
			t.Helper()
			c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: host, RootCAs: issued})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			return c.ConnectionState().PeerCertificates[0].SerialNumber
		}
		if got := serial(instance()); got.Cmp(first.SerialNumber) != 0 {
			t.Errorf("the second instance serves serial %v, want the stored %v", got, first.SerialNumber)
		}

		// The short-lived certificate is renewed before it expires.
		deadline := time.Now().Add(3 * time.Minute)
		for serial(a).Cmp(first.SerialNumber) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no renewal of a certificate that expires at %v", first.NotAfter)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}
