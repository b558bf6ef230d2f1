package rest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// The fuzz targets of the REST adapter send what a caller controls (query strings,
// the Last-Event-ID header, ids in paths, JSON bodies) through the real router over
// one SQLite file per target, set up once outside the fuzz function so an iteration
// costs one request. Properties: never a 5xx or a panic (the router turns a panic
// into a 500); an error is exactly {"success": false, "error": "…"}, names what is
// wrong and repeats a bounded amount of the caller's text; a cursor the API issued
// is taken back. Run one for longer with:
//
//	go test ./rest/ -run '^$' -fuzz '^FuzzSessionsQuery$' -fuzztime 5m

// maxErrorLen bounds an error message whatever the caller sent (bodies reach 1 MiB).
const maxErrorLen = 600

// fieldFirst is an error message that starts by naming the field at fault ("limit: …");
// an unknown field is named as the caller spelt it, so the name may hold anything.
var fieldFirst = regexp.MustCompile(`(?s)^.+?: \S`)

// fuzzServer is the real router over one SQLite file holding one tenant's data.
type fuzzServer struct {
	env      *ft.Env
	h        http.Handler
	a        ft.Tenant
	trapID   string
	webhook  string // an inactive endpoint: nothing is ever sent from a fuzz run
	session  string
	sessions string // a next_cursor of the sessions list
	events   string // a next_cursor of the events list
	delivery string // a next_cursor of an endpoint's deliveries
}

func newFuzzServer(f *testing.F) *fuzzServer {
	f.Helper()
	env := ft.Start(f, ft.Backends()[0])
	s := &fuzzServer{env: env, h: env.Server.Handler(), a: env.Tenant("acme")}
	s.trapID = restNewTrap(f, env, s.a.ReadWrite, map[string]any{"name": "a", "type": "api", "path": "/fuzz/a"})["id"].(string)
	trapB := restNewTrap(f, env, s.a.ReadWrite, map[string]any{"name": "b", "type": "mcp", "path": "/fuzz/b"})["id"].(string)
	ss := seedSessions(f, env, s.a.Org.ID, variedSessions(9, time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC), s.trapID, trapB))
	seedHits(f, env, hitsForTraps(ss))
	s.session = ss[0].ID
	wh := mustOK(f, restCall(f, env, s.a.Admin, http.MethodPost, "/dashboard/api/webhooks",
		map[string]any{"url": "https://hooks.example.com/flytrap", "active": false}), http.StatusCreated)
	s.webhook = wh.data().(map[string]any)["id"].(string)
	for i := range 3 {
		env.DB.Client.WebhookDelivery.Create().SetOrgID(s.a.Org.ID).SetEndpointID(s.webhook).
			SetMessageID(fmt.Sprintf("evt_fuzz%d", i)).SetEventType("trap.created").
			SetPayload(map[string]any{"n": i}).SaveX(ft.System())
	}
	next := func(path string) string {
		r := mustOK(f, restCall(f, env, s.a.Admin, http.MethodGet, path, nil), http.StatusOK)
		if c, _ := ft.Dig(r.plain(f), "pagination", "next_cursor").(string); c != "" {
			return c
		}
		c, _ := ft.Dig(r.plain(f), "next_cursor").(string)
		return c
	}
	s.sessions = next("/dashboard/api/sessions?limit=2")
	s.events = next("/api/v1/events?limit=1")
	s.delivery = next("/dashboard/api/webhooks/" + s.webhook + "/deliveries?limit=1")
	if s.sessions == "" || s.events == "" || s.delivery == "" {
		f.Fatalf("no issued cursor: sessions %q, events %q, deliveries %q", s.sessions, s.events, s.delivery)
	}
	return s
}

// reply is one answer of the router.
type reply struct {
	what   string
	status int
	header http.Header
	body   []byte
}

// streamRecorder ends the request once a stream has opened: the fuzz wants to know
// it opened, not to follow it.
type streamRecorder struct {
	*httptest.ResponseRecorder
	stop context.CancelFunc
}

