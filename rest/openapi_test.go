package rest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/event"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/record"
	"github.com/flytrap/flytrap/rest"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/tally"
	"github.com/flytrap/flytrap/viewer"
)

// The tests below hold the OpenAPI document (rest/openapi.json) to the running
// service: every route is in it and nothing else is, and every response the live
// server gives is one the document declares for that route and status, with a
// body matching its schema. The schemas are looked up in the document itself,
// never in a parallel table here, so the document cannot drift from the code.

// docURL names the document as a JSON Schema resource; schemas compile as docURL#<pointer>.
const docURL = "openapi.json"

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// apiDoc is rest.OpenAPI decoded, with its schemas compiled on demand (JSON Schema 2020-12).
type apiDoc struct {
	root     map[string]any
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema
}

func loadAPIDoc(t testing.TB) *apiDoc {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(rest.OpenAPI))
	if err != nil {
		t.Fatalf("rest.OpenAPI is not JSON: %v", err)
	}
	root, ok := doc.(map[string]any)
	if !ok {
		t.Fatal("rest.OpenAPI is not a JSON object")
	}
	if root["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v, want 3.1.0", root["openapi"])
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020) // OpenAPI 3.1's schema dialect
	c.AssertFormat()
	if err := c.AddResource(docURL, doc); err != nil {
		t.Fatal(err)
	}
	return &apiDoc{root: root, compiler: c, schemas: map[string]*jsonschema.Schema{}}
}

// schema compiles the schema at ptr, a JSON pointer into the document.
func (d *apiDoc) schema(t testing.TB, ptr string) *jsonschema.Schema {
	t.Helper()
	if s, ok := d.schemas[ptr]; ok {
		return s
	}
	s, err := d.compiler.Compile(docURL + "#" + ptr)
	if err != nil {
		t.Fatalf("compile the schema at %s: %v", ptr, err)
	}
	d.schemas[ptr] = s
	return s
}

func escapePtr(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

func unescapePtr(s string) string { return strings.NewReplacer("~1", "/", "~0", "~").Replace(s) }

// at returns the value at ptr and the pointer where it really lives, following
// local $refs on the way (a response, parameter or header given by reference).
func (d *apiDoc) at(ptr string) (any, string, bool) {
	v, cur := d.deref(any(d.root), "")
	if ptr == "" {
		return v, cur, true
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		var next any
		switch x := v.(type) {
		case map[string]any:
			next = x[unescapePtr(tok)]
		case []any:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(x) {
				next = x[i]
			}
		}
		if next == nil {
			return nil, "", false
		}
		v, cur = d.deref(next, cur+"/"+tok)
		if v == nil {
			return nil, "", false
		}
	}
	return v, cur, true
}

func (d *apiDoc) deref(v any, cur string) (any, string) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, cur
	}
	ref, ok := m["$ref"].(string)
	if !ok || !strings.HasPrefix(ref, "#/") {
		return v, cur
	}
	target, where, found := d.at(ref[1:])
	if !found {
		return nil, ""
	}
	return target, where
}

func (d *apiDoc) obj(ptr string) map[string]any {
	v, _, _ := d.at(ptr)
	m, _ := v.(map[string]any)
	return m
}

func opPtr(method, tmpl string) string {
	return "/paths/" + escapePtr(tmpl) + "/" + strings.ToLower(method)
}

