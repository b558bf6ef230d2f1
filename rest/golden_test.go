package rest_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/event"
	ft "github.com/flytrap/flytrap/flytraptest"
)

// Rewrite with: go test ./rest/ -run Golden -update
var updateGolden = flag.Bool("update", false, "rewrite the golden files under rest/testdata/golden")

// Formats the placeholders of volatile values stand for. A value that does not match
// its format is left as it is, so the golden diff shows it.
var (
	goldenID      = regexp.MustCompile(`^(org|site|trp|ses|hit|evt|key)_[0-9a-z]{26}$`)
	goldenIDIn    = regexp.MustCompile(`\b(org|site|trp|ses|hit|evt|key)_[0-9a-z]{26}\b`)
	goldenMillis  = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
	goldenSeconds = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$`)
	goldenHour    = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:00:00Z$`)
	goldenCursor  = regexp.MustCompile(`^[A-Za-z0-9+/_=-]{4,}$`)
)

// normaliseGolden replaces volatile values by placeholders naming their format:
// any id → <trp_id> (etc.), created_at → <millis> or <seconds>, a timeline hour →
// <hour>, next_cursor → <cursor>. Times the test seeded itself stay as they are.
func normaliseGolden(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normaliseGolden(k, e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normaliseGolden(key, e)
		}
		return out
	case string:
		if m := goldenID.FindStringSubmatch(x); m != nil {
			return "<" + m[1] + "_id>"
		}
		switch {
		case key == "error": // a message may name an id (a 409 names the trap in the way)
			return goldenIDIn.ReplaceAllString(x, "<${1}_id>")
		case key == "created_at" && goldenMillis.MatchString(x):
			return "<millis>"
		case key == "created_at" && goldenSeconds.MatchString(x):
			return "<seconds>"
		case key == "hour" && goldenHour.MatchString(x):
			return "<hour>"
		case key == "next_cursor" && goldenCursor.MatchString(x):
			return "<cursor>"
		}
	}
	return v
}

// goldenJSON is the canonical text of v: sorted keys, two-space indent, no HTML escaping.
func goldenJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// golden compares r (status and normalised body) with testdata/golden/name.json.
// With -update the first backend to get there writes the file and the others check against it.
type golden struct {
	written map[string]bool
}

func (g *golden) check(t *testing.T, name string, r apiReply, status int) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Helper()
		if r.Status != status {
			t.Errorf("%s: status %d, want %d", r.What, r.Status, status)
		}
		if r.Body == nil {
			t.Fatalf("%s: body is not JSON: %q", r.What, r.Raw)
		}
		got := goldenJSON(t, normaliseGolden("", r.Body))
		path := filepath.Join("testdata", "golden", name+".json")
		if *updateGolden && !g.written[path] {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			g.written[path] = true
			return
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (create it with: go test ./rest/ -run Golden -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s does not match %s (rewrite with -update if the change is intended):\n%s", r.What, path, lineDiff(string(want), string(got)))
		}
	})
}

// lineDiff shows the lines where want and got differ, with a little context.
func lineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(wl), len(gl)) && shown < 20; i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			fmt.Fprintf(&b, "line %d:\n  golden: %s\n  actual: %s\n", i+1, w, g)
			shown++
		}
	}
	return b.String()
}

