package traptls

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/http2"

	"github.com/flytrap/flytrap/fingerprint"
)

// holderListener gives each connection fingerprints, as the trap listener's do.
type holderListener struct{ net.Listener }

type holderConn struct {
	net.Conn
	fp fingerprint.Conn
}

func (c *holderConn) Fingerprints() *fingerprint.Conn { return &c.fp }

func (l holderListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &holderConn{Conn: c}, nil
}

// Over Listen and ServeH2, HTTP/2 and HTTP/1.1 are served with Request.TLS set, and each
// request sees its connection's JA4, HTTP/2 fingerprint and header order.
func TestListenFingerprints(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, 1)
	files, err := LoadFiles(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return fingerprint.NewContext(ctx, c.(fingerprint.Holder).Fingerprints())
		},
	}
	h2 := &http2.Server{}
	if err := http2.ConfigureServer(srv, h2); err != nil {
		t.Fatal(err)
	}
	srv.Handler = ServeH2(srv, h2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fp := fingerprint.FromContext(r.Context())
		fmt.Fprintf(w, "%d %v\n%s\n%s\n%s", r.ProtoMajor, r.TLS != nil && r.TLS.HandshakeComplete, fp.JA4, fp.H2, fp.Order)
	}))
	go srv.Serve(Listen(holderListener{ln}, NewConfig(files.GetCertificate, false)))
	t.Cleanup(func() { srv.Shutdown(context.Background()) })

	get := func(tr *http.Transport) string {
		t.Helper()
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest("GET", "https://"+ln.Addr().String()+"/x", nil)
		req.Header.Set("User-Agent", "probe/1")
		res, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	tlsConf := &tls.Config{InsecureSkipVerify: true, ServerName: "shop.example"}
	h2tr := http.DefaultTransport.(*http.Transport).Clone()
	h2tr.TLSClientConfig = tlsConf
	h1tr := http.DefaultTransport.(*http.Transport).Clone()
	h1tr.TLSClientConfig, h1tr.ForceAttemptHTTP2 = tlsConf.Clone(), false
	h1tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}

	var got2 string
	for range 2 { // a second request on the connection sees the same
		got2 = get(h2tr)
	}
	l := strings.Split(got2, "\n")
	if len(l) != 4 || l[0] != "2 true" {
		t.Fatalf("HTTP/2: %q", got2)
	}
	ja4, h2fp, order := l[1], l[2], l[3]
	if !fingerprint.ValidJA4(ja4) || fingerprint.Family(ja4, h2fp, order) != fingerprint.Go || order[:2] != "h2" {
		t.Errorf("HTTP/2 request saw JA4 %q, H2 %q, order %q: want Go's", ja4, h2fp, order)
	}
	l = strings.Split(get(h1tr), "\n")
	if len(l) != 4 || l[0] != "1 true" {
		t.Fatalf("HTTP/1.1: %q", l)
	}
	ja4, h2fp, order = l[1], l[2], l[3]
	if !fingerprint.ValidJA4(ja4) || h2fp != "" || order != fingerprint.HeaderOrder("h1", []string{"Host", "User-Agent", "Accept-Encoding"}) {
		t.Errorf("HTTP/1.1 request saw JA4 %q, H2 %q, order %q", ja4, h2fp, order)
	}
}