// operations lists "METHOD /path" of every operation in the document.
func (d *apiDoc) operations() []string {
	var out []string
	for p, item := range d.obj("/paths") {
		for m := range item.(map[string]any) {
			if slices.Contains(httpMethods, m) {
				out = append(out, strings.ToUpper(m)+" "+p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// params returns the parameters of an operation (path-level ones included) by "in:name".
func (d *apiDoc) params(method, tmpl string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, base := range []string{"/paths/" + escapePtr(tmpl), opPtr(method, tmpl)} {
		list, _, _ := d.at(base + "/parameters")
		items, _ := list.([]any)
		for i := range items {
			p, _, _ := d.at(fmt.Sprintf("%s/parameters/%d", base, i))
			pm := p.(map[string]any)
			out[pm["in"].(string)+":"+pm["name"].(string)] = pm
		}
	}
	return out
}

// conformance drives the live server and checks each answer against the document,
// remembering which documented responses it has seen.
type conformance struct {
	t    *testing.T
	doc  *apiDoc
	seen map[string]bool // "METHOD /path status"
}

func newConformance(t *testing.T, doc *apiDoc) *conformance {
	return &conformance{t: t, doc: doc, seen: map[string]bool{}}
}

// request is one call of the API; tmpl is the documented path it exercises.
type request struct {
	method, tmpl, path string
	token              string
	body               string
	header             map[string]string
}

func (c *conformance) send(env *ft.Env, ctx context.Context, rq request) *http.Response {
	c.t.Helper()
	var body io.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, env.HTTP.URL+rq.path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if rq.token != "" {
		req.Header.Set("Authorization", "Bearer "+rq.token)
	}
	if rq.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range rq.header {
		req.Header.Set(k, v)
	}
	res, err := env.HTTP.Client().Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", rq.method, rq.path, err)
	}
	return res
}

// call makes a request with a JSON answer, checks the status (unless want is 0)
// and the answer against the document, and returns the decoded body.
func (c *conformance) call(env *ft.Env, want int, rq request) map[string]any {
	c.t.Helper()
	if want/100 == 2 {
		c.checkRequest(rq)
	}
	res := c.send(env, context.Background(), rq)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read: %v", rq.method, rq.path, err)
	}
	if want != 0 && res.StatusCode != want {
		c.t.Fatalf("%s %s: %d %s, want %d", rq.method, rq.path, res.StatusCode, raw, want)
	}
	c.checkResponse(rq.method, rq.tmpl, res, raw)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

// checkRequest holds a request meant to succeed to the document: its query
// parameters are declared, and its body matches the request body schema.
func (c *conformance) checkRequest(rq request) {
	c.t.Helper()
	u, err := url.Parse(rq.path)
	if err != nil {
		c.t.Fatal(err)
	}
	declared := c.doc.params(rq.method, rq.tmpl)
	for name := range u.Query() {
		if declared["query:"+name] == nil {
			c.t.Errorf("%s %s: query parameter %q is not declared in the document", rq.method, rq.tmpl, name)
		}
	}
	for name := range rq.header {
		if declared["header:"+name] == nil {
			c.t.Errorf("%s %s: request header %q is not declared in the document", rq.method, rq.tmpl, name)
		}
	}
	if rq.body == "" {
		return
	}
	_, where, ok := c.doc.at(opPtr(rq.method, rq.tmpl) + "/requestBody/content/application~1json")
	if !ok {
		c.t.Errorf("%s %s: the document declares no JSON request body", rq.method, rq.tmpl)
		return
	}
	c.validate(c.doc.schema(c.t, where+"/schema"), []byte(rq.body), "request body of %s %s", rq.method, rq.tmpl)
}

// response finds the document's response for a route and status: where it lives, or "".
func (c *conformance) response(method, tmpl string, status int) (map[string]any, string) {
	v, where, ok := c.doc.at(fmt.Sprintf("%s/responses/%d", opPtr(method, tmpl), status))
	if !ok {
		return nil, ""
	}
	return v.(map[string]any), where
}

// checkResponse checks status, media type, headers and body against the document's
// response for that route and status. It returns the media type's pointer.
func (c *conformance) checkResponse(method, tmpl string, res *http.Response, body []byte) string {
	c.t.Helper()
	c.seen[fmt.Sprintf("%s %s %d", method, tmpl, res.StatusCode)] = true
	resp, where := c.response(method, tmpl, res.StatusCode)
	if resp == nil {
		c.t.Errorf("%s %s answered %d, which the document does not declare: %s", method, tmpl, res.StatusCode, body)
		return ""
	}
	return c.checkAgainst(fmt.Sprintf("%s %s %d", method, tmpl, res.StatusCode), resp, where, res, body)
}

func (c *conformance) checkAgainst(what string, resp map[string]any, where string, res *http.Response, body []byte) string {
	c.t.Helper()
	mt, _, err := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if err != nil {
		c.t.Errorf("%s: Content-Type %q: %v", what, res.Header.Get("Content-Type"), err)
		return ""
	}
	content, _ := resp["content"].(map[string]any)
	if _, ok := content[mt]; !ok {
		c.t.Errorf("%s: media type %s is not declared (declared: %v)", what, mt, slices.Sorted(maps.Keys(content)))
		return ""
	}
	headers, _ := resp["headers"].(map[string]any)
	for name := range headers {
		h, hwhere, _ := c.doc.at(where + "/headers/" + escapePtr(name))
		hm := h.(map[string]any)
		val := res.Header.Get(name)
		if val == "" {
			if hm["required"] == true {
				c.t.Errorf("%s: required header %s is missing (headers: %v)", what, name, res.Header)
			}
			continue
		}
		c.validateHeader(c.doc.schema(c.t, hwhere+"/schema"), val, "%s: header %s", what, name)
	}
	mediaPtr := where + "/content/" + escapePtr(mt)
	if mt == "application/json" {
		c.validate(c.doc.schema(c.t, mediaPtr+"/schema"), body, "%s", what)
	}
	return mediaPtr
}

func (c *conformance) validate(s *jsonschema.Schema, raw []byte, format string, args ...any) {
	c.t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		c.t.Errorf("%s: not JSON: %v: %s", fmt.Sprintf(format, args...), err, raw)
		return
	}
	if err := s.Validate(v); err != nil {
		c.t.Errorf("%s: does not match the document's schema: %v\nbody: %s", fmt.Sprintf(format, args...), err, raw)
	}
}

// validateHeader checks a header value: a number where the schema wants one, else the string.
func (c *conformance) validateHeader(s *jsonschema.Schema, val string, format string, args ...any) {
	c.t.Helper()
	var v any = val
	if n, err := jsonschema.UnmarshalJSON(strings.NewReader(val)); err == nil {
		if _, isNum := n.(json.Number); isNum {
			v = n
		}
	}
	if err := s.Validate(v); err != nil {
		c.t.Errorf("%s: value %q does not match the document: %v", fmt.Sprintf(format, args...), val, err)
	}
}

// stream opens the event stream, checks the answer against the document, and
// returns the first n events, each checked against the schema the document
// names for the stream's data lines.
func (c *conformance) stream(env *ft.Env, rq request, n int) []map[string]any {
	c.t.Helper()
	c.checkRequest(rq)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res := c.send(env, ctx, rq)
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(res.Body)
		c.t.Fatalf("GET %s: %d %s", rq.path, res.StatusCode, raw)
	}
	mediaPtr := c.checkResponse(rq.method, rq.tmpl, res, nil)
	if mediaPtr == "" {
		return nil
	}
	dataSchema, _ := c.doc.obj(mediaPtr)["x-flytrap-sse-data"].(string)
	if !strings.HasPrefix(dataSchema, "#/") {
		c.t.Fatalf("%s: x-flytrap-sse-data %q does not point into the document", mediaPtr, dataSchema)
	}
	s := c.doc.schema(c.t, dataSchema[1:])
	var out []map[string]any
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var id string
	for len(out) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "data: "):
			raw := []byte(line[6:])
			c.validate(s, raw, "stream message %s", id)
			var ev map[string]any
			if err := json.Unmarshal(raw, &ev); err != nil {
				c.t.Fatal(err)
			}
			out = append(out, ev)
		}
	}
	if len(out) < n {
		c.t.Fatalf("stream %s gave %d events, want %d (%v)", rq.path, len(out), n, sc.Err())
	}
	return out
}