func (s streamRecorder) WriteHeader(code int) {
	s.ResponseRecorder.WriteHeader(code)
	if strings.HasPrefix(s.Header().Get("Content-Type"), "text/event-stream") {
		s.stop()
	}
}

// send parses the request as the HTTP server would, from its wire form (false when
// the server itself would refuse it), and serves it through the router.
func (s *fuzzServer) send(token, method, target, body string, headers ...string) (reply, bool) {
	var raw strings.Builder
	fmt.Fprintf(&raw, "%s %s HTTP/1.1\r\nHost: flytrap.test\r\nAuthorization: Bearer %s\r\n", method, target, token)
	for i := 0; i+1 < len(headers); i += 2 {
		if !validHeaderValue(headers[i+1]) {
			return reply{}, false
		}
		fmt.Fprintf(&raw, "%s: %s\r\n", headers[i], headers[i+1])
	}
	if body != "" {
		fmt.Fprintf(&raw, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	raw.WriteString("\r\n")
	raw.WriteString(body)
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw.String())))
	if err != nil || req.Header.Get("Authorization") != "Bearer "+token {
		return reply{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req = req.WithContext(ctx)
	req.RemoteAddr = "192.0.2.7:40000"
	rec := streamRecorder{httptest.NewRecorder(), cancel}
	s.h.ServeHTTP(rec, req)
	return reply{what: method + " " + clipText(target, 200), status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}, true
}

// validHeaderValue is what net/http's server accepts in a header value.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// check fails t unless r has one of the statuses; an error must be in the document's shape,
// bounded, and (when named is set) start with the field at fault.
func check(t *testing.T, r reply, named bool, statuses ...int) {
	t.Helper()
	if !slices.Contains(statuses, r.status) {
		t.Fatalf("%s: status %d, want one of %v: %s", r.what, r.status, statuses, clipText(string(r.body), 1000))
	}
	if r.status < 400 {
		return
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s: %d with Content-Type %q", r.what, r.status, ct)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil || len(m) != 2+len(conflictID(r.status, m)) || m["success"] != false {
		t.Fatalf("%s: %d body %s, want exactly {\"success\": false, \"error\": \"…\"} (and a 409's conflict_id)", r.what, r.status, clipText(string(r.body), 1000))
	}
	msg, _ := m["error"].(string)
	switch {
	case strings.TrimSpace(msg) == "":
		t.Fatalf("%s: %d with an empty error", r.what, r.status)
	case len(msg) > maxErrorLen:
		t.Fatalf("%s: error of %d bytes (at most %d): %s", r.what, len(msg), maxErrorLen, clipText(msg, 300))
	case named && r.status == http.StatusBadRequest && !fieldFirst.MatchString(msg):
		t.Fatalf("%s: 400 names no field: %q", r.what, msg)
	}
}

// fuzzList fuzzes the query string of a paginated list: 200 or a 400 naming the
// parameter; a 200's next_cursor, sent back with the same filters, is a 200 again.
func fuzzList(f *testing.F, path func(s *fuzzServer) string, cursorAt func(v any) string, seeds func(s *fuzzServer) []string) {
	s := newFuzzServer(f)
	for _, q := range seeds(s) {
		f.Add(q)
	}
	for _, q := range commonQuerySeeds {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		target := path(s) + "?" + q
		r, sent := s.send(s.a.Admin, http.MethodGet, target, "")
		if !sent {
			return
		}
		check(t, r, true, http.StatusOK, http.StatusBadRequest)
		if r.status != http.StatusOK {
			return
		}
		var v any
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatalf("%s: 200 is not JSON: %v", r.what, err)
		}
		next := cursorAt(v)
		if next == "" {
			return
		}
		vals, err := url.ParseQuery(q)
		if err != nil {
			t.Fatalf("%s: 200 for a query string that does not decode: %v", r.what, err)
		}
		vals.Set("cursor", next)
		r2, _ := s.send(s.a.Admin, http.MethodGet, path(s)+"?"+vals.Encode(), "")
		if r2.status != http.StatusOK {
			t.Fatalf("%s: the issued cursor %q is refused: %d %s", r2.what, next, r2.status, clipText(string(r2.body), 500))
		}
	})
}

