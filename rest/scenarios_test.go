package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/session"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/record"
)

// ---- helpers shared by scenarios_test.go, golden_test.go and agree_test.go ----

// apiReply is one REST response, its body decoded with json.Number so integers stay integers.
type apiReply struct {
	What   string // "METHOD path", for messages
	Status int
	Header http.Header
	Raw    []byte
	Body   any // nil when the body is not JSON
}

// obj is the body as an object (nil if it is not one).
func (r apiReply) obj() map[string]any {
	m, _ := r.Body.(map[string]any)
	return m
}

// data is the "data" member of a dashboard response.
func (r apiReply) data() any { return r.obj()["data"] }

// plain decodes the body again without json.Number, for comparisons with GraphQL answers.
func (r apiReply) plain(t testing.TB) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(r.Raw, &v); err != nil {
		t.Fatalf("%s: body is not JSON: %v: %q", r.What, err, r.Raw)
	}
	return v
}

// hiddenLength hides a reader's length from net/http, so the body is sent chunked.
type hiddenLength struct{ io.Reader }

// restCall sends one request to the real router. body is nil (no body), a string or
// []byte (sent as is), an io.Reader (sent chunked) or a value (sent as JSON).
// headers are name/value pairs. Redirects are not followed.
func restCall(t testing.TB, env *ft.Env, token, method, path string, body any, headers ...string) apiReply {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = hiddenLength{b}
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("encode body: %v", err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, env.HTTP.URL+path, rd)
	if err != nil {
		t.Fatalf("new request %s %s: %v", method, path, err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := *env.HTTP.Client()
	client.Timeout = 30 * time.Second
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	out := apiReply{What: method + " " + clipText(path, 120), Status: res.StatusCode, Header: res.Header, Raw: raw}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) == nil {
		out.Body = v
	}
	return out
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// mustOK fails unless r has status want and is JSON.
func mustOK(t testing.TB, r apiReply, want int) apiReply {
	t.Helper()
	if r.Status != want || r.Body == nil {
		t.Fatalf("%s: %d %s, want %d", r.What, r.Status, clipText(string(r.Raw), 2000), want)
	}
	return r
}

// wantError checks the document's error shape {"success": false, "error": "…"} with a
// non-empty message mentioning each of mention, and one of the statuses.
func wantError(t testing.TB, r apiReply, statuses []int, mention ...string) {
	t.Helper()
	if !slices.Contains(statuses, r.Status) {
		t.Errorf("%s: status %d, want %v: %s", r.What, r.Status, statuses, clipText(string(r.Raw), 500))
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want application/json", r.What, ct)
	}
	m := r.obj()
	msg, isString := m["error"].(string)
	if m == nil || len(m) != 2+len(conflictID(r.Status, m)) || m["success"] != false || !isString {
		t.Errorf("%s: body %s, want exactly {\"success\": false, \"error\": \"…\"} (and a 409's conflict_id)", r.What, clipText(string(r.Raw), 500))
		return
	}
	if strings.TrimSpace(msg) == "" {
		t.Errorf("%s: empty error message", r.What)
	}
	for _, s := range mention {
		if !strings.Contains(msg, s) {
			t.Errorf("%s: error %q does not name %q", r.What, msg, s)
		}
	}
}

// conflictID is a 409 body's conflict_id as a one-item list (none: empty), so that the
// error body's key count can allow for it.
func conflictID(status int, m map[string]any) []string {
	id, ok := m["conflict_id"].(string)
	if status != http.StatusConflict || !ok || id == "" {
		return nil
	}
	return []string{id}
}

// keysOf returns the sorted keys of an object.
func keysOf(v any) []string {
	m, _ := v.(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func wantKeys(t testing.TB, what string, v any, want ...string) {
	t.Helper()
	sort.Strings(want)
	if got := keysOf(v); !slices.Equal(got, want) {
		t.Errorf("%s: keys %v, want exactly %v", what, got, want)
	}
}

// restNewTrap creates a trap through POST /dashboard/api/traps and returns its data.
func restNewTrap(t testing.TB, env *ft.Env, key string, body map[string]any) map[string]any {
	t.Helper()
	r := mustOK(t, restCall(t, env, key, http.MethodPost, "/dashboard/api/traps", body), http.StatusCreated)
	d, _ := r.data().(map[string]any)
	if d == nil {
		t.Fatalf("POST /dashboard/api/traps: no data object: %s", r.Raw)
	}
	return d
}

// sessionSpec is a session to seed, as the detection engine would write it.
type sessionSpec struct {
	Class, Severity, IP, UA string
	First, Last             time.Time
	Score, Confidence       int
	Signals                 []string
	Model, Operator         string
	HitCount                int
	Tripwires, Prompts      int
	Traps                   []string
}

// seedSessions writes sessions of org in one statement, past the tenant policy.
func seedSessions(t testing.TB, env *ft.Env, org string, specs []sessionSpec) []*ent.Session {
	t.Helper()
	bulk := make([]*ent.SessionCreate, len(specs))
	for i, s := range specs {
		c := env.DB.Client.Session.Create().SetOrgID(org).
			SetSourceIP(s.IP).SetUserAgent(s.UA).
			SetClassification(session.Classification(s.Class)).SetSeverity(session.Severity(s.Severity)).
			SetScore(s.Score).SetConfidence(s.Confidence).
			SetFirstSeen(s.First.UTC()).SetLastSeen(s.Last.UTC()).
			SetHitCount(s.HitCount).SetTripwiresFired(s.Tripwires).SetPromptsCaptured(s.Prompts).
			SetExtractedModel(s.Model).SetExtractedOperator(s.Operator)
		if s.Signals != nil {
			c.SetSignalsFired(s.Signals)
		}
		if s.Traps != nil {
			c.SetTrapsTriggered(s.Traps)
		}
		bulk[i] = c
	}
	out, err := record.CreateSessions(ft.System(), env.DB.Client, bulk...)
	if err != nil {
		t.Fatalf("seed sessions: %v", err)
	}
	return out
}

// hitSpec is a hit to seed.
type hitSpec struct {
	Session                     *ent.Session
	TrapID, Method, Path, Query string
	Body                        string
	Headers                     map[string][]string
	At                          time.Time
	Truncated                   bool
	SourceIP, UserAgent         string
	JA4, H2, HeaderOrder        string // the client's fingerprints; "": none
}

// seedHits writes hits in one statement, past the tenant policy.
func seedHits(t testing.TB, env *ft.Env, specs []hitSpec) []*ent.Hit {
	t.Helper()
	bulk := make([]*ent.HitCreate, len(specs))
	for i, h := range specs {
		method, path, ip, ua := h.Method, h.Path, h.SourceIP, h.UserAgent
		if method == "" {
			method = http.MethodGet
		}
		if path == "" {
			path = "/decoy"
		}
		if ip == "" {
			ip = h.Session.SourceIP
		}
		if ua == "" {
			ua = h.Session.UserAgent
		}
		headers := h.Headers
		if headers == nil {
			headers = map[string][]string{"Accept": {"*/*"}}
		}
		c := env.DB.Client.Hit.Create().SetOrgID(h.Session.OrgID).SetSessionID(h.Session.ID).
			SetMethod(method).SetPath(path).SetQuery(h.Query).SetBody(h.Body).SetBodyTruncated(h.Truncated).
			SetHeaders(headers).SetSourceIP(ip).SetUserAgent(ua).
			SetReceivedAt(h.At.UTC()).SetReceivedHour(h.At.Unix() / 3600)
		if h.TrapID != "" {
			c.SetTrapID(h.TrapID)
		}
		if h.JA4 != "" {
			c.SetJa4(h.JA4)
		}
		if h.H2 != "" {
			c.SetH2Fingerprint(h.H2)
		}
		if h.HeaderOrder != "" {
			c.SetHeaderOrder(h.HeaderOrder)
		}
		bulk[i] = c
	}
	out, err := record.CreateHits(ft.System(), env.DB.Client, bulk...)
	if err != nil {
		t.Fatalf("seed hits: %v", err)
	}
	return out
}

var (
	allClasses    = []string{"HUMAN", "BOT", "CRAWLER", "AI_CRAWLER", "AI_ASSISTANT", "AI_AGENT", "AI_AGENT_MALICIOUS", "SCANNER"}
	allSeverities = []string{"critical", "high", "medium", "low"}
)

// variedSessions makes n sessions with varied classification, severity, source IP and
// times. Pairs share last_seen, so ordering and paging must break ties. Session i
// triggered trapA when i%3 == 0 and trapB when i%5 == 0.
func variedSessions(n int, base time.Time, trapA, trapB string) []sessionSpec {
	specs := make([]sessionSpec, n)
	for i := range specs {
		last := base.Add(-time.Duration(i/2)*7*time.Minute - time.Duration(i/2%10)*time.Millisecond)
		var traps []string
		if i%3 == 0 {
			traps = append(traps, trapA)
		}
		if i%5 == 0 {
			traps = append(traps, trapB)
		}
		specs[i] = sessionSpec{
			Class:      allClasses[i%len(allClasses)],
			Severity:   allSeverities[(i/3)%len(allSeverities)],
			IP:         fmt.Sprintf("198.51.100.%d", i%7),
			UA:         fmt.Sprintf("agent-%d/1.0", i),
			First:      last.Add(-time.Duration(i%5) * 20 * time.Minute),
			Last:       last,
			Score:      (i * 37) % 101,
			Confidence: (i * 53) % 101,
			Signals:    [][]string{{}, {"CALLBACK_HIT"}, {"INJECTION_FOLLOWED", "SYSTEM_PROMPT_LEAKED"}}[i%3],
			Model:      []string{"", "gpt-4o", "claude-3"}[i%3],
			Operator:   []string{"", "acme"}[i%2],
			HitCount:   len(traps),
			Tripwires:  i % 3,
			Prompts:    i % 2,
			Traps:      traps,
		}
	}
	return specs
}

// hitsForTraps gives session i a hit on each trap it triggered.
func hitsForTraps(sessions []*ent.Session) []hitSpec {
	var hits []hitSpec
	for _, s := range sessions {
		for j, tr := range s.TrapsTriggered {
			hits = append(hits, hitSpec{Session: s, TrapID: tr, At: s.LastSeen.Add(-time.Duration(j) * time.Second)})
		}
	}
	return hits
}

// walkSessions follows pagination.next_cursor from the first page to the last and
// returns every session in the order served.
func walkSessions(t testing.TB, env *ft.Env, key string, q url.Values, limit int) []map[string]any {
	t.Helper()
	var all []map[string]any
	q = cloneQuery(q)
	q.Set("limit", fmt.Sprint(limit))
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatal("pagination does not end")
		}
		r := mustOK(t, restCall(t, env, key, http.MethodGet, "/dashboard/api/sessions?"+q.Encode(), nil), http.StatusOK)
		data, _ := r.data().([]any)
		if len(data) > limit {
			t.Fatalf("%s: %d sessions, over the limit %d", r.What, len(data), limit)
		}
		for _, s := range data {
			all = append(all, s.(map[string]any))
		}
		p, _ := r.obj()["pagination"].(map[string]any)
		more, isBool := p["has_more"].(bool)
		next, isString := p["next_cursor"].(string)
		if !isBool || !isString {
			t.Fatalf("%s: pagination %v, want {has_more: bool, next_cursor: string}", r.What, p)
		}
		if !more {
			return all
		}
		if next == "" || len(data) != limit {
			t.Fatalf("%s: has_more with %d sessions and next_cursor %q", r.What, len(data), next)
		}
		q.Set("cursor", next)
	}
}

func cloneQuery(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = slices.Clone(v)
	}
	return out
}

func idsOf(list []map[string]any) []string {
	out := make([]string, len(list))
	for i, m := range list {
		out[i], _ = m["id"].(string)
	}
	return out
}

// ---- the scenario table: route × token scope × organization ------------------

type callerKind int

const (
	anonymous callerKind = iota
	readOnly
	readWrite
	adminKey
	otherOrgAdmin
)

var callers = []callerKind{anonymous, readOnly, readWrite, adminKey, otherOrgAdmin}

func (c callerKind) String() string {
	return [...]string{"no-token", "read-only", "read-write", "admin", "other-org-admin"}[c]
}

type scenarioFixture struct {
	env             *ft.Env
	a, b            ft.Tenant
	aTrap, aSession string // A's resources that every caller looks at
	bTrap, bSession string
	paths           int
}

func (fx *scenarioFixture) token(c callerKind) string {
	switch c {
	case readOnly:
		return fx.a.ReadOnly
	case readWrite:
		return fx.a.ReadWrite
	case adminKey:
		return fx.a.Admin
	case otherOrgAdmin:
		return fx.b.Admin
	}
	return ""
}

func (fx *scenarioFixture) org(c callerKind) string {
	if c == otherOrgAdmin {
		return fx.b.Org.ID
	}
	return fx.a.Org.ID
}

// freshTrap is a new trap of A, for a scenario that changes or deletes one.
func (fx *scenarioFixture) freshTrap(t testing.TB) string {
	t.Helper()
	fx.paths++
	d := restNewTrap(t, fx.env, fx.a.ReadWrite, map[string]any{"name": "target", "type": "api", "path": fmt.Sprintf("/fresh/%d", fx.paths)})
	return d["id"].(string)
}

// snapshot is all of A's data as A's admin reads it.
func (fx *scenarioFixture) snapshot(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{
		"/dashboard/api/traps",
		"/dashboard/api/sessions?limit=100",
		"/dashboard/api/sessions/" + fx.aSession,
		"/dashboard/api/analytics/severity",
		"/api/v1/events?limit=100",
	} {
		r := mustOK(t, restCall(t, fx.env, fx.a.Admin, http.MethodGet, p, nil), http.StatusOK)
		b.Write(r.Raw)
	}
	return b.String()
}

type routeCase struct {
	pattern string
	method  string
	path    func(t testing.TB, fx *scenarioFixture) string
	body    func(fx *scenarioFixture) any
	write   bool // needs read-write
	ownsID  bool // the path names one of A's resources: another organization gets 404
	ok      int
	check   func(t testing.TB, fx *scenarioFixture, c callerKind, path string, r apiReply)
}

func fixedPath(p string) func(testing.TB, *scenarioFixture) string {
	return func(testing.TB, *scenarioFixture) string { return p }
}

func dashboardList(t testing.TB, _ *scenarioFixture, _ callerKind, _ string, r apiReply) {
	t.Helper()
	wantKeys(t, r.What, r.Body, "success", "data")
	if r.obj()["success"] != true {
		t.Errorf("%s: success is not true", r.What)
	}
	if _, isList := r.data().([]any); !isList {
		t.Errorf("%s: data is not an array: %s", r.What, r.Raw)
	}
}

func dashboardObject(t testing.TB, _ *scenarioFixture, _ callerKind, _ string, r apiReply) {
	t.Helper()
	wantKeys(t, r.What, r.Body, "success", "data")
	if r.obj()["success"] != true {
		t.Errorf("%s: success is not true", r.What)
	}
	if _, isObj := r.data().(map[string]any); !isObj {
		t.Errorf("%s: data is not an object: %s", r.What, r.Raw)
	}
}

func scenarioRoutes() []routeCase {
	return []routeCase{
		{pattern: "GET /dashboard/api/traps", method: http.MethodGet, path: fixedPath("/dashboard/api/traps"), ok: http.StatusOK,
			check: func(t testing.TB, fx *scenarioFixture, c callerKind, _ string, r apiReply) {
				dashboardList(t, fx, c, "", r)
				own := fx.aTrap
				if c == otherOrgAdmin {
					own = fx.bTrap
				}
				if !bytes.Contains(r.Raw, []byte(own)) {
					t.Errorf("%s as %s: own trap %s missing", r.What, c, own)
				}
			}},
		{pattern: "POST /dashboard/api/traps", method: http.MethodPost, write: true, ok: http.StatusCreated,
			path: fixedPath("/dashboard/api/traps"),
			body: func(fx *scenarioFixture) any {
				fx.paths++
				return map[string]any{"name": "created", "type": "page", "path": fmt.Sprintf("/created/%d", fx.paths), "description": "d"}
			},
			check: func(t testing.TB, fx *scenarioFixture, c callerKind, _ string, r apiReply) {
				dashboardObject(t, fx, c, "", r)
				d, _ := r.data().(map[string]any)
				if d["org_id"] != fx.org(c) || d["name"] != "created" || d["active"] != json.Number("1") {
					t.Errorf("%s as %s: created %v", r.What, c, d)
				}
			}},
		{pattern: "PATCH /dashboard/api/traps/{id}", method: http.MethodPatch, write: true, ownsID: true, ok: http.StatusOK,
			path: func(t testing.TB, fx *scenarioFixture) string { return "/dashboard/api/traps/" + fx.freshTrap(t) },
			body: func(*scenarioFixture) any { return map[string]any{"name": "renamed", "active": 0} },
			check: func(t testing.TB, fx *scenarioFixture, c callerKind, path string, r apiReply) {
				dashboardObject(t, fx, c, "", r)
				d, _ := r.data().(map[string]any)
				if d["id"] != strings.TrimPrefix(path, "/dashboard/api/traps/") || d["name"] != "renamed" || d["active"] != json.Number("0") {
					t.Errorf("%s as %s: updated %v", r.What, c, d)
				}
			}},
		{pattern: "DELETE /dashboard/api/traps/{id}", method: http.MethodDelete, write: true, ownsID: true, ok: http.StatusOK,
			path: func(t testing.TB, fx *scenarioFixture) string { return "/dashboard/api/traps/" + fx.freshTrap(t) },
			check: func(t testing.TB, fx *scenarioFixture, c callerKind, path string, r apiReply) {
				dashboardObject(t, fx, c, "", r)
				id := strings.TrimPrefix(path, "/dashboard/api/traps/")
				if d := r.data(); !reflect.DeepEqual(d, map[string]any{"id": id, "deleted": true}) {
					t.Errorf("%s: data %v, want {id: %s, deleted: true}", r.What, d, id)
				}
				list := mustOK(t, restCall(t, fx.env, fx.a.ReadOnly, http.MethodGet, "/dashboard/api/traps", nil), http.StatusOK)
				if bytes.Contains(list.Raw, []byte(id)) {
					t.Errorf("deleted trap %s is still listed", id)
				}
			}},
		{pattern: "GET /dashboard/api/sessions", method: http.MethodGet, path: fixedPath("/dashboard/api/sessions"), ok: http.StatusOK,
			check: func(t testing.TB, fx *scenarioFixture, c callerKind, _ string, r apiReply) {
				wantKeys(t, r.What, r.Body, "success", "data", "pagination")
				own := fx.aSession
				if c == otherOrgAdmin {
					own = fx.bSession
				}
				if !bytes.Contains(r.Raw, []byte(own)) {
					t.Errorf("%s as %s: own session %s missing", r.What, c, own)
				}
			}},
		{pattern: "GET /dashboard/api/sessions/{id}", method: http.MethodGet, ownsID: true, ok: http.StatusOK,
			path: func(_ testing.TB, fx *scenarioFixture) string { return "/dashboard/api/sessions/" + fx.aSession },
			check: func(t testing.TB, fx *scenarioFixture, c callerKind, _ string, r apiReply) {
				dashboardObject(t, fx, c, "", r)
				if d, _ := r.data().(map[string]any); d["id"] != fx.aSession {
					t.Errorf("%s: data %v", r.What, d)
				}
			}},
		{pattern: "GET /dashboard/api/analytics/overview", method: http.MethodGet, path: fixedPath("/dashboard/api/analytics/overview"), ok: http.StatusOK, check: dashboardObject},
		{pattern: "GET /dashboard/api/analytics/severity", method: http.MethodGet, path: fixedPath("/dashboard/api/analytics/severity"), ok: http.StatusOK, check: dashboardObject},
		{pattern: "GET /dashboard/api/analytics/timeline", method: http.MethodGet, path: fixedPath("/dashboard/api/analytics/timeline"), ok: http.StatusOK, check: dashboardList},
		{pattern: "GET /api/v1/events", method: http.MethodGet, path: fixedPath("/api/v1/events"), ok: http.StatusOK,
			check: func(t testing.TB, fx *scenarioFixture, c callerKind, _ string, r apiReply) {
				wantKeys(t, r.What, r.Body, "events", "has_more", "next_cursor")
			}},
		{pattern: "GET /api/v1/events/stream", method: http.MethodGet, path: fixedPath("/api/v1/events/stream"), ok: http.StatusOK},
	}
}

// streamStatus opens the event stream, reads the status line and headers and hangs up at once.
func streamStatus(t testing.TB, env *ft.Env, token string) apiReply {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.HTTP.URL+"/api/v1/events/stream", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := env.HTTP.Client().Do(req)
	if err != nil {
		t.Fatalf("GET /api/v1/events/stream: %v", err)
	}
	defer res.Body.Close()
	out := apiReply{What: "GET /api/v1/events/stream", Status: res.StatusCode, Header: res.Header}
	if res.StatusCode != http.StatusOK {
		out.Raw, _ = io.ReadAll(res.Body)
		dec := json.NewDecoder(bytes.NewReader(out.Raw))
		dec.UseNumber()
		_ = dec.Decode(&out.Body)
	}
	return out
}

func startScenarioFixture(t *testing.T, b ft.Backend) *scenarioFixture {
	env := ft.Start(t, b)
	fx := &scenarioFixture{env: env, a: env.Tenant("acme"), b: env.Tenant("other")}
	fx.aTrap = restNewTrap(t, env, fx.a.ReadWrite, map[string]any{"name": "A's trap", "type": "page", "path": "/a-trap"})["id"].(string)
	fx.bTrap = restNewTrap(t, env, fx.b.ReadWrite, map[string]any{"name": "B's trap", "type": "page", "path": "/b-trap"})["id"].(string)
	now := time.Now().UTC().Truncate(time.Millisecond)
	sa := seedSessions(t, env, fx.a.Org.ID, []sessionSpec{{Class: "AI_AGENT", Severity: "high", IP: "203.0.113.1", UA: "a", First: now.Add(-time.Hour), Last: now, Traps: []string{fx.aTrap}, HitCount: 1}})[0]
	sb := seedSessions(t, env, fx.b.Org.ID, []sessionSpec{{Class: "BOT", Severity: "low", IP: "203.0.113.2", UA: "b", First: now.Add(-time.Hour), Last: now, Traps: []string{fx.bTrap}, HitCount: 1}})[0]
	seedHits(t, env, []hitSpec{{Session: sa, TrapID: fx.aTrap, At: now}, {Session: sb, TrapID: fx.bTrap, At: now}})
	fx.aSession, fx.bSession = sa.ID, sb.ID
	return fx
}

// TestRESTScenarios runs every route as every kind of caller through the real router:
// no token → 401; read-only reads but may not write (403); read-write and admin write;
// another organization's admin gets 404 on A's ids (never 403) and sees none of A's
// data. A refused request leaves A's data exactly as it was.
func TestRESTScenarios(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		fx := startScenarioFixture(t, b)
		for _, rc := range scenarioRoutes() {
			for _, c := range callers {
				t.Run(rc.pattern+"/"+c.String(), func(t *testing.T) {
					want := rc.ok
					switch {
					case c == anonymous:
						want = http.StatusUnauthorized
					case c == readOnly && rc.write:
						want = http.StatusForbidden
					case c == otherOrgAdmin && rc.ownsID:
						want = http.StatusNotFound
					}
					path := rc.path(t, fx)
					var body any
					if rc.body != nil {
						body = rc.body(fx)
					}
					// Whatever another organization does, and whatever is refused, leaves A's data as it was.
					guard := want >= 400 || c == otherOrgAdmin
					before := ""
					if guard {
						before = fx.snapshot(t)
					}
					var r apiReply
					if rc.pattern == "GET /api/v1/events/stream" {
						r = streamStatus(t, fx.env, fx.token(c))
						if r.Status == http.StatusOK {
							if ct := r.Header.Get("Content-Type"); ct != "text/event-stream" {
								t.Errorf("stream Content-Type %q", ct)
							}
						}
					} else {
						r = restCall(t, fx.env, fx.token(c), rc.method, path, body)
					}
					if r.Status != want {
						t.Fatalf("%s as %s: %d %s, want %d", r.What, c, r.Status, clipText(string(r.Raw), 500), want)
					}
					if guard {
						if after := fx.snapshot(t); after != before {
							t.Errorf("%s as %s changed A's data", r.What, c)
						}
					}
					if want >= 400 {
						wantError(t, r, []int{want})
						if want == http.StatusUnauthorized && r.Header.Get("WWW-Authenticate") == "" {
							t.Errorf("%s: 401 without WWW-Authenticate", r.What)
						}
						return
					}
					// A successful answer never carries the other organization's data.
					foreign := []string{fx.bTrap, fx.bSession, fx.b.Org.ID}
					if c == otherOrgAdmin {
						foreign = []string{fx.aTrap, fx.aSession, fx.a.Org.ID}
					}
					for _, id := range foreign {
						if bytes.Contains(r.Raw, []byte(id)) {
							t.Errorf("%s as %s leaks %s: %s", r.What, c, id, clipText(string(r.Raw), 500))
						}
					}
					if rc.check != nil {
						rc.check(t, fx, c, path, r)
					}
				})
			}
		}
	})
}