// assertCovered fails for every response the document declares that the test did not see.
func (c *conformance) assertCovered(unreachable ...int) {
	c.t.Helper()
	for _, op := range c.doc.operations() {
		method, tmpl, _ := strings.Cut(op, " ")
		for status := range c.doc.obj(opPtr(method, tmpl) + "/responses") {
			skip := false
			for _, u := range unreachable {
				skip = skip || status == fmt.Sprint(u)
			}
			if !skip && !c.seen[op+" "+status] {
				c.t.Errorf("%s: the document declares %s, but the test never saw it", op, status)
			}
		}
	}
}

func dataOf(m map[string]any) map[string]any {
	d, _ := m["data"].(map[string]any)
	return d
}

// TestOpenAPIMatchesLiveResponses drives every route through every status it can
// produce and checks each answer against the document.
func TestOpenAPIMatchesLiveResponses(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		doc := loadAPIDoc(t)
		c := newConformance(t, doc)
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		other := env.Tenant("other")
		const (
			traps        = "/dashboard/api/traps"
			trapByID     = "/dashboard/api/traps/{id}"
			sessions     = "/dashboard/api/sessions"
			sessionID    = "/dashboard/api/sessions/{id}"
			sessionSTIX  = "/dashboard/api/sessions/{id}/stix"
			campaignSTIX = "/dashboard/api/campaigns/{id}/stix"
			events       = "/api/v1/events"
			stream       = "/api/v1/events/stream"
			openapi      = "/api/openapi.json"
		)
		get := func(tmpl, path, token string) request {
			return request{method: http.MethodGet, tmpl: tmpl, path: path, token: token}
		}

		// Traps.
		created := c.call(env, http.StatusCreated, request{method: "POST", tmpl: traps, path: traps, token: a.ReadWrite,
			body: `{"name":"Pricing","type":"page","description":"decoy pricing page"}`})
		trap1 := dataOf(created)["id"].(string)
		dup := dataOf(c.call(env, http.StatusCreated, request{method: "POST", tmpl: traps, path: traps, token: a.ReadWrite,
			body: `{"name":"API","type":"api","path":"/internal/api/v2"}`}))["id"].(string)
		c.call(env, http.StatusConflict, request{method: "POST", tmpl: traps, path: traps, token: a.ReadWrite,
			body: `{"name":"again","type":"api","path":"/internal/api/v2"}`})
		c.call(env, http.StatusOK, request{method: "PATCH", tmpl: trapByID, path: traps + "/" + dup, token: a.ReadWrite,
			body: `{"active":0,"description":"retired"}`})
		dup2 := dataOf(c.call(env, http.StatusCreated, request{method: "POST", tmpl: traps, path: traps, token: a.ReadWrite,
			body: `{"name":"API 2","type":"api","path":"/internal/api/v2"}`}))["id"].(string)
		c.call(env, http.StatusConflict, request{method: "PATCH", tmpl: trapByID, path: traps + "/" + dup, token: a.ReadWrite,
			body: `{"active":true}`})
		c.call(env, http.StatusOK, request{method: "PATCH", tmpl: trapByID, path: traps + "/" + trap1, token: a.ReadWrite,
			body: `{"name":"Pricing (EU)"}`})
		otherTrap := dataOf(c.call(env, http.StatusCreated, request{method: "POST", tmpl: traps, path: traps, token: other.ReadWrite,
			body: `{"name":"theirs","type":"llms_txt"}`}))["id"].(string)
		for _, body := range []string{`not json`, `{"name":"x"}`, `{"name":"x","type":"nope"}`, `{"name":"x","type":"api","bogus":1}`, `[]`} {
			c.call(env, http.StatusBadRequest, request{method: "POST", tmpl: traps, path: traps, token: a.ReadWrite, body: body})
		}
		for _, body := range []string{`{}`, `{"active":2}`, `{"name":5}`} {
			c.call(env, http.StatusBadRequest, request{method: "PATCH", tmpl: trapByID, path: traps + "/" + trap1, token: a.ReadWrite, body: body})
		}
		c.call(env, http.StatusNotFound, request{method: "PATCH", tmpl: trapByID, path: traps + "/" + otherTrap, token: a.ReadWrite, body: `{"name":"mine"}`})
		c.call(env, http.StatusNotFound, request{method: "DELETE", tmpl: trapByID, path: traps + "/" + otherTrap, token: a.ReadWrite})
		c.call(env, http.StatusForbidden, request{method: "POST", tmpl: traps, path: traps, token: a.ReadOnly, body: `{"name":"x","type":"api"}`})
		c.call(env, http.StatusForbidden, request{method: "PATCH", tmpl: trapByID, path: traps + "/" + trap1, token: a.ReadOnly, body: `{"name":"x"}`})
		c.call(env, http.StatusForbidden, request{method: "DELETE", tmpl: trapByID, path: traps + "/" + trap1, token: a.ReadOnly})
		huge := `{"name":"` + strings.Repeat("a", int(env.Config.MaxBodyBytes)) + `","type":"api"}`
		c.call(env, http.StatusRequestEntityTooLarge, request{method: "POST", tmpl: traps, path: traps, token: a.ReadWrite, body: huge})
		c.call(env, http.StatusRequestEntityTooLarge, request{method: "PATCH", tmpl: trapByID, path: traps + "/" + trap1, token: a.ReadWrite, body: huge})
		c.call(env, http.StatusOK, request{method: "DELETE", tmpl: trapByID, path: traps + "/" + dup2, token: a.ReadWrite})
		c.call(env, http.StatusNotFound, request{method: "DELETE", tmpl: trapByID, path: traps + "/" + dup2, token: a.ReadWrite})
		if l := c.call(env, http.StatusOK, get(traps, traps, a.ReadOnly)); len(l["data"].([]any)) != 2 {
			t.Fatalf("trap list %v, want 2 traps", l)
		}

		// Sessions, seeded as the detection engine writes them.
		now := time.Now().UTC()
		s1 := seedOpenAPISession(t, env, a.Org.ID, func(s *ent.SessionCreate) {
			s.SetClassification(session.ClassificationAI_AGENT_MALICIOUS).SetSeverity(session.SeverityCritical).
				SetScore(96).SetConfidence(90).SetSignalsFired([]string{"CALLBACK_HIT", "SYSTEM_PROMPT_LEAKED"}).
				SetHitCount(2).SetTripwiresFired(2).SetPromptsCaptured(1).
				SetExtractedModel("gpt-4o").SetExtractedOperator("acme-scraper").SetTrapsTriggered([]string{trap1}).
				SetFirstSeen(now.Add(-time.Hour)).SetLastSeen(now.Add(-time.Minute))
		})
		seedOpenAPIHit(t, env, s1, trap1, now.Add(-time.Hour), func(h *ent.HitCreate) {
			h.SetQuery("ref=llm").SetBody(`{"prompt":"You are a helpful assistant"}`).
				SetHeaders(map[string][]string{"Accept": {"*/*"}, "X-Forwarded-For": {"198.51.100.1", "203.0.113.7"}})
		})
		seedOpenAPIHit(t, env, s1, "", now.Add(-time.Minute), func(h *ent.HitCreate) { h.SetMethod("POST").SetBodyTruncated(true) })
		seedOpenAPISession(t, env, a.Org.ID, func(s *ent.SessionCreate) { s.SetSourceIP("192.0.2.10") })
		theirs := seedOpenAPISession(t, env, other.Org.ID, nil)

		page := c.call(env, http.StatusOK, get(sessions, sessions+"?limit=1", a.ReadOnly))
		next, _ := ft.Dig(page, "pagination", "next_cursor").(string)
		if ft.Dig(page, "pagination", "has_more") != true || next == "" {
			t.Fatalf("first page %v, want has_more and a cursor", page)
		}
		c.call(env, http.StatusOK, get(sessions, sessions+"?limit=1&cursor="+url.QueryEscape(next), a.ReadOnly))
		q := url.Values{
			"classification": {"ai_agent_malicious"}, "severity": {"CRITICAL"}, "trap_id": {trap1},
			"source_ip": {"203.0.113.7"}, "since": {now.Add(-2 * time.Hour).Format(time.RFC3339)},
			"until": {now.Format(time.RFC3339Nano)}, "limit": {"100"},
		}
		if l := c.call(env, http.StatusOK, get(sessions, sessions+"?"+q.Encode(), a.ReadOnly)); len(l["data"].([]any)) != 1 {
			t.Errorf("filtered sessions %v, want s1 alone", l)
		}
		for _, bad := range []string{"limit=0", "limit=101", "limit=x", "classification=ROBOT", "severity=extreme", "since=yesterday", "until=1", "cursor=zzz", "bogus=1"} {
			c.call(env, http.StatusBadRequest, get(sessions, sessions+"?"+bad, a.ReadOnly))
		}
		// STIX exports of a session and a campaign: bundles, bad ids, another organization's.
		c.call(env, http.StatusOK, get(sessionSTIX, sessions+"/"+s1.ID+"/stix", a.ReadOnly))
		c.call(env, http.StatusBadRequest, get(sessionSTIX, sessions+"/trp_01m817pg1f8bjdanzx5g71dpy4/stix", a.ReadOnly))
		c.call(env, http.StatusNotFound, get(sessionSTIX, sessions+"/"+theirs.ID+"/stix", a.ReadOnly))
		cmp := tally.CampaignID(a.Org.ID, strings.Repeat("ab", 32), "acme-scraper", "gpt-4o")
		env.DB.Client.Campaign.Create().SetID(cmp).SetOrgID(a.Org.ID).SetPromptHash(strings.Repeat("ab", 32)).
			SetOperator("acme-scraper").SetModel("gpt-4o").SetSessionCount(1).SetPromptCount(1).
			SetFirstPromptID("prm_01m817pg1f8bjdanzx5g71dpy4").SetLastPromptID("prm_01m817pg1f8bjdanzx5g71dpy4").
			SetFirstSeen(now.Add(-time.Hour)).SetLastSeen(now).ExecX(ft.System())
		c.call(env, http.StatusOK, get(campaignSTIX, "/dashboard/api/campaigns/"+cmp+"/stix", a.ReadOnly))
		c.call(env, http.StatusBadRequest, get(campaignSTIX, "/dashboard/api/campaigns/nope/stix", a.ReadOnly))
		c.call(env, http.StatusNotFound, get(campaignSTIX, "/dashboard/api/campaigns/"+cmp+"/stix", other.ReadOnly))

		detail := dataOf(c.call(env, http.StatusOK, get(sessionID, sessions+"/"+s1.ID, a.ReadOnly)))
		if hits, _ := detail["hits"].([]any); len(hits) != 2 {
			t.Errorf("session detail carries %d hits, want 2", len(hits))
		}
		c.call(env, http.StatusNotFound, get(sessionID, sessions+"/"+theirs.ID, a.ReadOnly))
		c.call(env, http.StatusBadRequest, get(sessionID, sessions+"/not-an-id", a.ReadOnly))

		// Triage and the gate.
		const triage, gate = "/dashboard/api/triage", "/dashboard/api/gate"
		c.call(env, http.StatusOK, get(gate, gate+"?fail_on=high&since=1h", a.ReadOnly))
		c.call(env, http.StatusOK, request{method: "POST", tmpl: triage, path: triage, token: a.ReadWrite,
			body: `{"ids":["` + s1.ID + `"],"state":"acknowledged"}`})
		c.call(env, http.StatusOK, get(sessions, sessions+"?triage_state=acknowledged,open", a.ReadOnly))
		c.call(env, http.StatusOK, get(sessionID, sessions+"/"+s1.ID, a.ReadOnly))
		c.call(env, http.StatusOK, get(events, events+"?type=session.*&since="+url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339)), a.ReadOnly))
		c.call(env, http.StatusNotFound, request{method: "POST", tmpl: triage, path: triage, token: a.ReadWrite,
			body: `{"ids":["` + theirs.ID + `"],"state":"resolved"}`})
		c.call(env, http.StatusForbidden, request{method: "POST", tmpl: triage, path: triage, token: a.ReadOnly,
			body: `{"ids":["` + s1.ID + `"],"state":"resolved"}`})
		c.call(env, http.StatusRequestEntityTooLarge, request{method: "POST", tmpl: triage, path: triage, token: a.ReadWrite,
			body: `{"ids":["` + strings.Repeat("a", int(env.Config.MaxBodyBytes)) + `"],"state":"resolved"}`})
		for _, body := range []string{`{"ids":[],"state":"resolved"}`, `{"ids":["x"],"state":"resolved"}`, `{"ids":["` + s1.ID + `"]}`, `{"ids":["` + s1.ID + `"],"state":"closed"}`} {
			c.call(env, http.StatusBadRequest, request{method: "POST", tmpl: triage, path: triage, token: a.ReadWrite, body: body})
		}
		c.call(env, http.StatusBadRequest, get(gate, gate+"?fail_on=extreme", a.ReadOnly))
		deploy := deployKey(t, env, a)
		c.call(env, http.StatusForbidden, get(gate, gate+"?fail_on=high", deploy))

		// Analytics.
		for _, p := range []string{"overview", "severity", "timeline"} {
			c.call(env, http.StatusOK, get("/dashboard/api/analytics/"+p, "/dashboard/api/analytics/"+p, a.ReadOnly))
		}

		exerciseWebhooks(t, c, env, a, other)

		// Events: the log holds the trap changes above, oldest first.
		all := c.call(env, http.StatusOK, get(events, events+"?limit=100", a.ReadOnly))
		if all["has_more"] != false {
			t.Fatalf("events %v, want all in one page", all)
		}
		total := len(all["events"].([]any))
		if total < 6 {
			t.Fatalf("%d events, want the 6 trap changes at least", total)
		}
		p1 := c.call(env, http.StatusOK, get(events, events+"?limit=2&type=trap.created,trap.updated", a.ReadOnly))
		c.call(env, http.StatusOK, get(events, events+"?limit=2&cursor="+p1["next_cursor"].(string), a.ReadOnly))
		// An empty page's next_cursor points before the first event: the stream replays the log from it.
		start := c.call(env, http.StatusOK, get(events, events+"?type=threat.detected", a.ReadOnly))["next_cursor"].(string)
		for _, bad := range []string{"limit=0", "limit=101", "type=nope", "type=trap.created,nope", "cursor=zzz", "bogus=1", "limit=1&limit=2"} {
			c.call(env, http.StatusBadRequest, get(events, events+"?"+bad, a.ReadOnly))
		}

		// Stream: the same events, each data line a documented Event.
		got := c.stream(env, get(stream, stream+"?cursor="+start, a.ReadOnly), total)
		for i, ev := range got {
			if want := ft.Dig(all, "events", i, "id"); ev["id"] != want {
				t.Fatalf("stream event %d is %v, list has %v", i, ev["id"], want)
			}
		}
		deleted := c.call(env, http.StatusOK, get(events, events+"?type=trap.deleted", a.ReadOnly))
		rq := get(stream, stream+"?type=trap.deleted", a.ReadOnly)
		rq.header = map[string]string{"Last-Event-ID": start}
		c.stream(env, rq, len(deleted["events"].([]any)))
		for _, bad := range []string{"cursor=zzz", "type=nope", "bogus=1"} {
			c.call(env, http.StatusBadRequest, get(stream, stream+"?"+bad, a.ReadOnly))
		}
		rq = get(stream, stream, a.ReadOnly)
		rq.header = map[string]string{"Last-Event-ID": "zzz"}
		c.call(env, http.StatusBadRequest, rq)

		// The document itself, without credentials.
		res := c.send(env, context.Background(), get(openapi, openapi, ""))
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !bytes.Equal(raw, rest.OpenAPI) {
			t.Fatalf("GET %s: %d, body equal to rest.OpenAPI: %v", openapi, res.StatusCode, bytes.Equal(raw, rest.OpenAPI))
		}
		c.checkResponse("GET", openapi, res, raw)

		// Every operation: no or a bad token (401), an unknown Flytrap-Version (400).
		for _, op := range doc.operations() {
			method, tmpl, _ := strings.Cut(op, " ")
			path := strings.ReplaceAll(tmpl, "{id}", map[string]string{trapByID: trap1, sessionID: s1.ID, sessionSTIX: s1.ID,
				campaignSTIX: "cmp_00000000000000000000000000000000"}[tmpl])
			path = webhookPath(path)
			if sec, public := doc.obj(opPtr(method, tmpl))["security"].([]any); !public || len(sec) > 0 {
				c.call(env, http.StatusUnauthorized, request{method: method, tmpl: tmpl, path: path})
				c.call(env, http.StatusUnauthorized, request{method: method, tmpl: tmpl, path: path, token: "ftk_notakey"})
			}
			c.call(env, http.StatusBadRequest, request{method: method, tmpl: tmpl, path: path, token: a.Admin,
				header: map[string]string{server.VersionHeader: "1999-01-01"}})
		}
		// Every path: a method it does not serve (405), checked against each of its operations.
		for p := range doc.obj("/paths") {
			path := strings.ReplaceAll(p, "{id}", trap1)
			res := c.send(env, context.Background(), request{method: http.MethodPut, path: path, token: a.Admin, body: `{}`})
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusMethodNotAllowed {
				t.Fatalf("PUT %s: %d %s, want 405", path, res.StatusCode, raw)
			}
			for _, op := range doc.operations() {
				if method, tmpl, _ := strings.Cut(op, " "); tmpl == p {
					c.checkResponse(method, tmpl, res, raw)
				}
			}
		}
		// An unknown route is the document's NotFound response.
		res = c.send(env, context.Background(), get("", "/dashboard/api/nope", a.ReadOnly))
		raw, _ = io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("unknown route: %d %s", res.StatusCode, raw)
		}
		c.checkAgainst("unknown route", doc.obj("/components/responses/NotFound"), "/components/responses/NotFound", res, raw)

		// Rate limits and the stream cap (429), on a service that allows one request per key.
		limited := ft.Start(t, b, func(cfg *server.Config) {
			cfg.RateLimit, cfg.RateBurst, cfg.MaxStreamsPerOrg = 0.001, 1, 1
		})
		la := limited.Tenant("acme")
		for _, op := range doc.operations() {
			method, tmpl, _ := strings.Cut(op, " ")
			if sec, public := doc.obj(opPtr(method, tmpl))["security"].([]any); public && len(sec) == 0 {
				continue
			}
			key := limited.Key(la.Org.ID, viewer.ReadWrite)
			path := webhookPath(strings.ReplaceAll(tmpl, "{id}", "trp_01m817pg1f8bjdanzx5g71dpy4"))
			rq := request{method: method, tmpl: tmpl, path: path, token: key}
			if tmpl == stream {
				rq.path += "?type=nope" // an answer that does not hold the stream open
			}
			c.call(limited, 0, rq)
			c.call(limited, http.StatusTooManyRequests, rq)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		open := c.send(limited, ctx, get(stream, stream, limited.Key(la.Org.ID, viewer.ReadOnly)))
		defer open.Body.Close()
		if open.StatusCode != http.StatusOK {
			t.Fatalf("first stream: %d", open.StatusCode)
		}
		c.call(limited, http.StatusTooManyRequests, get(stream, stream, limited.Key(la.Org.ID, viewer.ReadOnly)))

		// 410: a cursor into events retention deleted, on an instance of its own.
		purged := ft.Start(t, b)
		pa := purged.Tenant("acme")
		purged.CreateTrap(pa.ReadWrite, "t", "page")
		purged.CreateTrap(pa.ReadWrite, "t", "page")
		if _, err := purged.DB.SQL.Exec("DELETE FROM events"); err != nil { // what the purge does to a month-old log
			t.Fatal(err)
		}
		c.call(purged, http.StatusGone, get(events, events+"?cursor="+app.EventCursor(1), pa.ReadOnly))
		c.call(purged, http.StatusGone, request{method: http.MethodGet, tmpl: stream, path: stream, token: pa.ReadOnly,
			header: map[string]string{"Last-Event-ID": app.EventCursor(1)}})

		// 500 cannot be provoked from outside.
		c.assertCovered(http.StatusInternalServerError)
	})
}

