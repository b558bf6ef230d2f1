package proxy_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent/schematype"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

func TestMain(m *testing.M) { ft.Main(m) }

const (
	trapPath = "/internal/docs/deploy-runbook"
	page     = "<!DOCTYPE html>\n<html><head><title>Shop</title></head>\n<body>\n<h1>Welcome</h1>\n<p>Our products.</p>\n</body>\n</html>\n"
	bigSize  = 64 << 20
)

// app is a stand-in for the customer's application: every kind of answer a real one gives.
func app(t *testing.T, sseGate chan struct{}) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Etag", `"v1"`)
		http.ServeContent(w, r, "page.html", time.Unix(1700000000, 0), strings.NewReader(page))
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "TEXT/HTML; charset=ISO-8859-1")
		_, _ = w.Write([]byte("<html><body>caf\xe9</body></html>"))
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		for _, part := range []string{"<html><BODY>\n<p>streamed</p>\n</bo", "dy>\n</html>\n"} {
			_, _ = io.WriteString(w, part)
			w.(http.Flusher).Flush() // one chunk each: the close tag is cut between them
		}
	})
	mux.HandleFunc("/gzip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Asked-Encoding", r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Type", "text/html")
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			_, _ = io.WriteString(w, page)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = io.WriteString(zw, page)
		_ = zw.Close()
	})
	mux.HandleFunc("/brotli-anyway", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "br")
		_, _ = w.Write([]byte("\x8b\x03\x80<html></html>\x03"))
	})
	mux.HandleFunc("/no-transform", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Cache-Control", "public, no-transform")
		_, _ = io.WriteString(w, page)
	})
	mux.HandleFunc("/data.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"html":"<body></body>"}`)
	})
	mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(bigSize))
		chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
		for n := 0; n < bigSize; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select { // the second event only once the client has the first: proof it was not held back
		case <-sseGate:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "data: second\n\n")
	})
	up := websocket.Upgrader{}
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			_ = c.WriteMessage(mt, append([]byte("echo: "), msg...))
		}
	})
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "abc123", Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, "/page?welcome=1", http.StatusFound)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "host=%s xff=%s proto=%s xfhost=%s", r.Host, r.Header.Get("X-Forwarded-For"), r.Header.Get("X-Forwarded-Proto"), r.Header.Get("X-Forwarded-Host"))
	})
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "# the shop's rules\nUser-agent: *\nDisallow: /checkout/\n\nUser-agent: BadBot\nDisallow: /\n\nSitemap: https://shop.example/sitemap.xml\n")
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

type fixture struct {
	env    *ft.Env
	tenant ft.Tenant
	app    *httptest.Server
	gate   chan struct{}
	client *http.Client
}

func start(t *testing.T, b ft.Backend) *fixture {
	t.Helper()
	gate := make(chan struct{})
	a := app(t, gate)
	u, _ := url.Parse(a.URL)
	env := ft.Start(t, b, func(c *server.Config) { c.Proxy.Upstream = u })
	tn := env.Tenant("shop")
	env.MustGraphQL(tn.ReadWrite, `mutation($p: String!) { createTrap(input: {name: "Deploy runbook", type: page, path: $p}) { id } }`,
		map[string]any{"p": trapPath})
	client := &http.Client{
		Timeout:       30 * time.Second,
		Transport:     &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &fixture{env: env, tenant: tn, app: a, gate: gate, client: client}
}

func (f *fixture) do(t *testing.T, base, method, path string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := f.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading: %v", method, path, err)
	}
	return res, body
}

func (f *fixture) get(t *testing.T, path string, hdr ...string) (*http.Response, []byte) {
	return f.do(t, f.env.Trap.URL, http.MethodGet, path, hdr...)
}

func (f *fixture) sessions(t *testing.T) []any {
	t.Helper()
	d := f.env.MustGraphQL(f.tenant.ReadOnly, `{ sessions(first: 50) { edges { node { id classification signalsFired trapsTriggered userAgent } } } }`, nil)
	edges, _ := ft.Dig(d, "sessions", "edges").([]any)
	return edges
}