// ---- errors everywhere ---------------------------------------------------------

type badCase struct {
	name     string
	anon     bool // send no token (default: A's read-write key)
	method   string
	path     string // may hold {trap} and {session}: A's ids
	body     any
	headers  []string
	statuses []int
	mention  []string
	allow    string // the Allow header a 405 must carry
}

func oneMiB() string { return `{"name":"` + strings.Repeat("x", 1<<20) + `","type":"api"}` }

func badCases() []badCase {
	const traps, sessions = "/dashboard/api/traps", "/dashboard/api/sessions"
	b400, b404 := []int{400}, []int{404}
	cases := []badCase{
		// Unknown routes.
		{name: "unknown dashboard route", method: "GET", path: "/dashboard/api/nope", statuses: b404},
		{name: "unknown route without token", anon: true, method: "GET", path: "/dashboard/api/nope", statuses: b404},
		{name: "unknown version prefix", method: "GET", path: "/api/v2/events", statuses: b404},
		{name: "too many segments", method: "PATCH", path: traps + "/{trap}/extra", body: `{"name":"x"}`, statuses: b404},
		{name: "unknown analytics", method: "GET", path: "/dashboard/api/analytics/nope", statuses: b404},
		// Wrong methods: 405 with Allow.
		{name: "PUT traps", method: "PUT", path: traps, body: `{}`, statuses: []int{405}, allow: "GET, POST"},
		{name: "DELETE traps", method: "DELETE", path: traps, statuses: []int{405}, allow: "GET, POST"},
		{name: "OPTIONS traps", method: "OPTIONS", path: traps, statuses: []int{405}, allow: "GET, POST"},
		{name: "GET one trap", method: "GET", path: traps + "/{trap}", statuses: []int{405}, allow: "PATCH, DELETE"},
		{name: "POST one trap", method: "POST", path: traps + "/{trap}", body: `{}`, statuses: []int{405}, allow: "PATCH, DELETE"},
		{name: "POST sessions", method: "POST", path: sessions, body: `{}`, statuses: []int{405}, allow: "GET"},
		{name: "DELETE session", method: "DELETE", path: sessions + "/{session}", statuses: []int{405}, allow: "GET"},
		{name: "POST overview", method: "POST", path: "/dashboard/api/analytics/overview", statuses: []int{405}, allow: "GET"},
		{name: "PUT timeline", method: "PUT", path: "/dashboard/api/analytics/timeline", statuses: []int{405}, allow: "GET"},
		{name: "POST events", method: "POST", path: "/api/v1/events", body: `{}`, statuses: []int{405}, allow: "GET"},
		{name: "DELETE stream", method: "DELETE", path: "/api/v1/events/stream", statuses: []int{405}, allow: "GET"},
		{name: "wrong method without token", anon: true, method: "PUT", path: traps, statuses: []int{405}, allow: "GET, POST"},
		// Bodies that are not JSON.
		{name: "POST not JSON", method: "POST", path: traps, body: "not json", statuses: b400, mention: []string{"body"}},
		{name: "POST empty body", method: "POST", path: traps, body: "", statuses: b400, mention: []string{"body"}},
		{name: "POST truncated JSON", method: "POST", path: traps, body: `{"name":"x",`, statuses: b400, mention: []string{"body"}},
		{name: "POST trailing data", method: "POST", path: traps, body: `{"name":"x","type":"api"} {}`, statuses: b400, mention: []string{"body"}},
		{name: "POST array", method: "POST", path: traps, body: `[{"name":"x","type":"api"}]`, statuses: b400, mention: []string{"body"}},
		{name: "POST string", method: "POST", path: traps, body: `"x"`, statuses: b400},
		{name: "POST wrong content type", method: "POST", path: traps, body: `{"name":"x","type":"api"}`, headers: []string{"Content-Type", "text/plain"}, statuses: b400, mention: []string{"Content-Type"}},
		{name: "PATCH not JSON", method: "PATCH", path: traps + "/{trap}", body: "{", statuses: b400, mention: []string{"body"}},
		{name: "PATCH no body", method: "PATCH", path: traps + "/{trap}", statuses: b400},
		// Too large.
		{name: "POST over 1 MiB", method: "POST", path: traps, body: oneMiB(), statuses: []int{413}},
		{name: "POST over 1 MiB chunked", method: "POST", path: traps, body: strings.NewReader(oneMiB()), statuses: []int{413}},
		{name: "PATCH over 1 MiB", method: "PATCH", path: traps + "/{trap}", body: oneMiB(), statuses: []int{413}},
		// Unknown fields and wrong types name the field.
		{name: "POST unknown field", method: "POST", path: traps, body: `{"name":"x","type":"api","bogus":1}`, statuses: b400, mention: []string{"bogus"}},
		{name: "POST id field", method: "POST", path: traps, body: `{"name":"x","type":"api","id":"trp_x"}`, statuses: b400, mention: []string{"id"}},
		{name: "POST active field", method: "POST", path: traps, body: `{"name":"x","type":"api","org_id":"org_x"}`, statuses: b400, mention: []string{"org_id"}},
		{name: "PATCH path (not updatable)", method: "PATCH", path: traps + "/{trap}", body: `{"path":"/elsewhere"}`, statuses: b400, mention: []string{"path"}},
		{name: "PATCH type (not updatable)", method: "PATCH", path: traps + "/{trap}", body: `{"type":"api"}`, statuses: b400, mention: []string{"type"}},
		{name: "POST name not a string", method: "POST", path: traps, body: `{"name":5,"type":"api"}`, statuses: b400, mention: []string{"name"}},
		{name: "POST type not a string", method: "POST", path: traps, body: `{"name":"x","type":1}`, statuses: b400, mention: []string{"type"}},
		{name: "POST description an array", method: "POST", path: traps, body: `{"name":"x","type":"api","description":[]}`, statuses: b400, mention: []string{"description"}},
		{name: "POST path an object", method: "POST", path: traps, body: `{"name":"x","type":"api","path":{}}`, statuses: b400, mention: []string{"path"}},
		{name: "PATCH name a boolean", method: "PATCH", path: traps + "/{trap}", body: `{"name":false}`, statuses: b400, mention: []string{"name"}},
		{name: "PATCH description a number", method: "PATCH", path: traps + "/{trap}", body: `{"description":1}`, statuses: b400, mention: []string{"description"}},
		// Invalid values name the field.
		{name: "POST empty name", method: "POST", path: traps, body: `{"name":"","type":"api"}`, statuses: b400, mention: []string{"name"}},
		{name: "POST name too long", method: "POST", path: traps, body: `{"name":"` + strings.Repeat("n", 201) + `","type":"api"}`, statuses: b400, mention: []string{"name"}},
		{name: "POST unknown type", method: "POST", path: traps, body: `{"name":"x","type":"nope"}`, statuses: b400, mention: []string{"type"}},
		{name: "POST upper-case type", method: "POST", path: traps, body: `{"name":"x","type":"PAGE"}`, statuses: b400, mention: []string{"type"}},
		{name: "POST missing name", method: "POST", path: traps, body: `{"type":"api"}`, statuses: b400, mention: []string{"name"}},
		{name: "POST missing type", method: "POST", path: traps, body: `{"name":"x"}`, statuses: b400, mention: []string{"type"}},
		{name: "POST null name", method: "POST", path: traps, body: `{"name":null,"type":"api"}`, statuses: b400, mention: []string{"name"}},
		{name: "POST relative path", method: "POST", path: traps, body: `{"name":"x","type":"api","path":"no-slash"}`, statuses: b400, mention: []string{"path"}},
		{name: "POST path with a space", method: "POST", path: traps, body: `{"name":"x","type":"api","path":"/a b"}`, statuses: b400, mention: []string{"path"}},
		{name: "PATCH empty name", method: "PATCH", path: traps + "/{trap}", body: `{"name":""}`, statuses: b400, mention: []string{"name"}},
		{name: "PATCH empty object", method: "PATCH", path: traps + "/{trap}", body: `{}`, statuses: b400},
		{name: "PATCH only nulls", method: "PATCH", path: traps + "/{trap}", body: `{"name":null,"active":null}`, statuses: b400},
		// Versions.
		{name: "unknown Flytrap-Version", method: "GET", path: traps, headers: []string{"Flytrap-Version", "1999-01-01"}, statuses: b400, mention: []string{"Flytrap-Version"}},
	}
	// PATCH active: 0/1/true/false are accepted (tested apart); anything else is refused naming the field.
	for _, v := range []string{`"yes"`, `2`, `-1`, `"1"`, `"true"`, `1.0`, `[]`, `{}`} {
		cases = append(cases, badCase{name: "PATCH active " + v, method: "PATCH", path: traps + "/{trap}", body: `{"active":` + v + `}`, statuses: b400, mention: []string{"active"}})
	}
	// Malformed and unknown ids: 400 or 404, never 500.
	for _, id := range []string{
		"nope", "trp_zzzzzzzzzzzzzzzzzzzzzzzzzz", "trp_00000000000000000000000000", "ses_00000000000000000000000000",
		"TRP_00000000000000000000000000", strings.Repeat("a", 3000), "%00", "x%00y", "%ff", "%c3%28", "%F0%9F%92%A9",
		"1%20OR%201%3D1", "%27%3B%20DROP%20TABLE%20traps%3B--", "%2e", "-1", "0",
	} {
		for _, m := range []struct{ method, path string }{
			{"PATCH", traps + "/" + id}, {"DELETE", traps + "/" + id}, {"GET", sessions + "/" + id},
		} {
			var body any
			if m.method == "PATCH" {
				body = `{"name":"x"}`
			}
			cases = append(cases, badCase{name: m.method + " id " + clipText(id, 30), method: m.method, path: m.path, body: body, statuses: []int{400, 404}})
		}
	}
	cases = append(cases,
		badCase{name: "GET a trap id as a session", method: "GET", path: sessions + "/{trap}", statuses: b404},
		badCase{name: "PATCH a session id as a trap", method: "PATCH", path: traps + "/{session}", body: `{"name":"x"}`, statuses: []int{400, 404}},
		badCase{name: "DELETE a session id as a trap", method: "DELETE", path: traps + "/{session}", statuses: []int{400, 404}},
	)
	// Sessions list parameters.
	for _, q := range []string{
		"limit=0", "limit=101", "limit=x", "limit=-1", "limit=1.5", "limit=1&limit=2",
		"classification=nope", "classification=AI", "severity=extreme", "severity=HIGHEST",
		"since=yesterday", "since=2026-13-01T00:00:00Z", "until=1", "until=2026-11-22",
		"cursor=zz", "cursor=%00", "cursor=" + url.QueryEscape("cG9zOjE"), "bogus=1", "page=2", "trap=trp_x",
	} {
		cases = append(cases, badCase{name: "sessions ?" + q, method: "GET", path: sessions + "?" + q, statuses: b400})
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=x", "cursor=zz", "type=nope", "bogus=1"} {
		cases = append(cases, badCase{name: "events ?" + q, method: "GET", path: "/api/v1/events?" + q, statuses: b400})
	}
	return cases
}

