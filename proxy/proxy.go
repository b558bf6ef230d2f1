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
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/proxy/inject"
	"github.com/flytrap/flytrap/trap"
)

// Config is the proxy's part of the configuration.
type Config struct {
	Upstream *url.URL
	// MaxLureBytes bounds the pages that get lures: a larger Content-Length passes
	// untouched, a page is searched for its </body> this far at most, and compressed
	// for the visitor this far at most (stored, uncompressed gzip blocks after).
	MaxLureBytes   int64
	TrustedProxies []netip.Prefix // whose forwarding and client-address headers are passed on

	// Bounds toward visitors of proxied requests (docs/security.md, "The lure proxy"):
	// the longest wait for a visitor's next bytes (a request body, a WebSocket's frames:
	// a tunnel quiet both ways this long is closed), and the longest one write to a
	// visitor may take. Progress resets both: a download or a stream lasts as long as
	// it moves.
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// Bounds toward the upstream: connections open at once (more requests wait for one),
	// and the time it has to accept a connection, answer with headers, and between two
	// reads of its answer (nginx's proxy_connect_timeout and proxy_read_timeout); a
	// request that waits longer for a connection ends too. Past it the visitor gets 504.
	UpstreamMaxConns int
	UpstreamTimeout  time.Duration
}

// Defaults of Config.
const (
	DefaultMaxLureBytes     = 8 << 20
	DefaultReadTimeout      = time.Minute
	DefaultWriteTimeout     = time.Minute
	DefaultUpstreamMaxConns = 256
	DefaultUpstreamTimeout  = time.Minute
)

// Engine is what the proxy needs of the trap listener (a *trap.Engine).
type Engine interface {
	http.Handler
	Route(*http.Request) trap.Route
	Key() decoy.Key
	// Lure renders one page's lures (decoy.Lure) and remembers which page carried them.
	Lure(spec decoy.LureSpec, now time.Time) ([]byte, []decoy.Placement)
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

// exchange is what the proxy keeps of one proxied request, found from its context.
type exchange struct {
	plan *plan // nil: no lures
	wd   *watchdog
	vw   *visitorWriter
}

// plan is what a request's lures will be, decided before it is proxied.
type plan struct {
	spec decoy.LureSpec
	gzip bool // the visitor takes gzip: the page is sent compressed
}

// New returns a proxy to cfg.Upstream in front of engine.
func New(cfg Config, engine Engine, log *slog.Logger) *Proxy {
	if cfg.MaxLureBytes <= 0 {
		cfg.MaxLureBytes = DefaultMaxLureBytes
	}
	cfg.ReadTimeout = orDefault(cfg.ReadTimeout, DefaultReadTimeout)
	cfg.WriteTimeout = orDefault(cfg.WriteTimeout, DefaultWriteTimeout)
	cfg.UpstreamTimeout = orDefault(cfg.UpstreamTimeout, DefaultUpstreamTimeout)
	if cfg.UpstreamMaxConns <= 0 {
		cfg.UpstreamMaxConns = DefaultUpstreamMaxConns
	}
	p := &Proxy{cfg: cfg, engine: engine, log: log, now: time.Now}
	tr := newTransport(cfg)
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
	// streams and WebSockets: a proxied request lives as long as it makes progress.
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	x := &exchange{plan: p.lurePlan(r, rt), wd: newWatchdog(p.cfg.UpstreamTimeout, cancel)}
	defer x.wd.stop()
	vw := newVisitorWriter(w, p.cfg, x.wd)
	defer vw.finish()
	x.vw = vw
	r = r.WithContext(context.WithValue(ctx, ctxKey{}, x))
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &visitorBody{ReadCloser: r.Body, vw: vw}
	}
	p.rp.ServeHTTP(vw, r)
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
	return &plan{spec: decoy.LureSpec{SiteID: rt.Site, Page: r.URL.Path, Targets: rt.Targets, Count: c.Count}, gzip: acceptsGzip(r.Header.Values("Accept-Encoding"))}
}

func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(p.cfg.Upstream)
	pr.Out.Host = pr.In.Host // the application sees the visitor's Host, as behind nginx's proxy_set_header Host $host
	trusted := p.trusted(pr.In.RemoteAddr)
	if !trusted {
		// Whoever sent these is a visitor, not a proxy of ours: an application that
		// believes them would take the visitor's word for its address, scheme or host.
		dropClientHeaders(pr.Out.Header)
	}
	// What Flytrap saw: the peer, the Host, the scheme; behind a proxy of ours, the chain it began.
	pr.SetXForwarded()
	if trusted {
		if prior := pr.In.Header.Values("X-Forwarded-For"); len(prior) > 0 {
			pr.Out.Header.Set("X-Forwarded-For", strings.Join(prior, ", ")+", "+pr.Out.Header.Get("X-Forwarded-For"))
		}
		if proto := pr.In.Header.Get("X-Forwarded-Proto"); proto == "http" || proto == "https" {
			pr.Out.Header.Set("X-Forwarded-Proto", proto)
		}
		if host := pr.In.Header.Get("X-Forwarded-Host"); host != "" {
			pr.Out.Header.Set("X-Forwarded-Host", host)
		}
	}
	if x, _ := pr.In.Context().Value(ctxKey{}).(*exchange); x != nil && x.plan != nil {
		// A page that may get lures comes unencoded, as nginx's sub_filter wants it: the
		// proxy never inflates what the application compressed (a small gzip can hold
		// gigabytes), and compresses for the visitor itself (gzipOut), within bounds.
		pr.Out.Header.Set("Accept-Encoding", "identity")
	}
}