// lureMarkup matches every element and comment the proxy's lures are made of.
var lureMarkup = regexp.MustCompile(`<a href="[^"]*" style="` + regexp.QuoteMeta(decoy.LureStyle) + `"[^>]*>[^<]*</a>|<span style="` +
	regexp.QuoteMeta(decoy.LureStyle) + `">[^<]*</span>|<!-- printable version for crawlers and assistants: [^>]* -->`)

// stripLures is a proxied page without its lures: the application's page, byte for byte.
func stripLures(body []byte) string {
	return lureMarkup.ReplaceAllString(string(body), "")
}

func (f *fixture) tokens(body []byte) []decoy.TokenRef {
	return decoy.FindTokens(f.env.Server.Engine().Key(), string(body))
}

func TestProxy(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		f := start(t, b)

		t.Run("HTML with Content-Length gets lures before </body>", func(t *testing.T) {
			res, body := f.get(t, "/page")
			if res.StatusCode != 200 || res.Header.Get("Etag") != `W/"v1"` || res.Header.Get("Accept-Ranges") != "" {
				t.Fatalf("status %d, headers %v", res.StatusCode, res.Header)
			}
			if cl := res.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(body)) {
				t.Errorf("Content-Length %s for %d bytes", cl, len(body))
			}
			i, j := bytes.Index(body, []byte(`<a href="`+trapPath+"?ref=")), bytes.Index(body, []byte("</body>"))
			k := bytes.Index(body, []byte(`<span style="`))
			if i < 0 || j < i || k < 0 || k > bytes.Index(body, []byte("</p>")) {
				t.Fatalf("no lure in the paragraph and before </body>:\n%s", body)
			}
			if got := stripLures(body); got != page {
				t.Errorf("the page around the lures changed:\n%s", got)
			}
			refs := f.tokens(body)
			if len(refs) != schematype.DefaultLures.Count {
				t.Fatalf("%d tokens, want %d:\n%s", len(refs), schematype.DefaultLures.Count, body)
			}
			for _, r := range refs {
				if r.Origin != decoy.OriginLure {
					t.Errorf("token %+v is not a lure's", r)
				}
			}
			_, again := f.get(t, "/page")
			if bytes.Equal(again, body) {
				t.Errorf("two responses carry the same lures")
			}
		})

		t.Run("any charset, any case of the media type", func(t *testing.T) {
			_, body := f.get(t, "/latin1")
			if !bytes.Contains(body, []byte("caf\xe9")) || !bytes.Contains(body, []byte(trapPath)) {
				t.Errorf("latin-1 page: %q", body)
			}
		})

		t.Run("chunked, </body> cut between two chunks", func(t *testing.T) {
			res, body := f.get(t, "/chunked")
			if res.ContentLength != -1 {
				t.Errorf("Content-Length %d on a streamed page", res.ContentLength)
			}
			i, j := bytes.Index(body, []byte(`<a href="`)), bytes.Index(body, []byte("</body>"))
			if i < 0 || j < i || !bytes.HasPrefix(body, []byte("<html><BODY>\n<p>streamed<span style=")) ||
				stripLures(body) != "<html><BODY>\n<p>streamed</p>\n</body>\n</html>\n" {
				t.Fatalf("streamed page:\n%s", body)
			}
		})

		t.Run("gzip for the visitor: the upstream asked for identity, the page encoded by the proxy", func(t *testing.T) {
			res, body := f.get(t, "/gzip", "Accept-Encoding", "gzip, deflate, br, zstd")
			if res.Header.Get("Content-Encoding") != "gzip" || res.Header.Get("X-Asked-Encoding") != "identity" || res.Header.Get("Vary") != "Accept-Encoding" {
				t.Fatalf("encoding %q, Vary %q, upstream was asked for %q", res.Header.Get("Content-Encoding"), res.Header.Get("Vary"), res.Header.Get("X-Asked-Encoding"))
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(plain, []byte(trapPath+"?ref=")) || !bytes.HasSuffix(plain, []byte("</body>\n</html>\n")) {
				t.Errorf("gzip page:\n%s", plain)
			}
			// A client that takes no gzip gets identity, and lures.
			res, body = f.get(t, "/gzip")
			if res.Header.Get("Content-Encoding") != "" || res.Header.Get("X-Asked-Encoding") != "identity" || !bytes.Contains(body, []byte(trapPath)) {
				t.Errorf("identity page: %v\n%s", res.Header, body)
			}
		})

		t.Run("untouched: other codings, no-transform, non-HTML, HEAD, ranges, 304", func(t *testing.T) {
			direct := func(path string, hdr ...string) (*http.Response, []byte) {
				return f.do(t, f.app.URL, http.MethodGet, path, hdr...)
			}
			for _, c := range []struct {
				path string
				hdr  []string
			}{
				{"/brotli-anyway", nil}, {"/no-transform", nil}, {"/data.json", nil},
				{"/page", []string{"Range", "bytes=0-20"}},
				{"/page", []string{"If-None-Match", `"v1"`}},
			} {
				want, wantBody := direct(c.path, c.hdr...)
				got, body := f.get(t, c.path, c.hdr...)
				if got.StatusCode != want.StatusCode || !bytes.Equal(body, wantBody) || got.Header.Get("Content-Length") != want.Header.Get("Content-Length") {
					t.Errorf("%s %v: %d %q, want %d %q", c.path, c.hdr, got.StatusCode, body, want.StatusCode, wantBody)
				}
			}
			res, body := f.do(t, f.env.Trap.URL, http.MethodHead, "/page")
			if res.StatusCode != 200 || len(body) != 0 || res.Header.Get("Content-Length") != strconv.Itoa(len(page)) {
				t.Errorf("HEAD: %d, Content-Length %q", res.StatusCode, res.Header.Get("Content-Length"))
			}
		})

		t.Run("a large download streams in bounded memory", func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			req, _ := http.NewRequest(http.MethodGet, f.env.Trap.URL+"/download", nil)
			res, err := f.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, res.Body)
			res.Body.Close()
			runtime.ReadMemStats(&after)
			if err != nil || n != bigSize || res.ContentLength != bigSize {
				t.Fatalf("downloaded %d of %d bytes (Content-Length %d): %v", n, bigSize, res.ContentLength, err)
			}
			// Everything this process allocated meanwhile, the stand-in application's writes included:
			// a proxy that buffered the body would allocate it whole at least once.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > bigSize/4 {
				t.Errorf("a %d MiB download allocated %d MiB", bigSize>>20, alloc>>20)
			}
		})

		t.Run("server-sent events are passed as they come", func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, f.env.Trap.URL+"/events", nil)
			req.Header.Set("Accept", "text/event-stream")
			res, err := f.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			buf := make([]byte, 64)
			var got []byte
			for !bytes.Contains(got, []byte("first\n\n")) {
				n, err := res.Body.Read(buf)
				if err != nil {
					t.Fatalf("before the first event: %v (read %q)", err, got)
				}
				got = append(got, buf[:n]...)
			}
			close(f.gate)
			rest, _ := io.ReadAll(res.Body)
			if !bytes.Contains(rest, []byte("data: second")) {
				t.Errorf("second event: %q", rest)
			}
		})

		t.Run("WebSocket upgrades pass through", func(t *testing.T) {
			c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.env.Trap.URL, "http")+"/ws", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, m := range []string{"hello", "again"} {
				if err := c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
					t.Fatal(err)
				}
				_, got, err := c.ReadMessage()
				if err != nil || string(got) != "echo: "+m {
					t.Fatalf("echo of %q: %q, %v", m, got, err)
				}
			}
		})

		t.Run("redirects and cookies unchanged", func(t *testing.T) {
			want, _ := f.do(t, f.app.URL, http.MethodGet, "/login")
			res, _ := f.get(t, "/login")
			if res.StatusCode != http.StatusFound || res.Header.Get("Location") != want.Header.Get("Location") ||
				fmt.Sprint(res.Header.Values("Set-Cookie")) != fmt.Sprint(want.Header.Values("Set-Cookie")) {
				t.Errorf("redirect: %d %v, want %v", res.StatusCode, res.Header, want.Header)
			}
		})

		t.Run("X-Forwarded-* set, Host kept", func(t *testing.T) {
			_, body := f.get(t, "/echo", "X-Forwarded-For", "203.0.113.9")
			host := strings.TrimPrefix(f.env.Trap.URL, "http://")
			if want := "host=" + host + " xff=127.0.0.1 proto=http xfhost=" + host; string(body) != want {
				t.Errorf("upstream saw %q, want %q (a visitor's own X-Forwarded-For is not passed on)", body, want)
			}
		})

		t.Run("robots.txt merged", func(t *testing.T) {
			f.env.MustGraphQL(f.tenant.ReadWrite, `mutation { createTrap(input: {name: "robots", type: robots}) { id } }`, nil)
			res, body := f.get(t, "/robots.txt")
			s := string(body)
			if res.StatusCode != 200 || res.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
				t.Fatalf("robots.txt: %d %v", res.StatusCode, res.Header)
			}
			for _, want := range []string{"# the shop's rules\nUser-agent: *\nDisallow: ", "Disallow: " + trapPath + "\n", "Disallow: /checkout/\n\nUser-agent: BadBot\nDisallow: /\n", "Sitemap: https://shop.example/sitemap.xml"} {
				if !strings.Contains(s, want) {
					t.Errorf("merged robots.txt lacks %q:\n%s", want, s)
				}
			}
			for _, bad := range []string{"Disallow: /cgi-bin/", "Disallow: /tmp/", "Disallow: /cart/", "Disallow: /account/", "Disallow: /search", "AdsBot"} {
				if strings.Contains(s, bad) {
					t.Errorf("merged robots.txt carries the decoy's made-up rule %q:\n%s", bad, s)
				}
			}
			if len(f.tokens(body)) == 0 {
				t.Errorf("merged robots.txt lost the trap's hidden lines:\n%s", s)
			}
		})

		t.Run("a person browsing is not recorded; following a lure is caught", func(t *testing.T) {
			if n := len(f.sessions(t)); n != 1 { // the robots.txt reader above
				t.Fatalf("%d sessions after browsing the application, want 1 (robots.txt)", n)
			}
			_, body := f.get(t, "/page")
			refs := f.tokens(body)
			var link string
			for _, m := range strings.Split(string(body), "\"") {
				if strings.HasPrefix(m, trapPath+"?ref=") {
					link = m
				}
			}
			if link == "" || len(refs) == 0 {
				t.Fatalf("no lure link in:\n%s", body)
			}
			res, decoyBody := f.get(t, link, "User-Agent", "python-requests/2.32.3")
			if res.StatusCode != 200 || bytes.Contains(decoyBody, []byte("Welcome")) {
				t.Fatalf("the lure led to %d:\n%s", res.StatusCode, decoyBody)
			}
			var caught map[string]any
			for _, e := range f.sessions(t) {
				n, _ := ft.Dig(e, "node").(map[string]any)
				if n["userAgent"] == "python-requests/2.32.3" {
					caught = n
				}
			}
			if caught == nil {
				t.Fatalf("no session for the client that followed the lure: %v", f.sessions(t))
			}
			if sig := fmt.Sprint(caught["signalsFired"]); !strings.Contains(sig, "CALLBACK_HIT") || !strings.Contains(sig, "SPEED_FOLLOWUP") {
				t.Errorf("signals %s, want CALLBACK_HIT and a follow-up timing", sig)
			}
			if caught["classification"] != "BOT" {
				t.Errorf("classification %v, want BOT (an HTTP library that followed a hidden link)", caught["classification"])
			}
		})

		t.Run("a person who clicks a lure on the page is no threat", func(t *testing.T) {
			// A page's own script or style could show the link: a browser navigating to
			// it from the page, by the user's own click.
			const chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/141.0.0.0 Safari/537.36"
			_, body := f.get(t, "/page")
			m := regexp.MustCompile(`<a href="(` + regexp.QuoteMeta(trapPath) + `\?ref=[^"]+)"`).FindSubmatch(body)
			if m == nil {
				t.Fatalf("no lure link in:\n%s", body)
			}
			res, _ := f.get(t, string(m[1]), "User-Agent", chrome, "Referer", f.env.Trap.URL+"/page",
				"Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-User", "?1", "Sec-Fetch-Dest", "document")
			if res.StatusCode != 200 {
				t.Fatalf("the lure led to %d", res.StatusCode)
			}
			var person map[string]any
			for _, e := range f.sessions(t) {
				if n, _ := ft.Dig(e, "node").(map[string]any); n["userAgent"] == chrome {
					person = n
				}
			}
			if person == nil {
				t.Fatalf("no session for the click: %v", f.sessions(t))
			}
			if sig := fmt.Sprint(person["signalsFired"]); strings.Contains(sig, "CALLBACK_HIT") || !strings.Contains(sig, "VISIBLE_LINK_OPENED") {
				t.Errorf("signals %s, want VISIBLE_LINK_OPENED and no CALLBACK_HIT", sig)
			}
			if c := person["classification"]; c != "HUMAN" {
				t.Errorf("classification %v, want HUMAN", c)
			}
		})

		t.Run("the site's lure configuration", func(t *testing.T) {
			set := func(c *schematype.LureConfig) {
				t.Helper()
				if err := f.env.DB.Client.Site.UpdateOneID(f.tenant.Site.ID).SetLures(c).Exec(ft.System()); err != nil {
					t.Fatal(err)
				}
				f.env.Server.Engine().InvalidateRoutes()
			}
			set(&schematype.LureConfig{Off: true, Rate: 1, Count: 1})
			if _, body := f.get(t, "/page"); string(body) != page {
				t.Errorf("lures off, the page still changed:\n%s", body)
			}
			set(&schematype.LureConfig{Paths: []string{"/docs/", "/pag"}, Rate: 1, Count: 3})
			if _, body := f.get(t, "/page"); len(f.tokens(body)) != 3 {
				t.Errorf("count 3 on a listed prefix: %d tokens", len(f.tokens(body)))
			}
			set(&schematype.LureConfig{Paths: []string{"/docs/"}, Rate: 1, Count: 3})
			if _, body := f.get(t, "/page"); string(body) != page {
				t.Errorf("a path outside the prefixes got lures")
			}
			set(&schematype.LureConfig{Rate: 0.5, Count: 1})
			with := 0
			for range 40 {
				if _, body := f.get(t, "/page"); string(body) != page {
					with++
				}
			}
			if with == 0 || with == 40 { // 2·0.5⁴⁰: never by chance
				t.Errorf("rate 0.5: %d of 40 pages got lures", with)
			}
			set(nil)
		})

		t.Run("trap paths are Flytrap's", func(t *testing.T) {
			_, body := f.get(t, trapPath)
			if bytes.Contains(body, []byte("Welcome")) || !bytes.Contains(body, []byte("<html")) {
				t.Errorf("trap path answered by the application:\n%s", body)
			}
		})
	})
}

