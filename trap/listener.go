package trap

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flytrap/flytrap/botauth"
	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/schema"
	"github.com/flytrap/flytrap/fingerprint"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/record"
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
	done chan error // nil: nobody waits (a journaled hit acknowledged, a replayed one)
	seg  *segment   // the journal's segment that holds it (nil: none, or an earlier run's)
}

// hitRecord is everything the recorder needs of one request: the hit to store
// (record.Hit: the request as detect.Observe reads it, detect.Observation, and its row),
// the trap it hit and the tokens it carried.
type hitRecord struct {
	record.Hit
	trap *ent.Trap
	refs []decoy.TokenRef
}

// ServeHTTP is the trap listener: the decoy of an active trap, an answer to a token
// coming back, or a bland 404, each sent only once its hit is durable. It reads top to
// bottom: the route, the kind's answer, the observation recorded, the queue.
func (e *Engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := e.now().UTC()
	rt, sr, ok := e.route(w, r)
	if !ok {
		return
	}
	var v visit
	e.begin(&v, r, now, rt, sr)
	defer e.leave(&v)
	if !e.answer(&v) {
		writeRendered(w, r, v.resp) // a stranger's probe: remembered, not recorded
		return
	}
	// A recorded hit claiming a crawler whose operator documents reverse DNS waits for its
	// verification at most the budget (the lookup goes on into the cache), and a signed one
	// for its signature's (their waits overlap); a stranger's probe above starts neither.
	dns := e.cfg.Crawlers.Start(detect.LookupUA(v.rec.UA), v.rec.IP)
	e.verifySignature(&v)
	v.rec.DNS, v.rec.DNSHost = dns.Result(e.cfg.CrawlerDNSBudget)
	if !e.enqueue(w, v.rec) {
		return
	}
	e.respond(w, &v)
}

// visit is one request on its way through the listener.
type visit struct {
	r       *http.Request
	now     time.Time
	sr      *siteRoutes
	body    []byte
	counted bool       // counted in flight (see Engine.inflight) until settle
	rec     *hitRecord // what is recorded of it
	snippet *ent.Trap  // the trap a snippet token it carried names
	resp    decoy.Rendered

	stream   *mcpStream // a legacy MCP stream this GET opens, or this POST answers on
	opened   bool       // this request opened stream (and must release it)
	endpoint string     // where an opened stream tells its client to POST
	legacy   []byte     // JSON-RPC responses to send on stream
}

// route finds the site the request's Host names, or answers the request itself: 503
// while stopping or without routes, a bland 404 for a host of no site.
func (e *Engine) route(w http.ResponseWriter, r *http.Request) (*routes, *siteRoutes, bool) {
	if e.stopped.Load() {
		unavailable(w)
		return nil, nil, false
	}
	rt, err := e.routes.get(r.Context())
	if err != nil {
		e.log.Error("loading trap routes", "err", err)
		unavailable(w)
		return nil, nil, false
	}
	sr := rt.site(r.Host)
	if sr == nil {
		writeRendered(w, r, decoy.NotFound(r.URL.Path))
		return nil, nil, false
	}
	return rt, sr, true
}

// begin reads the request's body, counts it in flight until its answer is written or its
// stream opened (the writer lingers only for requests so counted, Run), and starts its
// record: the request's facts and the tokens it carried that count on the site.
func (e *Engine) begin(v *visit, r *http.Request, now time.Time, rt *routes, sr *siteRoutes) {
	body, truncated := readBody(r)
	e.inflight.Add(1)
	*v = visit{r: r, now: now, sr: sr, body: body, counted: true}
	v.rec = &hitRecord{Hit: record.Hit{
		ID: ids.New(ids.Hit), Org: sr.site.OrgID, Site: sr.site.ID,
		Truncated: truncated || len(body) > schema.MaxHitBody,
		Observation: detect.Observation{
			At: now, Method: r.Method, Host: r.Host,
			Path: bound(r.URL.Path, maxPath), Query: bound(r.URL.RawQuery, maxQuery),
			Headers: boundHeaders(r.Header), Body: bound(string(body), schema.MaxHitBody),
			IP: clientIP(r, e.cfg.TrustedProxies), UA: bound(r.UserAgent(), maxUserAgent),
		},
	}}
	e.fingerprints(&v.rec.Observation, r)
	text := requestText(r, body)
	refs := decoy.FindTokens(e.key, text)
	refs = append(refs, e.findAWSKeys(r.Context(), v.rec.Org, text, now)...)
	v.rec.refs, v.snippet = e.checkRefs(refs, rt, sr)
}

