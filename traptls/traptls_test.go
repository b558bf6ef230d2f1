package traptls

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func writePair(t *testing.T, dir string, serial int64) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), DNSNames: []string{"shop.example"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func serial(t *testing.T, f *Files) int64 {
	t.Helper()
	c, _ := f.GetCertificate(&tls.ClientHelloInfo{ServerName: "shop.example"})
	x, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return x.SerialNumber.Int64()
}

// A pair that does not load stops the start, a broken one later keeps the last good one
// serving, an unchanged one is not read again, and SIGHUP reloads.
func TestFilesReload(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := LoadFiles(cert, key, log); err == nil {
		t.Fatal("missing files loaded")
	}
	writePair(t, dir, 1)
	f, err := LoadFiles(cert, key, log)
	if err != nil || serial(t, f) != 1 {
		t.Fatalf("load: %v", err)
	}
	if ok, err := f.Reload(false); ok || err != nil {
		t.Fatalf("unchanged files reloaded: %v %v", ok, err)
	}
	os.WriteFile(cert, []byte("not a certificate"), 0o644)
	if ok, err := f.Reload(false); ok || err == nil || serial(t, f) != 1 {
		t.Fatalf("a broken certificate: reloaded %v, %v, serial %d", ok, err, serial(t, f))
	}

	// SIGHUP. The test holds SIGHUP too, so that a signal sent before Watch listens cannot end the process.
	held := make(chan os.Signal, 8)
	signal.Notify(held, syscall.SIGHUP)
	defer signal.Stop(held)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.Watch(ctx, time.Hour) // the hourly check does not come during the test: only SIGHUP reloads
	writePair(t, dir, 2)
	deadline := time.Now().Add(20 * time.Second)
	for serial(t, f) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP did not reload the certificate")
		}
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
		time.Sleep(20 * time.Millisecond)
	}
}

// Plain HTTP is redirected to the same URL over https on the TLS port (none for 443), or
// served for the hosts that ask it.
func TestPlain(t *testing.T) {
	c := &Config{HTTPServe: map[string]bool{"served.example": true}}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })
	for _, tc := range []struct{ port, method, host, target, want string }{
		{"443", "GET", "shop.example", "/a/b?c=d", "https://shop.example/a/b?c=d"},
		{"8443", "POST", "Shop.Example.:80", "/x", "https://shop.example:8443/x"},
		{"443", "GET", "[2001:db8::1]:80", "/", "https://[2001:db8::1]/"},
		{"8443", "HEAD", "[2001:db8::1]", "/", "https://[2001:db8::1]:8443/"},
		{"", "GET", "[2001:db8::1]", "/", "https://[2001:db8::1]/"},
		{"443", "GET", "served.example", "/x", ""},
		{"443", "GET", "", "/x", ""},
	} {
		req := httptest.NewRequest(tc.method, "http://placeholder"+tc.target, nil)
		req.Host = tc.host
		rec := httptest.NewRecorder()
		Plain(c, tc.port, next).ServeHTTP(rec, req)
		if tc.want == "" {
			if rec.Body.String() != "served" {
				t.Errorf("%s %s: %d %q, want it served", tc.method, tc.host, rec.Code, rec.Body)
			}
			continue
		}
		if rec.Code != http.StatusPermanentRedirect || rec.Header().Get("Location") != tc.want || (tc.method == "HEAD") != (rec.Body.Len() == 0) {
			t.Errorf("%s %s%s: %d %q (%d bytes), want 308 to %s", tc.method, tc.host, tc.target, rec.Code, rec.Header().Get("Location"), rec.Body.Len(), tc.want)
		}
	}
}