// commonQuerySeeds are query strings every list is tried with.
var commonQuerySeeds = []string{
	"", "limit=1", "limit=100", "limit=0", "limit=101", "limit=-1", "limit=1e2", "limit=99999999999999999999",
	"cursor=", "cursor=%%%", "limit=%zz", "%zz=1", "=", "&&&", "a=1;b=2", "limit=1&limit=2",
	"cursor=zz", "cursor=" + strings.Repeat("A", 4000), "cursor=gqRpZA", "cursor=kqJpZMA",
	"nope=1", "LIMIT=1", "limit=%31", "limit=+1", "limit= 1", "limit=\u00a01",
}

func pagination(v any) string { c, _ := ft.Dig(v, "pagination", "next_cursor").(string); return c }

func FuzzSessionsQuery(f *testing.F) {
	fuzzList(f, func(*fuzzServer) string { return "/dashboard/api/sessions" }, pagination, func(s *fuzzServer) []string {
		return []string{
			"cursor=" + s.sessions, "limit=2&cursor=" + s.sessions, "cursor=" + s.events, "cursor=" + s.delivery,
			"classification=automated_agent", "classification=HUMAN&severity=High", "classification=x", "severity=none",
			"trap_id=" + s.trapID, "trap_id=trp_x", "trap_id=" + s.session,
			"source_ip=198.51.100.1", "source_ip=::1", "source_ip=fe80::1%25eth0", "source_ip=1.2.3", "source_ip=%00",
			"since=2026-11-22T08:00:00Z", "until=2026-11-22T09:00:00.123456789%2B02:00", "since=2026-13-01T00:00:00Z",
			"since=yesterday", "since=-99999-01-01T00:00:00Z", "since=2026-11-22T08:00:00Z&until=2026-11-01T00:00:00Z",
			"limit=3&classification=automated_agent&severity=high&source_ip=198.51.100.3&since=2000-01-01T00:00:00Z&until=2100-01-01T00:00:00Z&trap_id=" + s.trapID,
		}
	})
}

func FuzzEventsQuery(f *testing.F) {
	fuzzList(f, func(*fuzzServer) string { return "/api/v1/events" }, func(v any) string {
		c, _ := ft.Dig(v, "next_cursor").(string)
		return c
	}, func(s *fuzzServer) []string {
		return []string{
			"cursor=" + s.events, "limit=1&cursor=" + s.events, "cursor=" + s.sessions,
			"type=trap.created", "type=trap.created,%20trap.deleted", "type=trap.created,trap.created", "type=,", "type=nope",
			"type=trap.*", "cursor=cG9zOi0x", "cursor=cG9zOjk5OTk5OTk5OTk5OTk5OTk5OTk5", "cursor=cG9zOg", "cursor=cG9zOjE=",
		}
	})
}

func FuzzDeliveriesQuery(f *testing.F) {
	fuzzList(f, func(s *fuzzServer) string { return "/dashboard/api/webhooks/" + s.webhook + "/deliveries" }, pagination, func(s *fuzzServer) []string {
		return []string{
			"cursor=" + s.delivery, "limit=1&cursor=" + s.delivery, "cursor=" + s.sessions, "cursor=" + s.events,
			"status=pending", "status=SUCCEEDED", "status=nope", "status=",
		}
	})
}

