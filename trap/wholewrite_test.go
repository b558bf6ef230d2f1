package trap

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/traptls"
)

// countingConn counts the writes that reach the socket, and fails them once failWrites is set.
type countingConn struct {
	net.Conn
	mu         sync.Mutex
	writes     []int
	failWrites bool
	closed     bool
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failWrites {
		return 0, errors.New("injected write failure")
	}
	c.writes = append(c.writes, len(b))
	return c.Conn.Write(b)
}

func (c *countingConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return c.Conn.Close()
}

func (c *countingConn) take() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.writes
	c.writes = nil
	return w
}

type countingListener struct {
	net.Listener
	conns chan *countingConn
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c}
	l.conns <- cc
	return cc, nil
}

// TestResponsesLeaveInOneWrite: a decoy larger than net/http's 4 KB connection buffer
// reaches the socket in one write, whole and byte for byte, for GET and HEAD, and the
// next response on the same keep-alive connection is unharmed.
func TestResponsesLeaveInOneWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counted := countingListener{ln, make(chan *countingConn, 4)}
	bodies := map[string][]byte{
		"/big":   bytes.Repeat([]byte("<p>decoy</p>\n"), 1200), // 15.6 KB
		"/huge":  bytes.Repeat([]byte("x"), 100<<10),           // beyond what the pool keeps
		"/small": []byte("<html>404</html>\n"),
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeRendered(w, r, decoy.Rendered{ContentType: "text/html", Body: bodies[r.URL.Path]})
		}),
		ConnContext: ConnContext,
	}
	go func() { _ = srv.Serve(WrapListener(counted)) }()
	t.Cleanup(func() { _ = srv.Close() })

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	server := <-counted.conns
	br := bufio.NewReader(c)
	for _, tc := range []struct {
		method, path string
		writes       int
	}{
		{"GET", "/big", 1}, {"GET", "/huge", 1}, {"HEAD", "/big", 1}, {"GET", "/small", 1}, {"GET", "/big", 1}, {"GET", "/huge", 1},
	} {
		name := tc.method + " " + tc.path
		fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: example.com\r\n\r\n", tc.method, tc.path)
		res, err := http.ReadResponse(br, &http.Request{Method: tc.method})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatalf("%s: reading the body: %v", name, err)
		}
		want := bodies[tc.path]
		if tc.method == "HEAD" {
			want = nil
		}
		if !bytes.Equal(got, want) || res.ContentLength != int64(len(bodies[tc.path])) {
			t.Fatalf("%s: body of %d bytes (Content-Length %d), want %d", name, len(got), res.ContentLength, len(bodies[tc.path]))
		}
		if res.Header.Get("Server") != decoy.ServerHeader {
			t.Fatalf("%s: Server %q", name, res.Header.Get("Server"))
		}
		if w := server.take(); len(w) != tc.writes {
			t.Fatalf("%s: the response reached the socket in %d writes %v, want %d", name, len(w), w, tc.writes)
		}
	}
}

// TestHeldWriteFailureClosesTheConnection: a gathered response whose write fails closes
// the connection, so no later response follows a cut one on it.
func TestHeldWriteFailureClosesTheConnection(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	cc := &countingConn{Conn: a}
	nc := &nginxConn{Conn: cc}
	nc.Hold()
	if n, err := nc.Write([]byte(strings.Repeat("y", 5000))); n != 5000 || err != nil {
		t.Fatalf("a held write: %d, %v", n, err)
	}
	cc.failWrites = true
	if err := nc.Release(); err == nil {
		t.Fatal("release reported no error for a failed write")
	}
	if !cc.closed {
		t.Fatal("the connection stayed open after its gathered response failed")
	}
	if nc.held.Holding() {
		t.Fatal("the connection still holds its writes after release")
	}
}

// TestWholeWriteToARecorder: a handler that answers into a recorder (the proxy's robots.txt
// takes the engine's answer that way) on a request of a gathering connection writes
// nothing to the connection and leaves it open.
func TestWholeWriteToARecorder(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	cc := &countingConn{Conn: a}
	nc := &nginxConn{Conn: cc}
	r := httptest.NewRequest("GET", "/robots.txt", nil)
	r = r.WithContext(ConnContext(r.Context(), nc))
	rec := httptest.NewRecorder()
	body := bytes.Repeat([]byte("Disallow: /x\n"), 400)
	writeRendered(rec, r, decoy.Rendered{ContentType: "text/plain", Body: body})
	if !bytes.Equal(rec.Body.Bytes(), body) {
		t.Fatalf("the recorder got %d bytes, want %d", rec.Body.Len(), len(body))
	}
	if w := cc.take(); len(w) != 0 || cc.closed || nc.held.Holding() {
		t.Fatalf("the connection: writes %v, closed %v, still holding %v", w, cc.closed, nc.held.Holding())
	}
}

// TestTLSResponsesLeaveInOneRecord: over HTTPS the response is gathered above TLS (the
// traptls connection holds net/http's writes), so a decoy larger than net/http's 4 KB
// buffer leaves as one TLS record in one write to the socket, from the connection's first
// response (no small records while the connection is young), and the next one too.
func TestTLSResponsesLeaveInOneRecord(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counted := countingListener{ln, make(chan *countingConn, 4)}
	cert := selfSigned(t)
	body := bytes.Repeat([]byte("<p>decoy</p>\n"), 600) // 7.8 KB, a decoy page's size
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeRendered(w, r, decoy.Rendered{ContentType: "text/html", Body: body})
		}),
		ConnContext: ConnContext,
	}
	cfg := traptls.NewConfig(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }, false)
	cfg.NextProtos = []string{"http/1.1"}
	go func() { _ = srv.Serve(traptls.Listen(WrapListener(counted), cfg)) }()
	t.Cleanup(func() { _ = srv.Close() })

	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	server := <-counted.conns
	br := bufio.NewReader(c)
	server.take() // the handshake's
	for i := range 2 {
		fmt.Fprintf(c, "GET /page HTTP/1.1\r\nHost: x\r\n\r\n")
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !bytes.Equal(got, body) {
			t.Fatalf("response %d: body of %d bytes, want %d", i, len(got), len(body))
		}
		// TLS 1.3 may send session tickets after the handshake: count the response's writes
		// as those at least as large as its body.
		w := server.take()
		big := 0
		for _, n := range w {
			if n >= len(body) {
				big++
			}
		}
		if big != 1 || len(w) > 2 {
			t.Fatalf("response %d reached the socket in writes %v, want one record", i, w)
		}
	}
}

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, DNSNames: []string{"x"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