// fingerprints fills in what the connection proved of the client, and the stack family
// it points to. A trusted proxy's connection proves only the proxy: behind one, the JA4 is
// the one its header (--trap-ja4-header) names, if well-formed, and nothing else is kept.
func (e *Engine) fingerprints(o *detect.Observation, r *http.Request) {
	if isTrusted(addrOf(r.RemoteAddr), e.cfg.TrustedProxies) {
		if h := e.cfg.JA4Header; h != "" {
			if v := r.Header.Get(h); fingerprint.ValidJA4(v) {
				o.JA4 = v
			}
		}
	} else if fp := fingerprint.FromContext(r.Context()); fp != nil {
		o.JA4, o.H2, o.HeaderOrder = fp.JA4, fp.H2, fp.Order
	}
	o.Stack = fingerprint.Family(o.JA4, o.H2, o.HeaderOrder)
}

// answer chooses the answer: the kind of the trap at the path answers, else the request's
// token gets its answer, else a 404. False: a stranger's probe, answered but not recorded.
func (e *Engine) answer(v *visit) bool {
	switch t := v.sr.traps[v.r.URL.Path]; {
	case t != nil:
		v.rec.Kind, v.rec.trap = "decoy", t.Trap
		e.answerTrap(v, t)
	case len(v.rec.refs) > 0:
		v.rec.Kind, v.rec.trap = "callback", v.snippet // a snippet's token is attributed to its trap
		v.resp = e.tokenResponse(v.r)
	default:
		if !e.answerNotFound(v) {
			return false
		}
	}
	v.rec.Status = v.resp.Status
	return true
}

// answerTrap is the trap's kind answering: in its protocol (a POST, or a legacy stream
// opened), with the 405 of a method it does not serve, or with its decoy.
func (e *Engine) answerTrap(v *visit, t *trapRoute) {
	if t.kind.Disallows() {
		v.rec.Disallow = []string{} // read, though its list was not served: the decoy's, when it is
	}
	switch r := v.r; {
	case t.kind.Speaks() && wantsLegacySSE(r):
		e.openLegacyStream(v, t)
	case t.kind.Speaks() && r.Method == http.MethodPost:
		e.answerProtocol(v, t)
	case !decoy.MethodAllowed(r.Method):
		v.resp = decoy.MethodNotAllowed(t.kind, r.Method)
	default:
		spec := e.spec(t, r, v.sr)
		v.resp = t.kind.Serve(e.key, spec, v.rec.ID) // released by leave, after its last write
		v.rec.Linked = v.resp.Links
		if v.rec.Linked == nil { // not from a skeleton, which knows its links
			v.rec.Linked = decoy.LinkedPaths(v.resp.Body, v.resp.Placements)
		}
		if spec.Disallow != nil {
			v.rec.Disallow = spec.Disallow
		}
	}
}