// TestRESTErrorsEverywhere sends every kind of bad request to every route it applies
// to: each answer is {"success": false, "error": "…"} with the right status, and none is a 500.
func TestRESTErrorsEverywhere(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		fx := startScenarioFixture(t, b)
		before := fx.snapshot(t)
		for _, bc := range badCases() {
			t.Run(bc.name, func(t *testing.T) {
				as := readWrite
				if bc.anon {
					as = anonymous
				}
				path := strings.NewReplacer("{trap}", fx.aTrap, "{session}", fx.aSession).Replace(bc.path)
				r := restCall(t, fx.env, fx.token(as), bc.method, path, bc.body, bc.headers...)
				if r.Status >= 500 {
					t.Fatalf("%s: %d %s", r.What, r.Status, clipText(string(r.Raw), 300))
				}
				wantError(t, r, bc.statuses, bc.mention...)
				if bc.allow != "" && r.Header.Get("Allow") != bc.allow {
					t.Errorf("%s: Allow %q, want %q", r.What, r.Header.Get("Allow"), bc.allow)
				}
			})
		}
		if after := fx.snapshot(t); after != before {
			t.Error("bad requests changed A's data")
		}
	})
}

// TestRESTTrapWrites covers the writes that succeed: PATCH's active as 0/1/true/false,
// the active flag as an integer, a path picked by the service, and the active-path conflict.
func TestRESTTrapWrites(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		tr := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "flag", "type": "api", "path": "/flag"})
		id := tr["id"].(string)
		for _, c := range []struct{ in, want string }{{"0", "0"}, {"1", "1"}, {"false", "0"}, {"true", "1"}} {
			r := mustOK(t, restCall(t, env, a.ReadWrite, "PATCH", "/dashboard/api/traps/"+id, `{"active":`+c.in+`}`), http.StatusOK)
			d := r.data().(map[string]any)
			if d["active"] != json.Number(c.want) {
				t.Errorf("PATCH active %s: active %v, want %s", c.in, d["active"], c.want)
			}
		}
		// Name and description alone, and together.
		r := mustOK(t, restCall(t, env, a.ReadWrite, "PATCH", "/dashboard/api/traps/"+id, `{"description":"new words"}`), http.StatusOK)
		if d := r.data().(map[string]any); d["description"] != "new words" || d["name"] != "flag" || d["path"] != "/flag" || d["created_at"] != tr["created_at"] {
			t.Errorf("PATCH description: %v", d)
		}

		// No path given: the service picks one.
		auto := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "auto", "type": "page"})
		if p, _ := auto["path"].(string); !strings.HasPrefix(p, "/") || len(p) < 2 {
			t.Errorf("picked path %q", auto["path"])
		}

		// A duplicate active path on the same site is a conflict; an inactive trap may share it.
		holder := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "dup", "type": "page", "path": "/dup"})
		dup := restCall(t, env, a.ReadWrite, "POST", "/dashboard/api/traps", map[string]any{"name": "dup2", "type": "api", "path": "/dup"})
		wantError(t, dup, []int{http.StatusConflict}, holder["id"].(string))
		if got := dup.obj()["conflict_id"]; got != holder["id"] {
			t.Errorf("409 conflict_id %v, want the trap holding the path, %v", got, holder["id"])
		}
		// The list filters: by path, by type, by site, by active; an unknown value is a 400.
		for q, want := range map[string]int{"?path=/dup": 1, "?path=/dup&type=api": 0, "?site_id=" + holder["site_id"].(string) + "&path=/dup&active=true": 1, "?active=false&path=/dup": 0} {
			got := restCall(t, env, a.ReadOnly, "GET", "/dashboard/api/traps"+q, nil)
			mustOK(t, got, http.StatusOK)
			if l, _ := got.data().([]any); len(l) != want {
				t.Errorf("GET /dashboard/api/traps%s: %d traps, want %d", q, len(l), want)
			}
		}
		wantError(t, restCall(t, env, a.ReadOnly, "GET", "/dashboard/api/traps?type=nope", nil), []int{http.StatusBadRequest}, "type")

		// Idempotency-Key: a retry of the same create answers the first trap again and makes
		// none; the key with another request, or a second key header, is refused; a failed
		// create keeps nothing.
		idem := map[string]any{"name": "idem", "type": "page", "path": "/idem"}
		once := restCall(t, env, a.ReadWrite, "POST", "/dashboard/api/traps", idem, "Idempotency-Key", "k-1")
		mustOK(t, once, http.StatusCreated)
		again := restCall(t, env, a.ReadWrite, "POST", "/dashboard/api/traps", `{ "path": "/idem", "type": "page", "name": "idem" }`, "Idempotency-Key", "k-1")
		mustOK(t, again, http.StatusCreated)
		if string(again.Raw) != string(once.Raw) || once.Header.Get("Idempotent-Replayed") != "false" || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay: %s (%s), first %s (%s)", again.Raw, again.Header.Get("Idempotent-Replayed"), once.Raw, once.Header.Get("Idempotent-Replayed"))
		}
		if l, _ := mustOK(t, restCall(t, env, a.ReadOnly, "GET", "/dashboard/api/traps?path=/idem", nil), http.StatusOK).data().([]any); len(l) != 1 {
			t.Errorf("after a replayed create: %d traps at /idem, want 1", len(l))
		}
		// A key that may not create gets no replay either: the key and body are no credential.
		wantError(t, restCall(t, env, a.ReadOnly, "POST", "/dashboard/api/traps", idem, "Idempotency-Key", "k-1"), []int{http.StatusForbidden})
		wantError(t, restCall(t, env, a.ReadWrite, "POST", "/dashboard/api/traps", map[string]any{"name": "other", "type": "page", "path": "/idem-2"}, "Idempotency-Key", "k-1"),
			[]int{http.StatusConflict}, "Idempotency-Key", "different request")
		wantError(t, restCall(t, env, a.ReadWrite, "POST", "/dashboard/api/traps", idem, "Idempotency-Key", strings.Repeat("k", 256)), []int{http.StatusBadRequest}, "Idempotency-Key")
		// A create that fails (the path is held) keeps no key: once the path is free, the same key creates.
		wantError(t, restCall(t, env, a.ReadWrite, "POST", "/dashboard/api/traps", map[string]any{"name": "held", "type": "page", "path": "/idem"}, "Idempotency-Key", "k-2"), []int{http.StatusConflict}, "active trap")
		mustOK(t, restCall(t, env, a.ReadWrite, "POST", "/dashboard/api/traps", map[string]any{"name": "held", "type": "page", "path": "/idem-free"}, "Idempotency-Key", "k-2"), http.StatusCreated)
		wantError(t, restCall(t, env, a.ReadOnly, "GET", "/dashboard/api/traps?active=maybe", nil), []int{http.StatusBadRequest}, "active")
		first := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "shared", "type": "page", "path": "/shared"})
		mustOK(t, restCall(t, env, a.ReadWrite, "PATCH", "/dashboard/api/traps/"+first["id"].(string), `{"active":0}`), http.StatusOK)
		restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "shared again", "type": "page", "path": "/shared"})
		// Re-activating the first would make two active traps on one path.
		wantError(t, restCall(t, env, a.ReadWrite, "PATCH", "/dashboard/api/traps/"+first["id"].(string), `{"active":1}`), []int{http.StatusConflict})
		// Another organization may use the same path.
		restNewTrap(t, env, env.Tenant("other").ReadWrite, map[string]any{"name": "dup", "type": "page", "path": "/dup"})

		// site_id puts the trap on another of the organization's sites, where its path is free.
		second, err := env.DB.Client.Site.Create().SetOrgID(a.Org.ID).SetName("second").Save(ft.System())
		if err != nil {
			t.Fatal(err)
		}
		onSecond := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "dup on second", "type": "page", "path": "/dup", "site_id": second.ID})
		if onSecond["site_id"] != second.ID {
			t.Errorf("site_id %v, want %s", onSecond["site_id"], second.ID)
		}

		// site_id of another organization's site is refused, naming the REST field.
		other := env.Tenant("third")
		r = restCall(t, env, a.ReadWrite, "POST", "/dashboard/api/traps", map[string]any{"name": "x", "type": "api", "site_id": other.Site.ID})
		wantError(t, r, []int{http.StatusBadRequest, http.StatusNotFound})
		if msg, _ := r.obj()["error"].(string); !strings.Contains(msg, "site_id") {
			t.Errorf("POST /dashboard/api/traps with a bad site_id answers %q: the error must name the REST field site_id", msg)
		}
	})
}

