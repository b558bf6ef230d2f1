package proxy_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// waitFor polls cond until it holds or 15 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after 15 s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Visitors that send a body slowly or stop reading an answer are cut once a read or a
// write has made no progress for --proxy-read-timeout / --proxy-write-timeout; their
// connections close, and the listener's count of open connections goes back to zero.
func TestProxyCutsSlowVisitors(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%d bytes", n)
	})
	mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
		for range bigSize / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	app := httptest.NewServer(mux)
	t.Cleanup(app.Close)
	u, _ := url.Parse(app.URL)
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) {
		c.Proxy.Upstream = u
		c.Proxy.ReadTimeout = 300 * time.Millisecond
		c.Proxy.WriteTimeout = 300 * time.Millisecond
	})
	env.Tenant("shop")
	addr := env.Trap.Listener.Addr().String()
	conns := env.Server.TrapConns()

	// A body sent at a normal pace still goes through.
	once := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := once.Post(env.Trap.URL+"/upload", "text/plain", strings.NewReader(strings.Repeat("x", 100_000)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "100000 bytes" {
		t.Fatalf("upload: %d %q", res.StatusCode, body)
	}

	once.CloseIdleConnections()
	const slow, deaf = 30, 30
	fds := openFDs(t)
	var clients []net.Conn
	t.Cleanup(func() {
		for _, c := range clients {
			c.Close()
		}
	})
	for range slow { // headers and 10 of 1,000 bytes, then nothing
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: shop.example\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n0123456789")
	}
	for range deaf { // a 64 MiB download, never read
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.(*net.TCPConn).SetReadBuffer(4096)
		clients = append(clients, c)
		fmt.Fprintf(c, "GET /download HTTP/1.1\r\nHost: shop.example\r\n\r\n")
	}
	waitFor(t, fmt.Sprintf("the trap listener closed its %d slow and %d deaf connections (%d open)", slow, deaf, conns.Open()),
		func() bool { return conns.Open() == 0 })
	// The process holds the clients' ends only: the listener's ends are closed (a deaf
	// client's unsent bytes are the kernel's now), and so are the upstream's.
	if n := openFDs(t); n > fds+slow+deaf+4 {
		t.Errorf("%d file descriptors open, %d before the %d clients", n, fds, slow+deaf)
	}
	for i, c := range clients[:slow] {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("slow client %d: the connection is still open", i)
		}
		if !bytes.HasPrefix(got, []byte("HTTP/1.1 408 ")) || !bytes.Contains(got, []byte("Connection: close")) {
			t.Errorf("slow client %d: %.80q", i, got)
		}
	}
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// However many visitors ask at once, the upstream never has more than
// --upstream-max-conns connections from the proxy: the rest wait for one.
func TestProxyUpstreamConnCap(t *testing.T) {
	const maxConns, visitors = 8, 400
	var open, peak, accepted atomic.Int64
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond) // slow enough that requests pile up
		_, _ = io.WriteString(w, "ok")
	}))
	app.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			accepted.Add(1)
			n := open.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	app.Start()
	t.Cleanup(app.Close)
	u, _ := url.Parse(app.URL)
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) {
		c.Proxy.Upstream = u
		c.Proxy.UpstreamMaxConns = maxConns
		c.TrapMaxConns = 2 * visitors
	})
	env.Tenant("shop")
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: visitors}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	var ok atomic.Int64
	start := make(chan struct{})
	for range visitors {
		wg.Go(func() {
			<-start
			res, err := client.Get(env.Trap.URL + "/slow")
			if err != nil {
				t.Error(err)
				return
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == 200 && string(body) == "ok" {
				ok.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if ok.Load() != visitors {
		t.Errorf("%d of %d answered", ok.Load(), visitors)
	}
	if peak.Load() > maxConns || accepted.Load() > maxConns {
		t.Errorf("the upstream had %d connections at once, %d in all; the cap is %d", peak.Load(), accepted.Load(), maxConns)
	}
	t.Logf("%d visitors: upstream connections %d at once, %d accepted in all", visitors, peak.Load(), accepted.Load())
}

// An upstream that does not answer within --upstream-timeout, and a request that waits
// that long for one of its connections, get nginx's 504.
func TestProxyUpstreamTimeout(t *testing.T) {
	hold := make(chan struct{})
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(app.Close)
	t.Cleanup(func() { close(hold) })
	u, _ := url.Parse(app.URL)
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) {
		c.Proxy.Upstream = u
		c.Proxy.UpstreamMaxConns = 1
		c.Proxy.UpstreamTimeout = 300 * time.Millisecond
	})
	env.Tenant("shop")
	var wg sync.WaitGroup
	statuses := make([]int, 3)
	for i := range statuses { // one holds the only connection, two wait for it
		wg.Go(func() {
			res, err := (&http.Client{Timeout: 30 * time.Second}).Get(env.Trap.URL + "/hang")
			if err != nil {
				t.Error(err)
				return
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			statuses[i] = res.StatusCode
			if !strings.Contains(string(body), "504 Gateway Time-out") {
				t.Errorf("body %q", body)
			}
		})
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusGatewayTimeout {
			t.Errorf("request %d: %d, want 504", i, s)
		}
	}
}

// A WebSocket quiet both ways for --proxy-read-timeout is closed; one that talks stays.
func TestProxyQuietTunnelEnds(t *testing.T) {
	a := app(t, make(chan struct{}))
	u, _ := url.Parse(a.URL)
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) {
		c.Proxy.Upstream = u
		c.Proxy.ReadTimeout = 400 * time.Millisecond
	})
	env.Tenant("shop")
	c, err := net.Dial("tcp", env.Trap.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: shop.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", res, err)
	}
	// Talk for three read timeouts: a masked text frame "hi" every 100 ms, each echoed.
	frame := []byte{0x81, 0x82, 1, 2, 3, 4, 'h' ^ 1, 'i' ^ 2}
	for range 12 {
		if _, err := c.Write(frame); err != nil {
			t.Fatalf("a talking tunnel was cut: %v", err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		hdr := make([]byte, 2)
		if _, err := io.ReadFull(br, hdr); err != nil {
			t.Fatalf("a talking tunnel was cut: %v", err)
		}
		if _, err := io.ReadFull(br, make([]byte, hdr[1]&0x7f)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("a byte from a quiet tunnel")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a quiet tunnel is still open")
	}
	waitFor(t, "the tunnel's connection is no longer counted", func() bool { return env.Server.TrapConns().Open() == 0 })
}

// What a visitor claims about its address, scheme and host does not reach the
// application: only what Flytrap saw. A proxy of ours (--trusted-proxies) is believed.
func TestProxyDropsClientHeaders(t *testing.T) {
	claimed := map[string]string{
		"X-Real-IP": "10.0.0.1", "True-Client-IP": "10.0.0.2", "CF-Connecting-IP": "10.0.0.3", "X-Client-IP": "10.0.0.4",
		"X-Forwarded-Port": "443", "X-Forwarded-For": "10.0.0.5", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "admin.internal",
		"Forwarded": "for=10.0.0.6;proto=https", "X-Original-Forwarded-For": "10.0.0.7", "Fastly-Client-IP": "10.0.0.8",
		"X-Cluster-Client-IP": "10.0.0.9", "X-Forwarded-Ssl": "on", "X-Forwarded-Prefix": "/admin", "Client-IP": "10.0.0.10",
	}
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(r.Header)
	}))
	t.Cleanup(echo.Close)
	u, _ := url.Parse(echo.URL)
	seen := func(t *testing.T, trusted bool) http.Header {
		env := ft.Start(t, ft.Backends()[0], func(c *server.Config) {
			c.Proxy.Upstream = u
			if trusted {
				c.Trap.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			}
		})
		env.Tenant("shop")
		req, _ := http.NewRequest(http.MethodGet, env.Trap.URL+"/headers", nil)
		req.Host = "shop.example"
		for k, v := range claimed {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var h http.Header
		if err := json.NewDecoder(res.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	t.Run("a visitor", func(t *testing.T) {
		h := seen(t, false)
		for k := range claimed {
			switch k {
			case "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host":
			default:
				if v := h.Values(k); len(v) > 0 {
					t.Errorf("%s: %q reached the upstream", k, v)
				}
			}
		}
		if h.Get("X-Forwarded-For") != "127.0.0.1" || h.Get("X-Forwarded-Proto") != "http" || h.Get("X-Forwarded-Host") != "shop.example" {
			t.Errorf("X-Forwarded-For %q, -Proto %q, -Host %q: not what Flytrap saw", h.Get("X-Forwarded-For"), h.Get("X-Forwarded-Proto"), h.Get("X-Forwarded-Host"))
		}
	})
	t.Run("a trusted proxy", func(t *testing.T) {
		h := seen(t, true)
		if h.Get("X-Real-Ip") != "10.0.0.1" || h.Get("Cf-Connecting-Ip") != "10.0.0.3" || h.Get("X-Forwarded-Port") != "443" {
			t.Errorf("a trusted proxy's headers were dropped: %v", h)
		}
		if h.Get("X-Forwarded-For") != "10.0.0.5, 127.0.0.1" || h.Get("X-Forwarded-Proto") != "https" || h.Get("X-Forwarded-Host") != "admin.internal" {
			t.Errorf("X-Forwarded-For %q, -Proto %q, -Host %q", h.Get("X-Forwarded-For"), h.Get("X-Forwarded-Proto"), h.Get("X-Forwarded-Host"))
		}
	})
}

// countingWriter counts what an upstream handler sent.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// A lured page costs the proxy what the application sent, its compression at most
// --lure-max-bytes: the upstream is asked for identity, a page that comes compressed
// anyway (a gzip bomb: 1 GiB of zeros in about 1 MiB) passes untouched and is never
// inflated, and a large identity page is deflated within the window only.
func TestProxyLureWorkIsBounded(t *testing.T) {
	var member bytes.Buffer // 16 MiB of zeros, one gzip member; 64 of them inflate to 1 GiB
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	_, _ = zw.Write(make([]byte, 16<<20))
	_ = zw.Close()
	const tail = 32 << 20
	head := "<!DOCTYPE html><html><head><title>Big</title></head><body><p>big</p></body>"
	var sent atomic.Int64
	var asked atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("/bomb", func(w http.ResponseWriter, r *http.Request) {
		asked.Store(r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip") // whatever was asked
		cw := countingWriter{w, &sent}
		for range 64 {
			if _, err := cw.Write(member.Bytes()); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, head)
		chunk := bytes.Repeat([]byte("\n"), 1<<20)
		for range tail / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, "</html>")
	})
	app := httptest.NewServer(mux)
	t.Cleanup(app.Close)
	u, _ := url.Parse(app.URL)
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) {
		c.Proxy.Upstream = u
		c.Proxy.MaxLureBytes = 1 << 20
	})
	tn := env.Tenant("shop")
	env.MustGraphQL(tn.ReadWrite, `mutation($p: String!) { createTrap(input: {name: "Deploy runbook", type: page, path: $p}) { id } }`,
		map[string]any{"p": trapPath})
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	get := func(path string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, env.Trap.URL+path, nil)
		req.Header.Set("Accept-Encoding", "gzip, br")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, body
	}

	res, body := get("/bomb")
	if asked.Load() != "identity" {
		t.Errorf("the upstream was asked for %q, want identity", asked.Load())
	}
	if res.Header.Get("Content-Encoding") != "gzip" || int64(len(body)) != sent.Load() || !bytes.Equal(body[:member.Len()], member.Bytes()) {
		t.Fatalf("the bomb was not passed untouched: %d bytes out, %d sent by the upstream", len(body), sent.Load())
	}
	t.Logf("gzip bomb: %d bytes from the upstream (1 GiB inflated), %d to the visitor, none inflated", sent.Load(), len(body))

	res, body = get("/big")
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("big page: Content-Encoding %q", res.Header.Get("Content-Encoding"))
	}
	// 32 MiB of newlines deflate to ~32 KiB: an answer this large was stored past the window.
	if len(body) < tail-(1<<20) {
		t.Errorf("%d bytes out for a %d-byte page: compressed past the 1 MiB window", len(body), tail+len(head))
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(head, "</p>") // where the lures begin
	j := bytes.Index(plain, []byte("</body>"))
	if j <= at || string(plain[:at]) != head[:at] || !bytes.Contains(plain[at:j], []byte(trapPath+"?ref=")) ||
		len(plain)-j != len("</body>")+tail+len("</html>") || !bytes.HasSuffix(plain, []byte("\n</html>")) {
		t.Errorf("big page: lures at %d to %d, %d bytes decoded", at, j, len(plain))
	}
	t.Logf("big page: %d bytes, %d to the visitor (1 MiB deflated, the rest stored)", len(head)+tail, len(body))
}
