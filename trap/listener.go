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
	"github.com/flytrap/flytrap/internal/clip"
)

// Bounds on what the listener reads of a request.
const (
	maxReadBody  = 64 << 10 // read, for token and prompt detection
	maxUserAgent = 1024
	maxPath      = 2048
	maxQuery     = 4096
)

// headersSkipped are request headers no token comes back in: every other header is
// searched, as a planted secret may be sent in any (Authorization, X-Api-Key, Cookie,
// X-Auth-Token, Private-Token, a vendor's own).
var headersSkipped = map[string]bool{"Accept": true, "Accept-Encoding": true, "Accept-Language": true,
	"Connection": true, "Content-Length": true, "Content-Type": true, "User-Agent": true, "X-Forwarded-For": true}

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
	known      []string // not_found: the site's trap paths (near misses are typos)
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
	rt, err := e.routes.get(r.Context())
	if err != nil {
		e.log.Error("loading trap routes", "err", err)
		unavailable(w)
		return
	}
	sr := rt.site(r.Host)
	if sr == nil {
		writeRendered(w, r, decoy.NotFound(r.URL.Path))
		return
	}
	body, truncated := readBody(r)
	// Counted from here until its answer is written, or its stream opened: the writer
	// lingers only for requests so counted (Run).
	e.inflight.Add(1)
	counted := true
	settle := func() {
		if counted {
			counted = false
			e.answered()
		}
	}
	defer settle()
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
	text := requestText(r, body)
	rec.refs = decoy.FindTokens(e.key, text)
	rec.refs = append(rec.refs, e.findAWSKeys(r.Context(), rec.org, text, now)...)
	var snippetTrap *ent.Trap
	rec.refs, snippetTrap = e.checkRefs(rec.refs, rt, sr)

	var resp decoy.Rendered
	var (
		stream   *mcpStream // a legacy MCP stream this GET opens, or this POST answers on
		opened   bool       // this request opened stream (and must release it)
		endpoint string     // where an opened stream tells its client to POST
		legacy   []byte     // JSON-RPC responses to send on stream
	)
	defer func() {
		if opened {
			e.mcp.release(stream) // a no-op once serveMCPStream released it
		}
	}()
	t := sr.traps[r.URL.Path]
	mcpTrap := t != nil && decoy.MustKind(string(t.Type)).Post == decoy.PostMCP
	switch {
	case mcpTrap && wantsLegacySSE(r):
		rec.kind, rec.trap = "decoy", t
		switch {
		case streamableGET(r):
			resp = decoy.Rendered{Status: http.StatusMethodNotAllowed, ContentType: "text/plain; charset=utf-8",
				Header: map[string]string{"Allow": "POST"}, Body: []byte("Method Not Allowed\n")}
		default:
			if stream = e.mcp.open(sr.site.ID, rec.ip); stream == nil {
				resp = decoy.Rendered{Status: http.StatusServiceUnavailable, ContentType: "text/plain; charset=utf-8",
					Header: map[string]string{"Retry-After": "30"}, Body: []byte("Too many connections\n")}
			} else {
				opened, endpoint = true, t.Path+"?sessionId="+stream.id
				resp = decoy.Rendered{Status: http.StatusOK, ContentType: "text/event-stream"}
			}
		}
	case mcpTrap && r.Method == http.MethodPost:
		res := decoy.HandleMCP(e.key, e.spec(t, r, sr), rec.id, body)
		resp = decoy.Rendered{Status: res.Status, ContentType: "application/json", Body: res.Body}
		rec.kind, rec.trap = "decoy", t
		if res.ToolCalled {
			rec.tool, rec.toolArgs = res.ToolName, res.Arguments
		}
		if id := r.URL.Query().Get("sessionId"); id != "" { // the legacy transport's message endpoint
			switch stream = e.mcp.post(sr.site.ID, id); {
			case stream == nil:
				resp = decoy.Rendered{Status: http.StatusNotFound, ContentType: "text/plain; charset=utf-8", Body: []byte("Session not found\n")}
			case res.Status == http.StatusBadRequest:
				resp.ContentType = "text/plain; charset=utf-8"
			default:
				legacy = res.Body
				resp = decoy.Rendered{Status: http.StatusAccepted, ContentType: "text/plain; charset=utf-8", Body: []byte("Accepted")}
			}
		}
	case t != nil && !decoy.MethodAllowed(r.Method):
		resp = decoy.MethodNotAllowed(decoy.MustKind(string(t.Type)), r.Method)
		rec.kind, rec.trap = "decoy", t
	case t != nil:
		spec := e.spec(t, r, sr)
		resp = decoy.Render(e.key, spec, rec.id)
		defer resp.Release() // after the last write of resp.Body below; LinkedPaths copies what it keeps
		rec.kind, rec.trap = "decoy", t
		rec.linked = resp.Links
		if rec.linked == nil { // not from a skeleton, which knows its links
			rec.linked = decoy.LinkedPaths(resp.Body, resp.Placements)
		}
		if spec.Disallow != nil {
			rec.disallow = spec.Disallow
		}
	case len(rec.refs) > 0:
		rec.kind, rec.trap = "callback", snippetTrap // a snippet's token is attributed to its trap
		resp = e.tokenResponse(r)
	default:
		rec.kind = "not_found"
		resp = decoy.NotFound(r.URL.Path)
		rec.known = sr.paths()
		// A stranger's probe is remembered, not recorded: only visitors who touched a trap become sessions.
		key := visitorKey(rec.org, rec.ip, rec.ua)
		if vs, ok := e.visits.session(key); !ok || now.Sub(vs.lastSeen) > e.cfg.SessionIdle {
			if detect.ProbeCounts(rec.path, rec.ua, rec.known) {
				e.visits.probe(key, rec.path, now, detect.MaxProbes)
			}
			writeRendered(w, r, resp)
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
	switch {
	case opened:
		settle() // a stream lasts minutes: no reason for the writer to wait (an answer takes microseconds)
		e.serveMCPStream(w, r, stream, endpoint)
		return
	case stream != nil:
		stream.deliver(legacy)
	}
	writeRendered(w, r, resp)
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

// requestText is everything of a request a token may come back in: path, query, header
// values (Authorization and Cookie first), a Basic auth's user and password, the body.
func requestText(r *http.Request, body []byte) string {
	var b strings.Builder
	b.WriteString(r.URL.Path)
	b.WriteByte('?')
	b.WriteString(r.URL.RawQuery)
	b.WriteByte('\n')
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		if !headersSkipped[k] {
			names = append(names, k)
		}
	}
	// The likely carriers first: FindTokens bounds its work, so junk headers cannot crowd them out.
	slices.SortFunc(names, func(a, b string) int {
		if c := headerRank(a) - headerRank(b); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for _, h := range names {
		for _, v := range r.Header.Values(h) {
			b.WriteString(bound(v, 2048))
			b.WriteByte('\n')
		}
	}
	if user, pass, ok := r.BasicAuth(); ok { // a planted secret may come back as a password
		b.WriteString(user + "\n" + pass + "\n")
	}
	b.Write(body)
	return b.String()
}

func headerRank(h string) int {
	switch h {
	case "Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key":
		return 0
	}
	return 1
}

// tokenResponse answers a request that carried a token (it is recorded either way): a URL
// a decoy planted, its path ending in a link token, gets content that fits it
// (decoy.TokenAnswer); a token anywhere else (a canary echoed in a query, a planted key in
// a header, a token pasted into another path) gets the same 404 as any unknown path.
func (e *Engine) tokenResponse(r *http.Request) decoy.Rendered {
	p := r.URL.Path
	last := p[strings.LastIndexByte(p, '/')+1:]
	for _, ref := range decoy.FindTokens(e.key, last) {
		if ref.Purpose == decoy.Callback || ref.Purpose == decoy.Challenge || ref.Purpose == decoy.Sink {
			return decoy.TokenAnswer(p, r.Method)
		}
	}
	return decoy.NotFound(p)
}

func writeRendered(w http.ResponseWriter, r *http.Request, resp decoy.Rendered) {
	h := w.Header()
	h.Set("Server", decoy.ServerHeader)
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
	if c := wholeConn(r, len(resp.Body)); c != nil {
		c.hold()
		defer func() { // deferred: a panic below must not leave the connection holding its writes
			_ = http.NewResponseController(w).Flush() // what net/http still buffers, into the held bytes
			_ = c.release()                           // a failed write closes the connection
		}()
	}
	w.WriteHeader(status)
	_, _ = w.Write(resp.Body)
}

func unavailable(w http.ResponseWriter) {
	w.Header().Set("Server", decoy.ServerHeader)
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, "<html><head><title>503 Service Temporarily Unavailable</title></head><body><center><h1>503 Service Temporarily Unavailable</h1></center></body></html>\n")
}

func readBody(r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody { // most hits: a GET, no body to make room for
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
	return clip.Bytes(s, n)
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
