package trap

import (
	"bytes"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/schema"
	"github.com/flytrap/flytrap/ids"
)

// Bounds on what the listener reads of a request.
const (
	maxReadBody  = 64 << 10 // read, for token and prompt detection
	maxUserAgent = 1024
	maxPath      = 2048
	maxQuery     = 4096
)

// headersForTokens are the request headers a planted credential or echoed canary may come back in.
var headersForTokens = []string{"Authorization", "X-Api-Key", "Api-Key", "Cookie", "Referer", "X-Reference"}

// job is a hit waiting to be written, and the request waiting for it.
type job struct {
	rec  *hitRecord
	done chan error
}

// hitRecord is everything the recorder needs of one request.
type hitRecord struct {
	id         string
	org, site  string
	trap       *ent.Trap
	kind       string // decoy, callback, not_found
	status     int
	method     string
	host       string
	path       string
	query      string
	headers    map[string][]string
	body       string
	truncated  bool
	ip         netip.Addr
	ua         string
	receivedAt time.Time
	refs       []decoy.TokenRef
	disallow   []string // robots decoy: the paths it disallowed
	linked     []string // decoy: the same-site paths it links to
	tool       string   // mcp: the decoy tool invoked
	toolArgs   string
	row        []any // the hit's row, all but its session and signals (see hitRow)
	rowErr     error // why ent's validators refuse the row, if they do
}

// ServeHTTP is the trap listener: the decoy of an active trap, an answer to a token
// coming back, or a bland 404, each sent only once its hit is durable.
func (e *Engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := e.now().UTC()
	if e.stopped.Load() {
		unavailable(w)
		return
	}
	rt, err := e.routes.get(r.Context(), now)
	if err != nil {
		e.log.Error("loading trap routes", "err", err)
		unavailable(w)
		return
	}
	sr := rt.site(r.Host)
	if sr == nil {
		writeRendered(w, decoy.NotFound(r.URL.Path))
		return
	}
	body, truncated := readBody(r)
	rec := &hitRecord{
		id:         ids.New(ids.Hit),
		org:        sr.site.OrgID,
		site:       sr.site.ID,
		method:     r.Method,
		host:       r.Host,
		path:       bound(r.URL.Path, maxPath),
		query:      bound(r.URL.RawQuery, maxQuery),
		headers:    boundHeaders(r.Header),
		body:       bound(string(body), schema.MaxHitBody),
		truncated:  truncated || len(body) > schema.MaxHitBody,
		ip:         clientIP(r, e.cfg.TrustedProxies),
		ua:         bound(r.UserAgent(), maxUserAgent),
		receivedAt: now,
	}
	rec.refs = e.findTokens(r, body)

	var resp decoy.Rendered
	t := sr.traps[r.URL.Path]
	switch {
	case t != nil && r.Method == http.MethodPost && decoy.MustKind(string(t.Type)).Post == decoy.PostMCP:
		res := decoy.HandleMCP(e.key, e.spec(t, r, sr), rec.id, body)
		resp = decoy.Rendered{Status: res.Status, ContentType: "application/json", Body: res.Body}
		rec.kind, rec.trap = "decoy", t
		if res.ToolCalled {
			rec.tool, rec.toolArgs = res.ToolName, res.Arguments
		}
	case t != nil:
		spec := e.spec(t, r, sr)
		resp = decoy.Render(e.key, spec, rec.id)
		rec.kind, rec.trap = "decoy", t
		rec.linked = linkedPaths(resp.Body, resp.Placements)
		if spec.Disallow != nil {
			rec.disallow = spec.Disallow
		}
	case len(rec.refs) > 0:
		rec.kind = "callback"
		resp = callbackResponse(r)
	default:
		rec.kind = "not_found"
		resp = decoy.NotFound(r.URL.Path)
		// A stranger's probe is remembered, not recorded: only visitors who touched a trap become sessions.
		key := visitorKey(rec.org, rec.ip, rec.ua)
		if vs, ok := e.visits.session(key); !ok || now.Sub(vs.lastSeen) > e.cfg.SessionIdle {
			e.visits.probe(key, rec.path, detect.MaxProbes)
			writeRendered(w, resp)
			return
		}
	}
	rec.status = resp.Status
	rec.row, rec.rowErr = hitRow(rec)

	j := &job{rec: rec, done: make(chan error, 1)}
	e.received.Add(1)
	select {
	case e.queue <- j:
	default:
		e.shed.Add(1)
		unavailable(w)
		return
	}
	timer := time.NewTimer(e.cfg.WriteTimeout)
	defer timer.Stop()
	select {
	case err := <-j.done:
		if err != nil {
			unavailable(w)
			return
		}
	case <-timer.C:
		unavailable(w) // it may still be written: the visitor is told to retry, never told it was kept
		return
	}
	writeRendered(w, resp)
}