// openLegacyStream answers a GET asking for a protocol kind's legacy HTTP+SSE transport:
// a stream, served once the hit is durable (respond); the streamable transport's GET gets
// 405, and a site with too many streams open 503.
func (e *Engine) openLegacyStream(v *visit, t *trapRoute) {
	if streamableGET(v.r) {
		v.resp = decoy.Rendered{Status: http.StatusMethodNotAllowed, ContentType: "text/plain; charset=utf-8",
			Header: map[string]string{"Allow": "POST"}, Body: []byte("Method Not Allowed\n")}
		return
	}
	if v.stream = e.mcp.open(v.sr.site.ID, v.rec.IP); v.stream == nil {
		v.resp = decoy.Rendered{Status: http.StatusServiceUnavailable, ContentType: "text/plain; charset=utf-8",
			Header: map[string]string{"Retry-After": "30"}, Body: []byte("Too many connections\n")}
		return
	}
	v.opened, v.endpoint = true, t.Path+"?sessionId="+v.stream.id
	v.resp = decoy.Rendered{Status: http.StatusOK, ContentType: "text/event-stream"}
}

// answerProtocol answers a POST in the kind's protocol: directly, or, on the legacy
// transport's message endpoint, with 202 and the answer delivered on its stream (respond).
func (e *Engine) answerProtocol(v *visit, t *trapRoute) {
	res := t.kind.Answer(e.key, e.spec(t, v.r, v.sr), v.rec.ID, v.body)
	v.resp = decoy.Rendered{Status: res.Status, ContentType: "application/json", Body: res.Body}
	if res.ToolCalled {
		v.rec.Tool, v.rec.ToolArgs = res.ToolName, res.Arguments
	}
	id := v.r.URL.Query().Get("sessionId")
	if id == "" {
		return
	}
	switch v.stream = e.mcp.post(v.sr.site.ID, id); {
	case v.stream == nil:
		v.resp = decoy.Rendered{Status: http.StatusNotFound, ContentType: "text/plain; charset=utf-8", Body: []byte("Session not found\n")}
	case res.Status == http.StatusBadRequest:
		v.resp.ContentType = "text/plain; charset=utf-8"
	default:
		v.legacy = res.Body
		v.resp = decoy.Rendered{Status: http.StatusAccepted, ContentType: "text/plain; charset=utf-8", Body: []byte("Accepted")}
	}
}

// answerNotFound is the bland 404. A stranger's probe (no session yet) is remembered, not
// recorded (false): only visitors who touched a trap become sessions.
func (e *Engine) answerNotFound(v *visit) bool {
	rec := v.rec
	rec.Kind = "not_found"
	v.resp = decoy.NotFound(v.r.URL.Path)
	rec.Known = v.sr.paths()
	key := visitorKey(rec.Org, rec.IP, rec.UA)
	if vs, ok := e.visits.session(key); ok && v.now.Sub(vs.lastSeen) <= e.cfg.SessionIdle {
		return true
	}
	if detect.ProbeCounts(rec.Path, rec.UA, rec.Known) {
		e.visits.probe(key, rec.Path, v.now, detect.MaxProbes)
	}
	return false
}

// verifySignature records what the request's signature proves (Web Bot Auth), for a hit
// that is recorded: at no cost for an unsigned one; for a signed one, a check against a
// cached key directory, or a wait of at most the configured budget for one not cached
// (docs/decisions.md, "Signed agents verified on the listener, within a budget").
func (e *Engine) verifySignature(v *visit) {
	if !botauth.Signed(v.r.Header) {
		return
	}
	ctx := botauth.WithClient(v.r.Context(), v.rec.IP)                                   // directory fetches bounded per client network
	v.rec.Signature = e.sigs.Verify(ctx, v.r, v.body, len(v.body) >= maxReadBody, v.now) // readBody stops there
}

// enqueue hands the hit to the writer and waits until it is durable. False when it is not
// (the queue full, the write failed or took too long): the visitor was told 503, to retry.
func (e *Engine) enqueue(w http.ResponseWriter, rec *hitRecord) bool {
	rec.prepare()
	e.received.Add(1)
	if e.journal != nil {
		return e.enqueueJournaled(w, rec)
	}
	j := &job{rec: rec, done: make(chan error, 1)}
	select {
	case e.queue <- j:
	default:
		e.shed.Add(1)
		unavailable(w)
		return false
	}
	timer := time.NewTimer(e.cfg.WriteTimeout)
	defer timer.Stop()
	select {
	case err := <-j.done:
		if err == nil {
			return true
		}
	case <-timer.C: // it may still be written: the visitor is told to retry, never told it was kept
	}
	unavailable(w)
	return false
}