// FuzzEventsStream fuzzes where a stream resumes: the query string and the
// Last-Event-ID header. A stream that opens is a 200 and is ended at once.
func FuzzEventsStream(f *testing.F) {
	s := newFuzzServer(f)
	for _, q := range []string{"", "type=trap.created", "type=nope", "cursor=" + s.events, "cursor=%%%", "limit=1", "cursor=" + s.sessions} {
		for _, id := range []string{"", s.events, "cG9zOjA", "x", s.sessions, "%%%", strings.Repeat("9", 100)} {
			f.Add(q, id)
		}
	}
	f.Fuzz(func(t *testing.T, q, lastEventID string) {
		var headers []string
		if lastEventID != "" {
			headers = []string{"Last-Event-ID", lastEventID}
		}
		r, sent := s.send(s.a.Admin, http.MethodGet, "/api/v1/events/stream?"+q, "", headers...)
		if !sent {
			return
		}
		check(t, r, true, http.StatusOK, http.StatusBadRequest)
		if r.status == http.StatusOK && !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("%s: 200 that is not an event stream: %s", r.what, clipText(string(r.body), 300))
		}
	})
}

// FuzzResourceID fuzzes the ids in paths: a malformed id is a 400, an unknown one a 404.
func FuzzResourceID(f *testing.F) {
	s := newFuzzServer(f)
	for _, id := range []string{s.session, s.trapID, s.webhook, "ses_x", "ses_" + strings.Repeat("0", 26), "ses_" + strings.Repeat("z", 26),
		"whk_01m84wnm2xvsfenn7cm7d7zmbd", "%2e%2e", "..", "a%2Fb", "%zz", "", "ses_01M84WNM2XVSFENN7CM7D7ZMBD", "ses_\u00e901m84wnm2xvsfenn7cm7d7zmb"} {
		for route := range 4 {
			f.Add(uint8(route), id)
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, id string) {
		if strings.ContainsAny(id, "/?#") {
			return // another route, or a query string: not an id
		}
		var r reply
		var sent bool
		switch route % 4 {
		case 0:
			r, sent = s.send(s.a.Admin, http.MethodGet, "/dashboard/api/sessions/"+id, "")
		case 1:
			r, sent = s.send(s.a.Admin, http.MethodGet, "/dashboard/api/webhooks/"+id, "")
		case 2:
			r, sent = s.send(s.a.Admin, http.MethodGet, "/dashboard/api/webhooks/"+id+"/deliveries", "")
		case 3:
			r, sent = s.send(s.a.ReadWrite, http.MethodPatch, "/dashboard/api/traps/"+id, `{"description": "fuzzed"}`)
		}
		if !sent {
			return
		}
		check(t, r, false, http.StatusOK, http.StatusBadRequest, http.StatusNotFound, http.StatusMovedPermanently, http.StatusTemporaryRedirect)
	})
}

// bodySeeds are JSON bodies every body target is tried with.
var bodySeeds = []string{
	`{}`, `[]`, `null`, `""`, `0`, `{"name": 1}`, `{"name": "x"} {}`, `{"name": "x"`, `{"name": "x", "name": "y"}`,
	`{"unknown": 1}`, `{"active": 2}`, `{"active": "1"}`, `{"active": true}`, `{"active": 1}`, `{"active": null}`,
	`{"name": null}`, `{"name": "\u0000"}`, `{"name": "\ud800"}`, `{"name": "` + strings.Repeat("n", 300) + `"}`,
	`{"description": "` + strings.Repeat("d", 3000) + `"}`, `{"` + strings.Repeat("k", 3000) + `": 1}`,
	`{"name": {"a": [1, 2, {"b": null}]}}`, `{"name": 1e999}`, "\xef\xbb\xbf{}", `{"name": "x"}` + strings.Repeat(" ", 100),
}

