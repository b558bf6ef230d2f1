// Package proxy puts Flytrap in front of the customer's application (flytrap serve
// --upstream): the trap listener answers its traps and tokens as always, and every other
// request goes to the application through net/http/httputil.ReverseProxy, streamed. The
// application's HTML pages get hidden lures pointing at the site's traps on their way
// back, and its robots.txt gets the robots trap's Disallow lines. The application's own
// traffic is never recorded: only a visitor who follows a lure or touches a trap is.
package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/proxy/inject"
	"github.com/flytrap/flytrap/trap"
)

// Config is the proxy's part of the configuration.
type Config struct {
	Upstream *url.URL
	// MaxLureBytes bounds the pages that get lures: a larger Content-Length passes
	// untouched, and a page is searched for its </body> this far at most.
	MaxLureBytes   int64
	TrustedProxies []netip.Prefix // whose X-Forwarded-For and X-Forwarded-Proto are passed on
}

// DefaultMaxLureBytes is MaxLureBytes when nothing is set.
const DefaultMaxLureBytes = 8 << 20

// Engine is what the proxy needs of the trap listener (a *trap.Engine).
type Engine interface {
	http.Handler
	Route(*http.Request) trap.Route
	Key() decoy.Key
}

// Proxy is the trap listener's handler in front of an application.
type Proxy struct {
	cfg    Config
	engine Engine
	log    *slog.Logger
	rp     *httputil.ReverseProxy
	robots *robotsCache
	now    func() time.Time
}

type ctxKey struct{}

// plan is what a request's lures will be, decided before it is proxied.
type plan struct {
	spec decoy.LureSpec
}

// New returns a proxy to cfg.Upstream in front of engine.
func New(cfg Config, engine Engine, log *slog.Logger) *Proxy {
	if cfg.MaxLureBytes <= 0 {
		cfg.MaxLureBytes = DefaultMaxLureBytes
	}
	p := &Proxy{cfg: cfg, engine: engine, log: log, now: time.Now}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 512
	tr.MaxIdleConnsPerHost = 256 // one application behind: keep its connections
	tr.DisableCompression = true // a proxy passes bodies as they come
	tr.ResponseHeaderTimeout = 0
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      tr,
		ModifyResponse: p.modify,
		ErrorHandler:   p.failed,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BufferPool:     bufferPool{},
	}
	p.robots = newRobotsCache(tr, cfg.Upstream)
	return p
}

// ServeHTTP answers what the trap listener owns and proxies the rest.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt := p.engine.Route(r)
	if rt.Own {
		if rt.Robots && r.Method == http.MethodGet {
			p.serveRobots(w, r, rt)
			return
		}
		p.engine.ServeHTTP(w, r)
		return
	}
	// The trap listener's read and write timeouts suit decoys, not downloads, event
	// streams and WebSockets: a proxied request lives as long as the application's answer.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	if pl := p.lurePlan(r, rt); pl != nil {
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, pl))
	}
	p.rp.ServeHTTP(w, r)
}

// lurePlan decides whether r's answer may get lures, by the site's configuration.
func (p *Proxy) lurePlan(r *http.Request, rt trap.Route) *plan {
	c := rt.Lures
	if len(rt.Targets) == 0 || c.Off || r.Method != http.MethodGet || r.Header.Get("Range") != "" {
		return nil
	}
	if len(c.Paths) > 0 {
		ok := false
		for _, pre := range c.Paths {
			if strings.HasPrefix(r.URL.Path, pre) {
				ok = true
				break
			}
		}
		if !ok {
			return nil
		}
	}
	if c.Rate < 1 && rand.Float64() >= c.Rate {
		return nil
	}
	return &plan{spec: decoy.LureSpec{SiteID: rt.Site, Targets: rt.Targets, Count: c.Count}}
}

func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(p.cfg.Upstream)
	pr.Out.Host = pr.In.Host // the application sees the visitor's Host, as behind nginx's proxy_set_header Host $host
	pr.SetXForwarded()
	if p.trusted(pr.In.RemoteAddr) { // a proxy in front of us: keep the chain it began
		if prior := pr.In.Header.Values("X-Forwarded-For"); len(prior) > 0 {
			pr.Out.Header.Set("X-Forwarded-For", strings.Join(prior, ", ")+", "+pr.Out.Header.Get("X-Forwarded-For"))
		}
		if proto := pr.In.Header.Get("X-Forwarded-Proto"); proto == "http" || proto == "https" {
			pr.Out.Header.Set("X-Forwarded-Proto", proto)
		}
	}
	if pr.In.Context().Value(ctxKey{}) != nil {
		// A page that may get lures comes as identity or gzip only: the codings the proxy
		// can open, inject into and close again. Other answers pass as they come.
		if acceptsGzip(pr.In.Header.Values("Accept-Encoding")) {
			pr.Out.Header.Set("Accept-Encoding", "gzip")
		} else {
			pr.Out.Header.Set("Accept-Encoding", "identity")
		}
	}
}