// TestGolden pins every documented response shape: every field name, its JSON type and
// format (active is the integer 1, created_at has milliseconds, event created_at seconds),
// the wrappers, and the order of lists. The same files hold on every backend.
func TestGolden(t *testing.T) {
	t.Parallel()
	g := &golden{written: map[string]bool{}}
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		tn := env.Tenant("golden")
		other := env.Tenant("other") // noise that must not show
		restNewTrap(t, env, other.ReadWrite, map[string]any{"name": "not yours", "type": "page", "path": "/admin/login"})

		// Traps: create, patch, delete, list.
		created := restCall(t, env, tn.ReadWrite, http.MethodPost, "/dashboard/api/traps",
			map[string]any{"name": "Fake admin login", "path": "/admin/login", "type": "page", "description": "Decoy admin page"})
		g.check(t, "trap_create", created, http.StatusCreated)
		t1 := ft.Dig(created.Body, "data", "id").(string)
		t2 := restNewTrap(t, env, tn.ReadWrite, map[string]any{"name": "Internal users API", "path": "/api/internal/users", "type": "api"})["id"].(string)
		g.check(t, "trap_patch", restCall(t, env, tn.ReadWrite, http.MethodPatch, "/dashboard/api/traps/"+t2,
			map[string]any{"active": 0, "description": "Paused for maintenance"}), http.StatusOK)
		t3 := restNewTrap(t, env, tn.ReadWrite, map[string]any{"name": "Old robots", "type": "robots"})["id"].(string)
		g.check(t, "trap_delete", restCall(t, env, tn.ReadWrite, http.MethodDelete, "/dashboard/api/traps/"+t3, nil), http.StatusOK)
		g.check(t, "trap_list", restCall(t, env, tn.ReadOnly, http.MethodGet, "/dashboard/api/traps", nil), http.StatusOK)

		// Sessions, with times of the test's own choosing so they stay literal.
		at := func(s string) time.Time {
			v, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		ss := seedSessions(t, env, tn.Org.ID, []sessionSpec{
			{Class: "AI_AGENT_MALICIOUS", Severity: "critical", IP: "203.0.113.7", UA: "Mozilla/5.0 (compatible; AgentBot/1.0)",
				First: at("2025-06-01T03:04:05.006Z"), Last: at("2025-06-01T03:09:10.120Z"), Score: 92, Confidence: 88,
				Signals: []string{"CALLBACK_HIT", "INJECTION_FOLLOWED"}, Model: "gpt-4o", Operator: "acme-scraper",
				HitCount: 2, Tripwires: 2, Prompts: 1, Traps: []string{t1}},
			{Class: "HUMAN", Severity: "low", IP: "198.51.100.4", UA: "curl/8.5.0",
				First: at("2025-05-31T22:00:00Z"), Last: at("2025-05-31T22:00:01.5Z"), Score: 3, Confidence: 40,
				HitCount: 1, Traps: []string{t2}},
		})
		seedSessions(t, env, other.Org.ID, []sessionSpec{{Class: "BOT", Severity: "high", IP: "192.0.2.1", UA: "noise",
			First: at("2025-06-02T00:00:00Z"), Last: at("2025-06-02T00:00:00Z")}})
		seedHits(t, env, []hitSpec{
			{Session: ss[0], TrapID: t1, Method: "GET", Path: "/admin/login", Query: "next=%2Fdashboard",
				Headers: map[string][]string{"Accept": {"text/html"}, "User-Agent": {"Mozilla/5.0 (compatible; AgentBot/1.0)"}},
				At:      at("2025-06-01T03:04:05.006Z")},
			{Session: ss[0], TrapID: t1, Method: "POST", Path: "/admin/login", Body: "username=admin&password=hunter2",
				Headers: map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}},
				At:      at("2025-06-01T03:09:10.120Z")},
			{Session: ss[1], TrapID: t2, Method: "GET", Path: "/api/internal/users", At: at("2025-05-31T22:00:00Z")},
		})
		g.check(t, "sessions_list", restCall(t, env, tn.ReadOnly, http.MethodGet, "/dashboard/api/sessions", nil), http.StatusOK)
		g.check(t, "session_detail", restCall(t, env, tn.ReadOnly, http.MethodGet, "/dashboard/api/sessions/"+ss[0].ID, nil), http.StatusOK)

		// Events: the trap changes above plus a threat.detected as the detection engine writes it.
		appendEvent(t, env, tn.Org.ID, event.ThreatDetected, map[string]any{
			"session_id": ss[0].ID, "source_ip": "203.0.113.7", "classification": "ai_agent_malicious", "severity": "critical",
			"score": 92, "hit_count": 2, "tripwires_fired": 2, "extracted_model": "gpt-4o", "extracted_operator": "acme-scraper",
			"traps_triggered": []string{t1},
		})
		g.check(t, "events_list", restCall(t, env, tn.ReadOnly, http.MethodGet, "/api/v1/events", nil), http.StatusOK)

		// Analytics in an organization of their own, seeded relative to now. The timeline's
		// buckets move with the clock, so if the hour turns while this runs, it starts over.
		for attempt := 0; ; attempt++ {
			hour := time.Now().Unix() / 3600
			an := seedAnalyticsTenant(t, env, fmt.Sprintf("analytics-%d", attempt))
			overview := restCall(t, env, an.ReadOnly, http.MethodGet, "/dashboard/api/analytics/overview", nil)
			severity := restCall(t, env, an.ReadOnly, http.MethodGet, "/dashboard/api/analytics/severity", nil)
			timeline := restCall(t, env, an.ReadOnly, http.MethodGet, "/dashboard/api/analytics/timeline", nil)
			if time.Now().Unix()/3600 != hour && attempt < 3 {
				continue
			}
			checkTimelineHours(t, timeline, hour)
			g.check(t, "analytics_overview", overview, http.StatusOK)
			g.check(t, "analytics_severity", severity, http.StatusOK)
			g.check(t, "analytics_timeline", timeline, http.StatusOK)
			break
		}

		// Errors.
		g.check(t, "error_400", restCall(t, env, tn.ReadWrite, http.MethodPost, "/dashboard/api/traps", `{"name":"x","type":"api","bogus":1}`), http.StatusBadRequest)
		g.check(t, "error_401", restCall(t, env, "", http.MethodGet, "/dashboard/api/traps", nil), http.StatusUnauthorized)
		g.check(t, "error_403", restCall(t, env, tn.ReadOnly, http.MethodPost, "/dashboard/api/traps", `{"name":"x","type":"api"}`), http.StatusForbidden)
		g.check(t, "error_404", restCall(t, env, tn.ReadOnly, http.MethodGet, "/dashboard/api/sessions/ses_00000000000000000000000000", nil), http.StatusNotFound)
		g.check(t, "error_405", restCall(t, env, tn.ReadOnly, http.MethodPut, "/dashboard/api/traps", nil), http.StatusMethodNotAllowed)
		g.check(t, "error_409", restCall(t, env, tn.ReadWrite, http.MethodPost, "/dashboard/api/traps", `{"name":"again","type":"page","path":"/admin/login"}`), http.StatusConflict)
		g.check(t, "error_413", restCall(t, env, tn.ReadWrite, http.MethodPost, "/dashboard/api/traps", oneMiB()), http.StatusRequestEntityTooLarge)
	})
}