// FuzzTrapBody fuzzes the bodies of POST /dashboard/api/traps and PATCH /dashboard/api/traps/{id}.
func FuzzTrapBody(f *testing.F) {
	s := newFuzzServer(f)
	for _, b := range append(slices.Clone(bodySeeds),
		`{"name": "n", "type": "api"}`, `{"name": "n", "type": "api", "path": "/fuzz/a"}`, `{"name": "n", "type": "nope"}`,
		`{"name": "n", "type": "api", "path": "no-slash"}`, `{"name": "n", "type": "api", "path": "/`+strings.Repeat("p", 5000)+`"}`,
		`{"name": "n", "type": "api", "site_id": "site_x"}`, `{"name": "n", "type": "api", "site_id": "`+strings.Repeat("s", 3000)+`"}`, `{"name": "n", "type": "api", "site_id": "ses_01m84wnm2xvsfenn7cm7d7zmbd"}`,
		`{"name": "", "type": "robots", "description": "d", "path": "/a/../b"}`, `{"name": "renamed", "active": 0}`,
		`{"description": "d", "active": false}`, `{"name": "n", "type": "api", "path": "/x?y=1#z"}`,
	) {
		f.Add(false, b)
		f.Add(true, b)
	}
	f.Fuzz(func(t *testing.T, patch bool, body string) {
		method, path := http.MethodPost, "/dashboard/api/traps"
		if patch {
			method, path = http.MethodPatch, "/dashboard/api/traps/"+s.trapID
		}
		if body == "" {
			body = " " // a body is sent; an empty one is a case of its own
		}
		r, sent := s.send(s.a.ReadWrite, method, path, body)
		if !sent {
			return
		}
		check(t, r, true, http.StatusOK, http.StatusCreated, http.StatusBadRequest, http.StatusConflict)
		if patch && r.status == http.StatusOK {
			// Keep the trap active and named, so each run starts alike.
			s.send(s.a.ReadWrite, http.MethodPatch, path, `{"name": "a", "description": "", "active": 1}`)
		}
	})
}

// FuzzWebhookBody fuzzes the bodies of POST /dashboard/api/webhooks and PATCH /dashboard/api/webhooks/{id}.
// The endpoints it makes hear nothing: the fuzz server writes no event after its setup.
func FuzzWebhookBody(f *testing.F) {
	s := newFuzzServer(f)
	for _, b := range append(slices.Clone(bodySeeds),
		`{"url": "https://hooks.example.com/a"}`, `{"url": "http://127.0.0.1:1/x", "active": 0}`, `{"url": "ftp://x"}`,
		`{"url": "https://user:pw@example.com/"}`, `{"url": "https://"}`, `{"url": "//example.com"}`, `{"url": "https://[::1"}`,
		`{"url": "https://example.com/", "event_types": ["trap.*", "*", "threat.detected"]}`, `{"event_types": ["nope"]}`, `{"event_types": ["`+strings.Repeat("x", 3000)+`"]}`,
		`{"event_types": [1]}`, `{"event_types": null}`, `{"event_types": "trap.created"}`,
		`{"event_types": [`+strings.TrimSuffix(strings.Repeat(`"`+strings.Repeat("x", 500)+`",`, 40), ",")+`]}`,
		`{"format": "slack"}`, `{"format": "nope"}`, `{"throttle_minutes": -1}`, `{"throttle_minutes": 1.5}`,
		`{"throttle_minutes": 99999999999999999999}`, `{"authorization": "Bearer x"}`, `{"authorization": "a\r\nb"}`,
		`{"description": "d"}`,
	) {
		f.Add(false, b)
		f.Add(true, b)
	}
	f.Fuzz(func(t *testing.T, patch bool, body string) {
		method, path := http.MethodPost, "/dashboard/api/webhooks"
		if patch {
			method, path = http.MethodPatch, "/dashboard/api/webhooks/"+s.webhook
		}
		if body == "" {
			body = " "
		}
		r, sent := s.send(s.a.Admin, method, path, body)
		if !sent {
			return
		}
		check(t, r, true, http.StatusOK, http.StatusCreated, http.StatusBadRequest, http.StatusConflict)
		if r.status == http.StatusOK || r.status == http.StatusCreated {
			var v any
			_ = json.Unmarshal(r.body, &v)
			if active, _ := ft.Dig(v, "data", "active").(bool); active {
				id, _ := ft.Dig(v, "data", "id").(string)
				s.send(s.a.Admin, http.MethodPatch, "/dashboard/api/webhooks/"+id, `{"active": false}`)
			}
		}
	})
}