// enqueueJournaled writes the hit to the journal (journalHit): it is safe once written,
// and the answer waits for nothing more unless AckApplied.
func (e *Engine) enqueueJournaled(w http.ResponseWriter, rec *hitRecord) bool {
	j, err := e.journalHit(rec)
	switch {
	case errors.Is(err, ErrOverloaded), errors.Is(err, ErrJournalFull):
		e.shed.Add(1)
		unavailable(w)
		return false
	case err != nil:
		e.log.Error("journaling a hit failed", "err", err)
		unavailable(w)
		return false
	case j.done == nil:
		return true
	}
	timer := time.NewTimer(e.cfg.WriteTimeout)
	defer timer.Stop()
	select {
	case <-j.done:
		return true
	case <-timer.C: // it is journaled and will be applied: the visitor is told to retry all the same
	}
	unavailable(w)
	return false
}

// respond sends the answer of a durable hit: a legacy stream it opened is served (for
// minutes), and a protocol answer due on another request's stream is delivered there.
func (e *Engine) respond(w http.ResponseWriter, v *visit) {
	switch {
	case v.opened:
		e.settle(v) // a stream lasts minutes: no reason for the writer to wait (an answer takes microseconds)
		e.serveMCPStream(w, v.r, v.stream, v.endpoint)
		return
	case v.stream != nil:
		v.stream.deliver(v.legacy)
	}
	writeRendered(w, v.r, v.resp)
}

// leave releases what the request held once its answer is written.
func (e *Engine) leave(v *visit) {
	v.resp.Release() // a rendered body back to its pool: nothing reads it any more
	if v.opened {
		e.mcp.release(v.stream) // a no-op once serveMCPStream released it
	}
	e.settle(v)
}

// settle ends the request's count in flight, once.
func (e *Engine) settle(v *visit) {
	if v.counted {
		v.counted = false
		e.answered()
	}
}

func (e *Engine) spec(t *trapRoute, r *http.Request, sr *siteRoutes) decoy.Spec {
	s := SpecOf(t.Trap, r.Host)
	if t.kind.Disallows() {
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
	// Canonical keys and shared values set directly (net/http copies the header when the
	// response is written, and nothing changes a value in place): no key canonicalized and
	// no value slice allocated per response for the headers every decoy sends.
	h["Server"] = serverHeader
	for k, v := range resp.Header {
		h.Set(k, v)
	}
	if resp.ContentType != "" {
		h["Content-Type"] = contentTypeValue(resp.ContentType)
	}
	h["Content-Length"] = []string{strconv.Itoa(len(resp.Body))}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	if c := wholeConn(r, len(resp.Body)); c != nil {
		c.Hold()
		defer func() { // deferred: a panic below must not leave the connection holding its writes
			_ = http.NewResponseController(w).Flush() // what net/http still buffers, into the held bytes
			_ = c.Release()                           // a failed write closes the connection
		}()
	}
	w.WriteHeader(status)
	_, _ = w.Write(resp.Body)
}

var serverHeader = []string{decoy.ServerHeader}

// contentTypes holds a Content-Type value per type the decoys send (a handful, fixed in
// their code), shared by every response; at most maxContentTypes are kept, in case a
// type ever comes from elsewhere.
var (
	contentTypes  sync.Map // string → []string
	contentTypesN atomic.Int32
)

const maxContentTypes = 64

func contentTypeValue(ct string) []string {
	if v, ok := contentTypes.Load(ct); ok {
		return v.([]string)
	}
	if contentTypesN.Add(1) > maxContentTypes {
		return []string{ct}
	}
	v, _ := contentTypes.LoadOrStore(ct, []string{ct})
	return v.([]string)
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

// bound makes attacker text storable and cuts it to at most n bytes (record.Bound).
func bound(s string, n int) string { return record.Bound(s, n) }

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