// TestRESTDeleteKeepsSessions deletes a trap that recorded hits: the answer is
// {"success": true, "data": {"id": …, "deleted": true}}, and the sessions and hits stay,
// still attributed to the deleted trap's id.
func TestRESTDeleteKeepsSessions(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		id := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "doomed", "type": "api", "path": "/doomed"})["id"].(string)
		now := time.Now().UTC().Truncate(time.Millisecond)
		s := seedSessions(t, env, a.Org.ID, []sessionSpec{{Class: "AI_AGENT", Severity: "high", IP: "203.0.113.9", UA: "x", First: now, Last: now, HitCount: 1, Traps: []string{id}}})[0]
		hit := seedHits(t, env, []hitSpec{{Session: s, TrapID: id, At: now}})[0]

		r := mustOK(t, restCall(t, env, a.ReadWrite, "DELETE", "/dashboard/api/traps/"+id, nil), http.StatusOK)
		want := map[string]any{"success": true, "data": map[string]any{"id": id, "deleted": true}}
		if !reflect.DeepEqual(r.Body, want) {
			t.Errorf("DELETE answered %s, want %v", r.Raw, want)
		}
		// Deleting again: 404.
		wantError(t, restCall(t, env, a.ReadWrite, "DELETE", "/dashboard/api/traps/"+id, nil), []int{http.StatusNotFound})
		wantError(t, restCall(t, env, a.ReadWrite, "PATCH", "/dashboard/api/traps/"+id, `{"name":"x"}`), []int{http.StatusNotFound})

		d := mustOK(t, restCall(t, env, a.ReadOnly, "GET", "/dashboard/api/sessions/"+s.ID, nil), http.StatusOK).data().(map[string]any)
		hits, _ := d["hits"].([]any)
		if len(hits) != 1 || ft.Dig(hits, 0, "id") != hit.ID || ft.Dig(hits, 0, "trap_id") != id {
			t.Errorf("after the delete the session's hits are %v, want hit %s of trap %s", hits, hit.ID, id)
		}
		if tt, _ := d["traps_triggered"].([]any); len(tt) != 1 || tt[0] != id {
			t.Errorf("traps_triggered %v", d["traps_triggered"])
		}
		if got := idsOf(walkSessions(t, env, a.ReadOnly, url.Values{"trap_id": {id}}, 10)); !slices.Equal(got, []string{s.ID}) {
			t.Errorf("sessions?trap_id of the deleted trap: %v", got)
		}
		// The delete is in the event log, with the trap as it was.
		l := listEvents(t, env, a.ReadOnly, url.Values{"type": {"trap.deleted"}})
		if len(l.Events) != 1 || l.Events[0].Data["id"] != id || l.Events[0].Data["name"] != "doomed" {
			t.Errorf("trap.deleted events: %+v", l.Events)
		}
	})
}