// appendEvent writes an event as the detection engine does: in a transaction, past the tenant policy.
func appendEvent(t testing.TB, env *ft.Env, org, typ string, data map[string]any) {
	t.Helper()
	tx, err := env.DB.Client.Tx(ft.System())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := event.Append(ft.System(), tx, org, typ, data); err != nil {
		_ = tx.Rollback()
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// seedAnalyticsTenant makes an organization whose figures are known: 2 active traps of 3;
// agents 3 (AI_AGENT_MALICIOUS, AI_ASSISTANT, AI_AGENT); tripwires 4; prompts 3; severities
// critical 1, high 2, medium 1, low 1; hits: 2 this hour, 1 three hours ago, 1 in the
// oldest bucket (23 hours ago) and 1 older than 24 hours.
func seedAnalyticsTenant(t testing.TB, env *ft.Env, name string) ft.Tenant {
	t.Helper()
	tn := env.Tenant(name)
	for i, typ := range []string{"page", "api", "mcp"} {
		id := restNewTrap(t, env, tn.ReadWrite, map[string]any{"name": typ, "type": typ, "path": fmt.Sprintf("/an/%d", i)})["id"].(string)
		if typ == "mcp" {
			mustOK(t, restCall(t, env, tn.ReadWrite, http.MethodPatch, "/dashboard/api/traps/"+id, `{"active":false}`), http.StatusOK)
		}
	}
	now := time.Now().UTC()
	old := now.Add(-48 * time.Hour)
	ss := seedSessions(t, env, tn.Org.ID, []sessionSpec{
		{Class: "AI_AGENT_MALICIOUS", Severity: "critical", IP: "203.0.113.1", First: old, Last: now, Tripwires: 3, Prompts: 1},
		{Class: "AI_ASSISTANT", Severity: "high", IP: "203.0.113.2", First: old, Last: old, Tripwires: 1},
		{Class: "HUMAN", Severity: "low", IP: "203.0.113.3", First: old, Last: old},
		{Class: "CRAWLER", Severity: "medium", IP: "203.0.113.4", First: old, Last: old},
		{Class: "AI_AGENT", Severity: "high", IP: "203.0.113.5", First: old, Last: old, Prompts: 2},
	})
	seedHits(t, env, []hitSpec{
		{Session: ss[0], At: now},
		{Session: ss[0], At: now},
		{Session: ss[1], At: now.Add(-3 * time.Hour)},
		{Session: ss[2], At: now.Add(-23 * time.Hour)},
		{Session: ss[3], At: now.Add(-25 * time.Hour)},
	})
	return tn
}

// checkTimelineHours: 24 buckets, an hour apart, oldest first, the last one the current hour.
func checkTimelineHours(t *testing.T, r apiReply, hour int64) {
	t.Helper()
	list, _ := r.data().([]any)
	if len(list) != 24 {
		t.Fatalf("timeline has %d buckets, want 24: %s", len(list), r.Raw)
	}
	for i, bkt := range list {
		h, err := time.Parse(time.RFC3339, fmt.Sprint(ft.Dig(bkt, "hour")))
		if err != nil {
			t.Fatalf("bucket %d: hour %v: %v", i, ft.Dig(bkt, "hour"), err)
		}
		if want := time.Unix((hour-23+int64(i))*3600, 0).UTC(); !h.Equal(want) {
			t.Errorf("bucket %d is %s, want %s", i, h, want)
		}
	}
}