func seedOpenAPISession(t *testing.T, env *ft.Env, org string, set func(*ent.SessionCreate)) *ent.Session {
	t.Helper()
	c := env.DB.Client.Session.Create().SetOrgID(org).SetSourceIP("203.0.113.7").SetUserAgent("Mozilla/5.0 (compatible; GPTBot/1.2)")
	if set != nil {
		set(c)
	}
	s, err := record.CreateSessions(ft.System(), env.DB.Client, c)
	if err != nil {
		t.Fatalf("seed session: %v", err)
	}
	return s[0]
}

func seedOpenAPIHit(t *testing.T, env *ft.Env, s *ent.Session, trapID string, at time.Time, set func(*ent.HitCreate)) {
	t.Helper()
	c := env.DB.Client.Hit.Create().SetOrgID(s.OrgID).SetSessionID(s.ID).
		SetMethod("GET").SetPath("/pricing").SetSourceIP(s.SourceIP).SetUserAgent(s.UserAgent).
		SetHeaders(map[string][]string{"Accept": {"text/html"}}).SetReceivedAt(at).SetReceivedHour(at.Unix() / 3600)
	if trapID != "" {
		c.SetTrapID(trapID)
	}
	if set != nil {
		set(c)
	}
	if _, err := record.CreateHits(ft.System(), env.DB.Client, c); err != nil {
		t.Fatalf("seed hit: %v", err)
	}
}