// TestRESTSessionsList seeds 130 sessions and checks the list's filters, page sizes,
// order (newest last_seen first) and cursor walk (every session exactly once).
func TestRESTSessionsList(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		other := env.Tenant("other")
		trapA := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "A", "type": "page", "path": "/a"})["id"].(string)
		trapB := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "B", "type": "api", "path": "/b"})["id"].(string)
		base := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
		specs := variedSessions(130, base, trapA, trapB)
		sessions := seedSessions(t, env, a.Org.ID, specs)
		seedHits(t, env, hitsForTraps(sessions))
		// Noise in another organization, with the same IPs and times.
		seedSessions(t, env, other.Org.ID, variedSessions(20, base, "trp_x", "trp_y"))

		byID := map[string]sessionSpec{}
		for i, s := range sessions {
			byID[s.ID] = specs[i]
		}
		// Default page size 50, maximum 100.
		r := mustOK(t, restCall(t, env, a.ReadOnly, "GET", "/dashboard/api/sessions", nil), http.StatusOK)
		if n := len(r.data().([]any)); n != 50 || ft.Dig(r.obj(), "pagination", "has_more") != true {
			t.Errorf("default page: %d sessions (has_more %v), want 50 and more", n, ft.Dig(r.obj(), "pagination", "has_more"))
		}
		r = mustOK(t, restCall(t, env, a.ReadOnly, "GET", "/dashboard/api/sessions?limit=100", nil), http.StatusOK)
		if n := len(r.data().([]any)); n != 100 {
			t.Errorf("limit=100: %d sessions", n)
		}

		since := base.Add(-3 * time.Hour)
		until := base.Add(-5 * time.Hour)
		filters := []struct {
			q    url.Values
			keep func(s sessionSpec) bool
		}{
			{url.Values{}, func(sessionSpec) bool { return true }},
			{url.Values{"classification": {"AI_AGENT_MALICIOUS"}}, func(s sessionSpec) bool { return s.Class == "AI_AGENT_MALICIOUS" }},
			{url.Values{"classification": {"ai_agent"}}, func(s sessionSpec) bool { return s.Class == "AI_AGENT" }},
			{url.Values{"severity": {"high"}}, func(s sessionSpec) bool { return s.Severity == "high" }},
			{url.Values{"trap_id": {trapA}}, func(s sessionSpec) bool { return slices.Contains(s.Traps, trapA) }},
			{url.Values{"trap_id": {trapB}}, func(s sessionSpec) bool { return slices.Contains(s.Traps, trapB) }},
			{url.Values{"trap_id": {"trp_00000000000000000000000000"}}, func(sessionSpec) bool { return false }},
			{url.Values{"source_ip": {"198.51.100.3"}}, func(s sessionSpec) bool { return s.IP == "198.51.100.3" }},
			{url.Values{"since": {since.Format(time.RFC3339)}}, func(s sessionSpec) bool { return !s.Last.Before(since) }},
			{url.Values{"until": {until.Format(time.RFC3339Nano)}}, func(s sessionSpec) bool { return s.First.Before(until) }},
			{url.Values{"severity": {"critical"}, "source_ip": {"198.51.100.1"}, "since": {base.Add(-6 * time.Hour).Format(time.RFC3339)}, "until": {base.Add(-time.Hour).Format(time.RFC3339)}},
				func(s sessionSpec) bool {
					return s.Severity == "critical" && s.IP == "198.51.100.1" && !s.Last.Before(base.Add(-6*time.Hour)) && s.First.Before(base.Add(-time.Hour))
				}},
		}
		for _, f := range filters {
			var want []string
			for i, s := range sessions {
				if f.keep(specs[i]) {
					want = append(want, s.ID)
				}
			}
			for _, limit := range []int{7, 100} {
				got := walkSessions(t, env, a.ReadOnly, f.q, limit)
				ids := idsOf(got)
				seen := map[string]bool{}
				for _, id := range ids {
					if seen[id] {
						t.Errorf("?%s limit %d: session %s served twice", f.q.Encode(), limit, id)
					}
					seen[id] = true
				}
				gotSorted, wantSorted := slices.Sorted(slices.Values(ids)), slices.Sorted(slices.Values(want))
				if !slices.Equal(gotSorted, wantSorted) {
					t.Errorf("?%s limit %d: %d sessions, want %d", f.q.Encode(), limit, len(ids), len(want))
				}
				for i := 1; i < len(got); i++ {
					prev, cur := got[i-1]["last_seen"].(string), got[i]["last_seen"].(string)
					if cur > prev {
						t.Errorf("?%s: %s (last_seen %s) after %s (last_seen %s): not newest first", f.q.Encode(), ids[i], cur, ids[i-1], prev)
					}
				}
				for _, m := range got {
					s := byID[m["id"].(string)]
					if m["last_seen"] != s.Last.UTC().Format("2006-01-02T15:04:05.000Z") || m["source_ip"] != s.IP || m["classification"] != s.Class {
						t.Errorf("session %v does not match its seed %+v", m, s)
						break
					}
				}
			}
		}
		// An empty result still has the pagination object.
		r = mustOK(t, restCall(t, env, a.ReadOnly, "GET", "/dashboard/api/sessions?source_ip=192.0.2.99", nil), http.StatusOK)
		if d, _ := r.data().([]any); d == nil || len(d) != 0 || ft.Dig(r.obj(), "pagination", "has_more") != false {
			t.Errorf("empty result: %s", r.Raw)
		}
		if _, isString := ft.Dig(r.obj(), "pagination", "next_cursor").(string); !isString {
			t.Errorf("empty result: next_cursor missing: %s", r.Raw)
		}
	})
}