func (e *Engine) spec(t *ent.Trap, r *http.Request, sr *siteRoutes) decoy.Spec {
	s := decoy.Spec{TrapID: t.ID, Name: t.Name, Type: string(t.Type), Path: t.Path, Description: t.Description, Host: r.Host}
	if decoy.MustKind(s.Type).Disallows {
		s.Disallow = sr.disallow(t.Path)
		if s.Disallow == nil {
			s.Disallow = []string{} // a robots decoy that disallows nothing still records that it was read
		}
	}
	return s
}

// findTokens looks for tokens of our decoys anywhere a reader may put them back.
func (e *Engine) findTokens(r *http.Request, body []byte) []decoy.TokenRef {
	var b strings.Builder
	b.WriteString(r.URL.Path)
	b.WriteByte('?')
	b.WriteString(r.URL.RawQuery)
	b.WriteByte('\n')
	for _, h := range headersForTokens {
		for _, v := range r.Header.Values(h) {
			b.WriteString(v)
			b.WriteByte('\n')
		}
	}
	if user, pass, ok := r.BasicAuth(); ok { // a planted credential may come back as a password
		b.WriteString(user + "\n" + pass + "\n")
	}
	b.Write(body)
	return decoy.FindTokens(e.key, b.String())
}

// callbackResponse answers a request that carried a token: a plain acknowledgement
// that looks like any API's, so the reader goes on as if it worked.
func callbackResponse(r *http.Request) decoy.Rendered {
	if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
		return decoy.Rendered{Status: http.StatusOK, ContentType: "text/html; charset=utf-8",
			Body: []byte("<!doctype html><html><head><title>OK</title></head><body><p>Request received.</p></body></html>\n")}
	}
	return decoy.Rendered{Status: http.StatusOK, ContentType: "application/json",
		Body: []byte(`{"status":"ok","received":true}` + "\n")}
}

func writeRendered(w http.ResponseWriter, resp decoy.Rendered) {
	h := w.Header()
	for k, v := range resp.Header {
		h.Set(k, v)
	}
	if resp.ContentType != "" {
		h.Set("Content-Type", resp.ContentType)
	}
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(resp.Body)
}

func unavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, "<html><head><title>503 Service Temporarily Unavailable</title></head><body><center><h1>503 Service Temporarily Unavailable</h1></center></body></html>\n")
}

func readBody(r *http.Request) ([]byte, bool) {
	if r.Body == nil {
		return nil, false
	}
	var buf bytes.Buffer
	n, _ := io.Copy(&buf, io.LimitReader(r.Body, maxReadBody+1))
	b := buf.Bytes()
	if n > maxReadBody {
		return b[:maxReadBody], true
	}
	return b, false
}

// bound makes attacker text storable on every database — valid UTF-8, no NUL
// (each replaced by U+FFFD) — and cuts it to at most n bytes on a rune boundary.
func bound(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 { // drop the bytes of a rune the cut split
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size > 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// boundHeaders keeps the request's headers within schema.MaxHitHeaders bytes.
func boundHeaders(h http.Header) map[string][]string {
	out := make(map[string][]string, len(h))
	size := 0
	for k, vs := range h {
		for _, v := range vs {
			v = bound(v, 1024)
			if size += len(k) + len(v); size > schema.MaxHitHeaders {
				return out
			}
			out[k] = append(out[k], v)
		}
	}
	return out
}

func visitorKey(org string, ip netip.Addr, ua string) string {
	return org + "|" + ip.String() + "|" + ua
}

// linkedPaths lists the same-site paths a decoy links to (href="/…" or src="/…", at
// most 64), scanning the bytes once: a regexp here cost a third of a hit's CPU. Paths
// that carry one of the response's tokens are left out: coming back to them is a
// callback, never a probe, and as each response has fresh ones, remembering them would
// change (and rewrite) the session's state on every hit.
func linkedPaths(body []byte, places []decoy.Placement) []string {
	var out []string
	for rest := body; len(out) < 64; {
		i := bytes.Index(rest, []byte(`="/`))
		if i < 0 {
			break
		}
		attrOK := i >= 4 && (bytes.Equal(rest[i-4:i], []byte("href")) || bytes.Equal(rest[i-3:i], []byte("src")))
		rest = rest[i+2:]
		end := bytes.IndexAny(rest, "\"#? \n")
		if end < 0 || end > 256 || !attrOK {
			continue
		}
		if p := string(rest[:end]); !slices.Contains(out, p) && !carriesToken(p, places) {
			out = append(out, p)
		}
	}
	return out
}

func carriesToken(path string, places []decoy.Placement) bool {
	for _, pl := range places {
		if pl.Token != "" && strings.Contains(path, pl.Token) {
			return true
		}
	}
	return false
}