// TestOpenAPIDescribesEveryRoute holds the document to the route table: every
// route is in it with its method, nothing else is, and each operation states
// its security and the scope it needs.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := loadAPIDoc(t)
	api := rest.New(nil, nil, rest.Options{})
	routes := map[string]bool{}
	public := map[string]bool{}
	for _, rt := range api.Routes() {
		routes[rt.Pattern] = true
	}
	for _, rt := range api.PublicRoutes() {
		routes[rt.Pattern] = true
		public[rt.Pattern] = true
	}
	documented := doc.operations()
	for r := range routes {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not in rest/openapi.json", r)
		}
	}
	for _, op := range documented {
		if !routes[op] {
			t.Errorf("rest/openapi.json documents %s, which the service does not route", op)
			continue
		}
		method, tmpl, _ := strings.Cut(op, " ")
		o := doc.obj(opPtr(method, tmpl))
		sec, overridden := o["security"].([]any)
		desc, _ := o["description"].(string)
		switch {
		case public[op]:
			if !overridden || len(sec) != 0 {
				t.Errorf("%s needs no credentials: its security must be []", op)
			}
		case overridden:
			t.Errorf("%s must use the document's bearer security, not override it", op)
		case method == http.MethodGet && strings.HasPrefix(tmpl, "/dashboard/api/webhooks"):
			if !strings.Contains(desc, "Required scope: `read-write`") { // webhook URLs are often credentials
				t.Errorf("%s: the description must name the scope it needs (read-write)", op)
			}
		case method == http.MethodGet && !strings.Contains(desc, "Required scope: `read-only`"):
			t.Errorf("%s: the description must name the scope it needs (read-only)", op)
		case method != http.MethodGet && !strings.Contains(desc, "Required scope: `read-write`"):
			t.Errorf("%s: the description must name the scope it needs (read-write)", op)
		}
		for _, status := range []string{"400", "405", "500"} {
			if _, _, ok := doc.at(opPtr(method, tmpl) + "/responses/" + status); !ok {
				t.Errorf("%s: no %s response", op, status)
			}
		}
		if !public[op] {
			for _, status := range []string{"401", "429"} {
				if _, _, ok := doc.at(opPtr(method, tmpl) + "/responses/" + status); !ok {
					t.Errorf("%s: no %s response", op, status)
				}
			}
		}
	}
	if sec := ft.Dig(doc.root, "security", 0, "bearerAuth"); sec == nil {
		t.Error("the document's default security must be bearerAuth")
	}
	if s := ft.Dig(doc.root, "components", "securitySchemes", "bearerAuth"); ft.Dig(s, "type") != "http" || ft.Dig(s, "scheme") != "bearer" {
		t.Errorf("bearerAuth is %v, want an HTTP bearer scheme", s)
	}
	// The version is defined once, in the event package.
	if v := ft.Dig(doc.root, "info", "version"); v != event.APIVersion {
		t.Errorf("info.version %v, want event.APIVersion %s", v, event.APIVersion)
	}
	enum, _ := ft.Dig(doc.obj("/components/parameters/FlytrapVersion"), "schema", "enum").([]any)
	var versions []string
	for _, v := range enum {
		versions = append(versions, fmt.Sprint(v))
	}
	if !slices.Equal(versions, event.SupportedVersions) {
		t.Errorf("Flytrap-Version values %v, want event.SupportedVersions %v", versions, event.SupportedVersions)
	}
	// Every named schema compiles, and every reference in the document resolves.
	for name := range doc.obj("/components/schemas") {
		doc.schema(t, "/components/schemas/"+escapePtr(name))
	}
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				if _, _, found := doc.at(strings.TrimPrefix(ref, "#")); !strings.HasPrefix(ref, "#/") || !found {
					t.Errorf("%s: $ref %q does not resolve", at, ref)
				}
			}
			for k, e := range x {
				walk(e, at+"/"+escapePtr(k))
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	walk(any(doc.root), "")
}

// TestOpenAPIServed checks GET /api/openapi.json: no credentials needed, valid
// JSON, byte for byte the embedded document.
func TestOpenAPIServed(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0])
	res, body := env.Get("", "/api/openapi.json")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/openapi.json without credentials: %d %s", res.StatusCode, body)
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "application/json" {
		t.Errorf("Content-Type %q, want application/json", res.Header.Get("Content-Type"))
	}
	if !json.Valid(body) {
		t.Fatal("the served document is not valid JSON")
	}
	if !bytes.Equal(body, rest.OpenAPI) {
		t.Fatal("the served document differs from the embedded rest.OpenAPI")
	}
}

// deployKey makes a deploy key of a's default site (read-write, its traps only).
func deployKey(t testing.TB, env *ft.Env, a ft.Tenant) string {
	t.Helper()
	d := env.MustGraphQL(a.Admin, `mutation($site: ID) { createApiKey(input: {name: "deploy", scope: READ_WRITE, siteID: $site}) { key } }`,
		map[string]any{"site": a.Site.ID})
	return ft.Dig(d, "createApiKey", "key").(string)
}