func (p *Proxy) trusted(remote string) bool {
	if len(p.cfg.TrustedProxies) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, pfx := range p.cfg.TrustedProxies {
		if pfx.Contains(a) {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding list admits gzip (a q of 0 refuses it).
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.TrimSpace(name) != "*" {
				continue
			}
			q := strings.ReplaceAll(strings.ToLower(params), " ", "")
			if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
				return false
			}
			return true
		}
	}
	return false
}

// modify gives an HTML page its lures; every other answer passes untouched.
func (p *Proxy) modify(resp *http.Response) error {
	pl, _ := resp.Request.Context().Value(ctxKey{}).(*plan)
	if pl == nil || !injectable(resp, p.cfg.MaxLureBytes) {
		return nil
	}
	var coding string
	switch ce := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); ce {
	case "", "identity":
	case "gzip", "x-gzip":
		coding = "gzip"
	default:
		return nil // a coding we cannot open: untouched
	}
	key := p.engine.Key()
	now := p.now()
	fragment := func() []byte {
		b, _ := decoy.Lure(key, pl.spec, now)
		return b
	}
	resp.Body = newLureBody(resp.Body, coding, p.cfg.MaxLureBytes, fragment)
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	resp.Header.Del("Accept-Ranges") // the bytes are no longer the application's
	resp.Header.Del("Content-MD5")
	if et := resp.Header.Get("Etag"); et != "" && !strings.HasPrefix(et, "W/") {
		resp.Header.Set("Etag", "W/"+et) // same meaning, other bytes
	}
	return nil
}

// injectable says whether a page may get lures: a whole 200 HTML answer to a GET,
// not too large, whose application did not forbid changing it.
func injectable(resp *http.Response, max int64) bool {
	if resp.Request.Method != http.MethodGet || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Range") != "" {
		return false
	}
	if resp.ContentLength > max {
		return false
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "text/html" {
		return false
	}
	for _, v := range resp.Header.Values("Cache-Control") {
		if strings.Contains(strings.ToLower(v), "no-transform") {
			return false
		}
	}
	return true
}

// failed answers an application that cannot be reached: 502, no details (they are logged).
func (p *Proxy) failed(w http.ResponseWriter, r *http.Request, err error) {
	if !errors.Is(err, context.Canceled) {
		p.log.Warn("proxying to the upstream failed", "host", r.Host, "err", err)
	}
	h := w.Header()
	for k := range h {
		delete(h, k)
	}
	h.Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusBadGateway)
	_, _ = io.WriteString(w, "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n")
}

// lureBody is an HTML body on its way to the visitor with lures inserted: decoded if
// gzip, injected, encoded again, one upstream read at a time.
type lureBody struct {
	src  io.ReadCloser
	dec  io.Reader
	gz   *gzip.Reader
	zw   *gzip.Writer
	inj  *inject.Injector
	out  bytes.Buffer
	buf  []byte
	eof  bool
	fail error
}

func newLureBody(src io.ReadCloser, coding string, max int64, fragment func() []byte) *lureBody {
	b := &lureBody{src: src, dec: src, buf: bufferPool{}.Get()}
	var sink io.Writer = &b.out
	if coding == "gzip" {
		b.zw = gzip.NewWriter(&b.out)
		sink = b.zw
	}
	b.inj = inject.New(sink, max, fragment)
	return b
}

func (b *lureBody) Read(p []byte) (int, error) {
	for b.out.Len() == 0 {
		if b.fail != nil {
			return 0, b.fail
		}
		if b.eof {
			return 0, io.EOF
		}
		b.step()
	}
	return b.out.Read(p)
}

// step reads once from the application and moves what it read on.
func (b *lureBody) step() {
	if b.zw != nil && b.gz == nil {
		gz, err := gzip.NewReader(b.src)
		if err != nil {
			b.fail = err
			return
		}
		b.gz, b.dec = gz, gz
	}
	n, err := b.dec.Read(b.buf)
	if n > 0 {
		_, _ = b.inj.Write(b.buf[:n])
		if b.zw != nil {
			_ = b.zw.Flush() // what was read leaves now: a streamed page stays streamed
		}
	}
	switch {
	case err == io.EOF:
		b.eof = true
		_ = b.inj.Close()
		if b.zw != nil {
			_ = b.zw.Close()
		}
	case err != nil:
		b.fail = err
	}
	if err := b.inj.Err(); err != nil {
		b.fail = err
	}
}

func (b *lureBody) Close() error {
	if b.buf != nil {
		bufferPool{}.Put(b.buf)
		b.buf = nil
		b.fail = errors.New("read after close")
	}
	return b.src.Close()
}

// bufferPool reuses the proxy's copy buffers.
type bufferPool struct{}

var pool = make(chan []byte, 256)

func (bufferPool) Get() []byte {
	select {
	case b := <-pool:
		return b
	default:
		return make([]byte, 32<<10)
	}
}

func (bufferPool) Put(b []byte) {
	select {
	case pool <- b:
	default:
	}
}