// TestRESTSessionsCursorIsURLSafe: a client that pastes next_cursor into the query string
// unescaped (as the document's "pass the returned next_cursor as cursor" invites) still walks
// every page. The events list's cursors are URL-safe; the sessions list's must be too.
func TestRESTSessionsCursorIsURLSafe(t *testing.T) {
	t.Parallel()
	env := ft.Start(t, ft.Backends()[0])
	a := env.Tenant("acme")
	base := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	seedSessions(t, env, a.Org.ID, variedSessions(130, base, "trp_x", "trp_y"))
	var bad []string
	cursor, seen := "", 0
	for {
		p := "/dashboard/api/sessions?limit=3"
		if cursor != "" {
			p += "&cursor=" + cursor // deliberately not escaped
		}
		r := restCall(t, env, a.ReadOnly, "GET", p, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("a next_cursor pasted into the URL unescaped is refused (%d %s); cursor %q", r.Status, r.Raw, cursor)
		}
		seen += len(r.data().([]any))
		next, _ := ft.Dig(r.obj(), "pagination", "next_cursor").(string)
		if strings.ContainsAny(next, "+%&# ") {
			bad = append(bad, next)
		}
		if ft.Dig(r.obj(), "pagination", "has_more") != true {
			break
		}
		cursor = next
	}
	if seen != 130 {
		t.Errorf("walked %d sessions, want 130", seen)
	}
	if len(bad) > 0 {
		t.Errorf("%d of the sessions list's next_cursor values are not URL-safe (e.g. %q)", len(bad), bad[0])
	}
}