func TestProxyUpstreamDown(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	u, _ := url.Parse(dead.URL)
	dead.Close()
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.Proxy.Upstream = u })
	env.Tenant("shop")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.Trap.URL+"/anything", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", res.StatusCode)
	}
	for _, leak := range []string{u.Host, u.Port(), "refused", "dial", "Go"} {
		if strings.Contains(string(body), leak) {
			t.Errorf("the 502 tells %q:\n%s", leak, body)
		}
	}
}

// TestProxyTrustedChain: behind a proxy listed in --trusted-proxies, the chain it began
// reaches the application, with Flytrap's hop appended and its scheme kept.
func TestProxyTrustedChain(t *testing.T) {
	a := app(t, make(chan struct{}))
	u, _ := url.Parse(a.URL)
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) {
		c.Proxy.Upstream = u
		c.Trap.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	env.Tenant("shop")
	req, _ := http.NewRequest(http.MethodGet, env.Trap.URL+"/echo", nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("X-Forwarded-Proto", "https")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), "xff=203.0.113.9, 127.0.0.1 proto=https") {
		t.Errorf("upstream saw %q", body)
	}
}

// TestProxyLurePlaces: pages whose markup hides a </body> or a </p> in every tokenizer
// state that matters get their lures at the real places only, and are otherwise unchanged;
// the CSP header they come with lets the lures' style through.
func TestProxyLurePlaces(t *testing.T) {
	pages := map[string]string{
		"/textarea":  "<html><body><main><form><textarea>a </body> and </p> in a textarea</textarea></form><p>text</p></main></body></html>",
		"/title":     "<html><head><title>the </body> </p> title</title></head><body><p>x</p></body></html>",
		"/attribute": `<html><body><input value="</body>"><a title="</p>" href="/">x</a><p>y</p></body></html>`,
		"/template":  "<html><body><template><p>t</p></body></template><p>z</p></body></html>",
		"/svg":       "<html><body><svg><style></p></style><title></body></title></svg><math><mi></body></mi></math><p>w</p></body></html>",
		"/script":    "<html><body><script>document.write('</p></body>')</script><p>v</p></body></html>",
		"/no-p":      "<html><body><div>no paragraph</div></body></html>",
	}
	mux := http.NewServeMux()
	for path, body := range pages {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'")
			_, _ = io.WriteString(w, body)
		})
	}
	app := httptest.NewServer(mux)
	t.Cleanup(app.Close)
	u, _ := url.Parse(app.URL)
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.Proxy.Upstream = u })
	tn := env.Tenant("shop")
	env.MustGraphQL(tn.ReadWrite, `mutation($p: String!) { createTrap(input: {name: "Deploy runbook", type: page, path: $p}) { id } }`,
		map[string]any{"p": trapPath})
	if err := env.DB.Client.Site.UpdateOneID(tn.Site.ID).SetLures(&schematype.LureConfig{Rate: 1, Count: 3}).Exec(ft.System()); err != nil {
		t.Fatal(err)
	}
	env.Server.Engine().InvalidateRoutes()
	for path, want := range pages {
		res, err := http.Get(env.Trap.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		body := string(b)
		if got := stripLures(b); got != want {
			t.Errorf("%s: the page without its lures changed:\n got %s\nwant %s", path, got, want)
		}
		if n := len(decoy.FindTokens(env.Server.Engine().Key(), body)); n != 3 {
			t.Errorf("%s: %d lures, want 3:\n%s", path, n, body)
		}
		content := strings.Index(body, `<span style="`)
		last := strings.LastIndex(body, "</body>")
		switch path {
		case "/no-p": // no paragraph: every lure before </body>
			if content < strings.Index(body, "</div>") || strings.Index(body, `<a href="`+trapPath) > last {
				t.Errorf("%s: lures misplaced:\n%s", path, body)
			}
		default: // the sentence in the last (the real) paragraph, the rest before the real </body>
			if p := strings.LastIndex(body, "<p>"); content < p || content > strings.LastIndex(body, "</p>") || strings.LastIndex(body, `<a href="`+trapPath) > last {
				t.Errorf("%s: lures misplaced:\n%s", path, body)
			}
		}
		if csp := res.Header.Get("Content-Security-Policy"); csp != "default-src 'self'; style-src 'self' 'unsafe-hashes' "+decoy.LureStyleHash() {
			t.Errorf("%s: CSP %q", path, csp)
		}
	}
}