// clientHeaders are request headers that tell an application who the client is, or
// how it reached the site, in the conventions of proxies and CDNs. Every X-Forwarded-*
// is one too (dropClientHeaders).
var clientHeaders = []string{
	"Forwarded", "Forwarded-For", "X-Forwarded", "X-Real-Ip", "X-Client-Ip", "Client-Ip", "True-Client-Ip",
	"Cf-Connecting-Ip", "Cf-Connecting-Ipv6", "Cf-Ipcountry", "Fastly-Client-Ip", "X-Cluster-Client-Ip",
	"X-Original-Forwarded-For", "X-Originating-Ip", "X-Remote-Ip", "X-Remote-Addr", "X-Proxyuser-Ip",
	"X-Envoy-External-Address", "X-Azure-Clientip", "X-Azure-Socketip", "X-Appengine-User-Ip",
	"X-Original-Host",
}

// dropClientHeaders removes what a visitor may claim about its address, scheme and host.
func dropClientHeaders(h http.Header) {
	for _, k := range clientHeaders {
		delete(h, k)
	}
	for k := range h {
		if len(k) > len("X-Forwarded-") && strings.EqualFold(k[:len("X-Forwarded-")], "X-Forwarded-") {
			delete(h, k)
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
	x, _ := resp.Request.Context().Value(ctxKey{}).(*exchange)
	if x == nil {
		return nil
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		x.wd.stop() // a tunnel: the visitor's connection bounds it from here (tunnelConn)
		return nil
	}
	resp.Body = &upstreamBody{ReadCloser: resp.Body, wd: x.wd}
	pl := x.plan
	if pl == nil || !injectable(resp, p.cfg.MaxLureBytes) {
		return nil
	}
	switch ce := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); ce {
	case "", "identity":
	default:
		return nil // the application encoded it although asked not to: untouched
	}
	now := p.now()
	fragment := func() []byte {
		b, _ := p.engine.Lure(pl.spec, now)
		return b
	}
	resp.Body = newLureBody(resp.Body, pl.gzip, p.cfg.MaxLureBytes, fragment)
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	resp.Header.Del("Content-Encoding")
	if pl.gzip {
		resp.Header.Set("Content-Encoding", "gzip")
	}
	if !slices.ContainsFunc(resp.Header.Values("Vary"), func(v string) bool { return strings.Contains(strings.ToLower(v), "accept-encoding") }) {
		resp.Header.Add("Vary", "Accept-Encoding") // gzip or not, by the visitor's Accept-Encoding
	}
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
// An upstream that does not answer in time gets 504, a visitor that does not send its
// body in time 408, as from nginx.
func (p *Proxy) failed(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusBadGateway
	var ne net.Error
	x, _ := r.Context().Value(ctxKey{}).(*exchange)
	switch cause := context.Cause(r.Context()); {
	case x != nil && x.vw.bodyTimedOut.Load():
		status = http.StatusRequestTimeout // nginx's answer to a body not sent within client_body_timeout
	case errors.Is(cause, errUpstreamTimeout) || (errors.As(err, &ne) && ne.Timeout()):
		status, err = http.StatusGatewayTimeout, errors.Join(err, cause)
	}
	if status == http.StatusGatewayTimeout || (status == http.StatusBadGateway && !errors.Is(err, context.Canceled)) {
		p.log.Warn("proxying to the upstream failed", "host", r.Host, "status", status, "err", err)
	}
	h := w.Header()
	for k := range h {
		delete(h, k)
	}
	h.Set("Content-Type", "text/html")
	h.Set("Connection", "close") // a visitor cut for its slowness, or a request the upstream did not take: no reuse
	w.WriteHeader(status)
	title := map[int]string{http.StatusRequestTimeout: "408 Request Time-out", http.StatusGatewayTimeout: "504 Gateway Time-out"}[status] // nginx's wording
	if title == "" {
		title = fmt.Sprintf("%d %s", status, http.StatusText(status))
	}
	_, _ = io.WriteString(w, "<html>\r\n<head><title>"+title+"</title></head>\r\n<body>\r\n<center><h1>"+title+"</h1></center>\r\n</body>\r\n</html>\r\n")
}

// lureBody is an HTML body on its way to the visitor with lures inserted, one upstream
// read at a time, and gzip-encoded when the visitor takes it (gzipOut bounds that work).
type lureBody struct {
	src  io.ReadCloser
	zw   *gzipOut
	inj  *inject.Injector
	out  bytes.Buffer
	buf  []byte
	eof  bool
	fail error
}

func newLureBody(src io.ReadCloser, gzip bool, max int64, fragment func() []byte) *lureBody {
	b := &lureBody{src: src, buf: bufferPool{}.Get()}
	var sink io.Writer = &b.out
	if gzip {
		b.zw = newGzipOut(&b.out, max)
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
	n, err := b.src.Read(b.buf)
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