// TestRESTSessionDetail checks a session's detail: the session fields, its hits oldest
// first with every documented field, the extracted data and the callbacks.
func TestRESTSessionDetail(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		tr := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "T", "type": "api", "path": "/t"})["id"].(string)
		base := time.Date(2026, 11, 21, 8, 30, 0, 123_000_000, time.UTC)
		s := seedSessions(t, env, a.Org.ID, []sessionSpec{{
			Class: "AI_AGENT_MALICIOUS", Severity: "critical", IP: "203.0.113.50", UA: "evil/2.0",
			First: base, Last: base.Add(10 * time.Minute), Score: 97, Confidence: 90,
			Signals: []string{"CALLBACK_HIT"}, Model: "gpt-4o", Operator: "acme-ops", HitCount: 4, Tripwires: 1, Prompts: 1,
			Traps: []string{tr},
		}})[0]
		// Written out of order, with two hits at the same instant.
		at := []time.Duration{5 * time.Minute, 0, 10 * time.Minute, 5 * time.Minute}
		var specs []hitSpec
		for i, d := range at {
			specs = append(specs, hitSpec{
				Session: s, TrapID: []string{tr, ""}[i%2], Method: []string{"GET", "POST"}[i%2], Path: fmt.Sprintf("/t/%d", i),
				Query: fmt.Sprintf("q=%d&x=%%3Cy%%3E", i), Body: fmt.Sprintf(`{"n":%d}`, i),
				Headers: map[string][]string{"Accept": {"*/*"}, "X-Multi": {"a", "b"}}, At: base.Add(d), Truncated: i == 2,
			})
		}
		hits := seedHits(t, env, specs)

		d := mustOK(t, restCall(t, env, a.ReadOnly, "GET", "/dashboard/api/sessions/"+s.ID, nil), http.StatusOK).data().(map[string]any)
		for k, want := range map[string]any{
			"id": s.ID, "source_ip": "203.0.113.50", "user_agent": "evil/2.0", "classification": "AI_AGENT_MALICIOUS",
			"score": json.Number("97"), "confidence": json.Number("90"), "severity": "critical", "hit_count": json.Number("4"),
			"first_seen": "2026-11-21T08:30:00.123Z", "last_seen": "2026-11-21T08:40:00.123Z",
		} {
			if d[k] != want {
				t.Errorf("%s = %#v, want %#v", k, d[k], want)
			}
		}
		wantKeys(t, "extracted", d["extracted"], "model", "operator", "prompts")
		if ft.Dig(d, "extracted", "model") != "gpt-4o" || ft.Dig(d, "extracted", "operator") != "acme-ops" {
			t.Errorf("extracted %v", d["extracted"])
		}
		if _, isList := ft.Dig(d, "extracted", "prompts").([]any); !isList {
			t.Errorf("extracted.prompts %v is not an array", ft.Dig(d, "extracted", "prompts"))
		}
		if _, isList := d["callbacks"].([]any); !isList {
			t.Errorf("callbacks %v is not an array", d["callbacks"])
		}
		got, _ := d["hits"].([]any)
		if len(got) != len(hits) {
			t.Fatalf("%d hits, want %d", len(got), len(hits))
		}
		// Oldest first; the tie in received_at is broken the same way every time (by id).
		order := []int{1, 0, 3, 2}
		if hits[0].ID > hits[3].ID {
			order = []int{1, 3, 0, 2}
		}
		for i, h := range got {
			want := hits[order[i]]
			hm := h.(map[string]any)
			for _, k := range []string{"id", "trap_id", "method", "path", "query", "headers", "body", "received_at"} {
				if _, present := hm[k]; !present {
					t.Errorf("hit %d lacks %s: %v", i, k, hm)
				}
			}
			if hm["id"] != want.ID {
				t.Errorf("hit %d is %v, want %s (oldest first)", i, hm["id"], want.ID)
				continue
			}
			if hm["trap_id"] != want.TrapID || hm["method"] != want.Method || hm["path"] != want.Path || hm["query"] != want.Query ||
				hm["body"] != want.Body || hm["received_at"] != want.ReceivedAt.UTC().Format("2006-01-02T15:04:05.000Z") ||
				!reflect.DeepEqual(hm["headers"], map[string]any{"Accept": []any{"*/*"}, "X-Multi": []any{"a", "b"}}) {
				t.Errorf("hit %d = %v, want %+v", i, hm, want)
			}
		}
	})
}

// TestRESTAttackerTextIsData: whatever a visitor sent comes back as data, JSON-escaped and
// byte for byte unchanged, never as markup or raw control characters.
func TestRESTAttackerTextIsData(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		ua := "<script>alert(1)</script>\x01\x1b[31m\t\r\n\u2028\u2029\u202e é 😈 \"quoted\" \\back"
		now := time.Now().UTC().Truncate(time.Millisecond)
		s := seedSessions(t, env, a.Org.ID, []sessionSpec{{Class: "AI_AGENT", Severity: "high", IP: "203.0.113.66", UA: ua, First: now, Last: now, Model: "<b>m</b>", Operator: "op\x07"}})[0]
		seedHits(t, env, []hitSpec{{
			Session: s, Path: "/<img src=x onerror=alert(1)>", Query: "a=<script>&b=\x02", Body: "</script><script>alert(2)</script> \x1f",
			Headers: map[string][]string{"User-Agent": {ua}, "X-<Evil>": {"\"}]}"}}, At: now, UserAgent: ua,
		}})
		for _, p := range []string{"/dashboard/api/sessions", "/dashboard/api/sessions/" + s.ID} {
			r := mustOK(t, restCall(t, env, a.ReadOnly, "GET", p, nil), http.StatusOK)
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || r.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s: Content-Type %q, X-Content-Type-Options %q", p, ct, r.Header.Get("X-Content-Type-Options"))
			}
			if bytes.Contains(r.Raw, []byte("<script>")) || bytes.Contains(r.Raw, []byte("<img")) {
				t.Errorf("%s: markup appears unescaped in the body", p)
			}
			for _, c := range r.Raw {
				if c < 0x20 && c != '\n' {
					t.Errorf("%s: raw control byte %#x in the body", p, c)
					break
				}
			}
			if !json.Valid(r.Raw) {
				t.Errorf("%s: body is not valid JSON", p)
			}
			var got string
			if p == "/dashboard/api/sessions" {
				got, _ = ft.Dig(r.data(), 0, "user_agent").(string)
			} else {
				got, _ = ft.Dig(r.data(), "user_agent").(string)
				h := ft.Dig(r.data(), "hits", 0)
				if ft.Dig(h, "user_agent") != ua || ft.Dig(h, "path") != "/<img src=x onerror=alert(1)>" ||
					ft.Dig(h, "query") != "a=<script>&b=\x02" || ft.Dig(h, "body") != "</script><script>alert(2)</script> \x1f" ||
					ft.Dig(h, "headers", "X-<Evil>", 0) != "\"}]}" || ft.Dig(h, "headers", "User-Agent", 0) != ua {
					t.Errorf("hit text changed: %v", h)
				}
				if ft.Dig(r.data(), "extracted", "model") != "<b>m</b>" || ft.Dig(r.data(), "extracted", "operator") != "op\x07" {
					t.Errorf("extracted text changed: %v", ft.Dig(r.data(), "extracted"))
				}
			}
			if got != ua {
				t.Errorf("%s: user_agent %q, want %q", p, got, ua)
			}
		}
	})
}

// TestRESTHostileTextNever500 sends text a database may choke on (NUL bytes, invalid
// UTF-8) in every place that reaches a query: the answer is a 2xx or a 4xx in the
// error shape, never a 500.
func TestRESTHostileTextNever500(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		fx := startScenarioFixture(t, b)
		cases := []struct{ method, path, body string }{
			{"GET", "/dashboard/api/sessions?source_ip=%00", ""},
			{"GET", "/dashboard/api/sessions?source_ip=%ff", ""},
			{"GET", "/dashboard/api/sessions?trap_id=x%00y", ""},
			{"GET", "/dashboard/api/sessions?trap_id=%c3%28", ""},
			{"GET", "/dashboard/api/sessions?classification=%00", ""},
			{"GET", "/api/v1/events?type=%00", ""},
			{"POST", "/dashboard/api/traps", `{"name":"a\u0000b","type":"api","path":"/nul-name"}`},
			{"POST", "/dashboard/api/traps", `{"name":"ok","type":"api","path":"/nul-desc","description":"\u0000"}`},
			{"POST", "/dashboard/api/traps", `{"name":"ok","type":"api","path":"/nul\u0000path"}`},
			{"POST", "/dashboard/api/traps", `{"name":"ok","type":"api","site_id":"\u0000"}`},
			{"POST", "/dashboard/api/traps", "{\"name\":\"\xff\xfe\",\"type\":\"api\",\"path\":\"/bad-utf8\"}"},
			{"PATCH", "/dashboard/api/traps/{trap}", `{"name":"a\u0000b"}`},
			{"PATCH", "/dashboard/api/traps/{trap}", `{"description":"\u0000"}`},
		}
		for _, c := range cases {
			path := strings.NewReplacer("{trap}", fx.aTrap).Replace(c.path)
			t.Run(c.method+" "+c.path+" "+c.body, func(t *testing.T) {
				var body any
				if c.body != "" {
					body = c.body
				}
				r := restCall(t, fx.env, fx.a.ReadWrite, c.method, path, body)
				if r.Status >= 500 {
					t.Fatalf("%s: %d %s", r.What, r.Status, r.Raw)
				}
				if r.Status >= 400 {
					wantError(t, r, []int{r.Status})
				}
			})
		}
	})
}
