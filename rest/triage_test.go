package rest_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/ent"
	entevent "github.com/flytrap/flytrap/ent/event"
	ft "github.com/flytrap/flytrap/flytraptest"
)

// TestTriage: sessions are triaged in bulk through REST and GraphQL; each change records
// who and when and writes one session.triaged event (none when nothing changes); the lists
// filter by state; the gate counts only unresolved sessions; the bounds and scopes hold.
func TestTriage(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a, other := env.Tenant("acme"), env.Tenant("other")
		base := time.Now().UTC().Truncate(time.Millisecond)
		specs := []sessionSpec{
			{Class: "AI_AGENT_MALICIOUS", Severity: "critical", IP: "203.0.113.1", First: base.Add(-10 * time.Minute), Last: base.Add(-5 * time.Minute)},
			{Class: "AI_AGENT", Severity: "high", IP: "203.0.113.2", First: base.Add(-3 * time.Hour), Last: base.Add(-2 * time.Hour)},
			{Class: "BOT", Severity: "low", IP: "203.0.113.3", First: base.Add(-time.Minute), Last: base},
		}
		ss := seedSessions(t, env, a.Org.ID, specs)
		theirs := seedSessions(t, env, other.Org.ID, specs[:1])
		crit, high, low := ss[0].ID, ss[1].ID, ss[2].ID

		gate := func(q string) map[string]any {
			t.Helper()
			r := mustOK(t, restCall(t, env, a.ReadOnly, http.MethodGet, "/dashboard/api/gate?"+q, nil), http.StatusOK)
			return ft.Dig(r.plain(t), "data").(map[string]any)
		}
		if g := gate("fail_on=high"); g["failed"] != true || g["count"] != 2.0 {
			t.Fatalf("gate before triage: %v, want failed with 2 sessions", g)
		}
		if g := gate("fail_on=critical&since=1h"); g["failed"] != true || g["count"] != 1.0 {
			t.Fatalf("gate critical since 1h: %v, want failed with 1 session", g)
		}
		if g := gate("fail_on=HIGH&since=" + url.QueryEscape(base.Add(-time.Hour).Format(time.RFC3339))); g["count"] != 1.0 {
			t.Fatalf("gate high since an RFC 3339 time: %v, want 1 session", g)
		}

		// Refusals change nothing.
		for _, c := range []struct {
			key  string
			body any
			want int
			says string
		}{
			{a.ReadOnly, map[string]any{"ids": []string{crit}, "state": "resolved"}, 403, "read-write"},
			{a.ReadWrite, map[string]any{"ids": []string{crit}, "state": "done"}, 400, "not a triage state"},
			{a.ReadWrite, map[string]any{"ids": []string{crit}}, 400, "state"},
			{a.ReadWrite, map[string]any{"ids": []string{}, "state": "resolved"}, 400, "1 to 100"},
			{a.ReadWrite, map[string]any{"ids": manyIDs(crit, 101), "state": "resolved"}, 400, "1 to 100"},
			{a.ReadWrite, map[string]any{"ids": []string{crit, "trp_01m8fc3t3tc3974xrnn55mymeq"}, "state": "resolved"}, 400, "not a session id"},
			{a.ReadWrite, map[string]any{"ids": []string{crit, theirs[0].ID}, "state": "resolved"}, 404, theirs[0].ID},
			{a.ReadWrite, `{"ids": "ses_x", "state": "resolved"}`, 400, ""},
		} {
			r := restCall(t, env, c.key, http.MethodPost, "/dashboard/api/triage", c.body)
			if r.Status != c.want || !strings.Contains(string(r.Raw), c.says) {
				t.Errorf("POST /dashboard/api/triage %v: %d %s, want %d mentioning %q", c.body, r.Status, r.Raw, c.want, c.says)
			}
		}
		if g := gate("fail_on=high"); g["count"] != 2.0 {
			t.Fatalf("a refused triage changed the gate: %v", g)
		}

		// Resolve the critical one and acknowledge the high one, duplicates counted once.
		r := mustOK(t, restCall(t, env, a.ReadWrite, http.MethodPost, "/dashboard/api/triage",
			map[string]any{"ids": []string{crit, crit, low}, "state": "resolved"}), http.StatusOK)
		d := ft.Dig(r.plain(t), "data").(map[string]any)
		if d["changed"] != 2.0 || len(d["sessions"].([]any)) != 2 {
			t.Fatalf("triage: %v, want 2 changed sessions", d)
		}
		s0 := d["sessions"].([]any)[0].(map[string]any)
		if s0["id"] != crit || s0["triage_state"] != "resolved" || !strings.HasPrefix(s0["triaged_by"].(string), "key_") ||
			s0["triaged_by_name"] != "READ_WRITE key" || s0["triaged_at"] == nil {
			t.Fatalf("triaged session: %v", s0)
		}
		again := mustOK(t, restCall(t, env, a.ReadWrite, http.MethodPost, "/dashboard/api/triage",
			map[string]any{"ids": []string{crit}, "state": "RESOLVED"}), http.StatusOK)
		if n := ft.Dig(again.plain(t), "data", "changed"); n != 0.0 {
			t.Fatalf("triaging to the same state again changed %v sessions", n)
		}
		env.MustGraphQL(a.ReadWrite, `mutation($ids: [ID!]!) { triageSessions(input: {ids: $ids, state: acknowledged}) { changed } }`,
			map[string]any{"ids": []string{high}})

		// The gate: acknowledged still counts, resolved does not.
		if g := gate("fail_on=high"); g["failed"] != true || g["count"] != 1.0 || ft.Dig(g, "sessions", 0, "id") != high {
			t.Fatalf("gate after triage: %v, want the acknowledged high session only", g)
		}
		if g := gate("fail_on=critical"); g["failed"] != false || g["count"] != 0.0 || len(g["sessions"].([]any)) != 0 {
			t.Fatalf("gate critical after resolving: %v, want passed", g)
		}
		if gq := env.MustGraphQL(a.ReadOnly, `{ gate(failOn: critical) { failed count } }`, nil); ft.Dig(gq, "gate", "failed") != false {
			t.Fatalf("GraphQL gate: %v", gq)
		}

		// The lists filter by state.
		list := func(q string) []string {
			r := mustOK(t, restCall(t, env, a.ReadOnly, http.MethodGet, "/dashboard/api/sessions?"+q, nil), http.StatusOK)
			var out []string
			for _, s := range ft.Dig(r.plain(t), "data").([]any) {
				out = append(out, s.(map[string]any)["id"].(string))
			}
			return out
		}
		if got := fmt.Sprint(list("triage_state=resolved")); got != fmt.Sprint([]string{low, crit}) {
			t.Errorf("triage_state=resolved: %v", got)
		}
		if got := fmt.Sprint(list("triage_state=open,acknowledged")); got != fmt.Sprint([]string{high}) {
			t.Errorf("triage_state=open,acknowledged: %v", got)
		}
		if r := restCall(t, env, a.ReadOnly, http.MethodGet, "/dashboard/api/sessions?triage_state=closed", nil); r.Status != 400 {
			t.Errorf("triage_state=closed: %d", r.Status)
		}
		gq := env.MustGraphQL(a.ReadOnly, `{ sessions(where: {triageStateIn: [resolved]}) { totalCount edges { node { id triageState } } } }`, nil)
		if ft.Dig(gq, "sessions", "totalCount") != 2.0 {
			t.Errorf("GraphQL triageStateIn: %v", gq)
		}

		// One session.triaged event per change, with who, and the type filter's wildcard.
		r = mustOK(t, restCall(t, env, a.ReadOnly, http.MethodGet, "/api/v1/events?type=session.*", nil), http.StatusOK)
		evs := ft.Dig(r.plain(t), "events").([]any)
		if len(evs) != 3 {
			t.Fatalf("session.* events: %d, want 3 (two resolved, one acknowledged): %s", len(evs), r.Raw)
		}
		e0 := evs[0].(map[string]any)
		if e0["type"] != "session.triaged" || ft.Dig(e0, "data", "session_id") != crit || ft.Dig(e0, "data", "state") != "resolved" ||
			ft.Dig(e0, "data", "previous_state") != "open" || ft.Dig(e0, "data", "severity") != "critical" ||
			ft.Dig(e0, "data", "triaged_by_name") != "READ_WRITE key" {
			t.Errorf("first session.triaged event: %v", e0)
		}
		if e2 := evs[2].(map[string]any); ft.Dig(e2, "data", "state") != "acknowledged" || ft.Dig(e2, "data", "session_id") != high {
			t.Errorf("third session.triaged event: %v", e2)
		}
		// The other organization sees none of it.
		r = mustOK(t, restCall(t, env, other.ReadOnly, http.MethodGet, "/api/v1/events?type=session.triaged", nil), http.StatusOK)
		if n := len(ft.Dig(r.plain(t), "events").([]any)); n != 0 {
			t.Errorf("the other organization reads %d session.triaged events", n)
		}

		// Gate refusals.
		for _, q := range []string{"", "fail_on=severe", "fail_on=high&since=yesterday", "fail_on=high&since=400d", "fail_on=high&x=1"} {
			if r := restCall(t, env, a.ReadOnly, http.MethodGet, "/dashboard/api/gate?"+q, nil); r.Status != 400 {
				t.Errorf("gate?%s: %d %s, want 400", q, r.Status, r.Raw)
			}
		}
	})
}

func manyIDs(id string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = id
	}
	return out
}

// TestEventsSinceUntilAndWildcards: the events list takes since, until and type prefixes
// (threat.*) as webhook endpoints do; the stream takes since and the prefixes too.
func TestEventsSinceUntilAndWildcards(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		appendEvent(t, env, a.Org.ID, "threat.detected", map[string]any{"session_id": "ses_1"})
		appendEvent(t, env, a.Org.ID, "threat.escalated", map[string]any{"session_id": "ses_1"})
		restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "t", "type": "page", "path": "/since"})
		// Date the events apart: the log's clock counts seconds.
		c := env.DB.Client
		evs := c.Event.Query().Where(entevent.OrgID(a.Org.ID)).Order(ent.Asc(entevent.FieldPosition)).AllX(ft.System())
		if len(evs) != 3 {
			t.Fatalf("%d events, want 3", len(evs))
		}
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i, ev := range evs {
			q := "UPDATE events SET created_at = ? WHERE id = ?"
			if env.DB.Dialect == dialect.Postgres {
				q = "UPDATE events SET created_at = $1 WHERE id = $2"
			}
			if _, err := env.DB.SQL.ExecContext(t.Context(), q, t0.Add(time.Duration(i)*time.Hour), ev.ID); err != nil {
				t.Fatal(err)
			}
		}
		types := func(q string) []string {
			t.Helper()
			r := mustOK(t, restCall(t, env, a.ReadOnly, http.MethodGet, "/api/v1/events?"+q, nil), http.StatusOK)
			var out []string
			for _, e := range ft.Dig(r.plain(t), "events").([]any) {
				out = append(out, e.(map[string]any)["type"].(string))
			}
			return out
		}
		for q, want := range map[string]string{
			"type=threat.*":                "[threat.detected threat.escalated]",
			"type=trap.*,threat.escalated": "[threat.escalated trap.created]",
			"type=*":                       "[threat.detected threat.escalated trap.created]",
			"since=2026-01-01T01:00:00Z":   "[threat.escalated trap.created]",
			"since=2026-01-01T00:30:00Z&until=2026-01-01T02:00:00Z": "[threat.escalated]",
			"until=2026-01-01T01:00:00Z":                            "[threat.detected]",
			"since=2026-01-01T01:00:00Z&type=threat.*":              "[threat.escalated]",
			"since=2027-01-01T00:00:00Z":                            "[]",
		} {
			if got := fmt.Sprint(types(q)); got != want {
				t.Errorf("events?%s: %s, want %s", q, got, want)
			}
		}
		for _, q := range []string{"type=nothing.*", "type=threat", "type=threat.%2A%2A", "since=yesterday", "until=2026-13-01T00:00:00Z"} {
			if r := restCall(t, env, a.ReadOnly, http.MethodGet, "/api/v1/events?"+q, nil); r.Status != 400 {
				t.Errorf("events?%s: %d %s, want 400", q, r.Status, r.Raw)
			}
		}
		// A page that reaches until says there is no more.
		r := mustOK(t, restCall(t, env, a.ReadOnly, http.MethodGet, "/api/v1/events?limit=1&until=2026-01-01T01:30:00Z", nil), http.StatusOK)
		cur := ft.Dig(r.plain(t), "next_cursor").(string)
		r = mustOK(t, restCall(t, env, a.ReadOnly, http.MethodGet, "/api/v1/events?limit=1&until=2026-01-01T01:30:00Z&cursor="+cur, nil), http.StatusOK)
		if ft.Dig(r.plain(t), "has_more") != false || ft.Dig(r.plain(t), "events", 0, "type") != "threat.escalated" {
			t.Errorf("second page up to until: %s", r.Raw)
		}
		// The stream: since replays from then on, type takes prefixes, then it follows live.
		_, sc := openStream(t, env, a.ReadOnly, "?type=threat.*,trap.*&since=2026-01-01T00:30:00Z", "")
		for _, want := range []string{"threat.escalated", "trap.created"} {
			if m := nextEvent(t, sc); !strings.Contains(m.Data, `"type":"`+want+`"`) {
				t.Fatalf("stream since: %s, want %s", m.Data, want)
			}
		}
		live := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "live", "type": "page", "path": "/live"})["id"].(string)
		if m := nextEvent(t, sc); !strings.Contains(m.Data, live) {
			t.Fatalf("stream after the replay: %s, want the live %s", m.Data, live)
		}
		if r, _ := openStream(t, env, a.ReadOnly, "?type=threat", ""); r.StatusCode != 400 {
			t.Errorf("stream ?type=threat: %d, want 400", r.StatusCode)
		}
		// GraphQL: the events connection filters by createdAt and typeHasPrefix.
		gq := env.MustGraphQL(a.ReadOnly, `{ events(where: {typeHasPrefix: "threat.", createdAtGTE: "2026-01-01T01:00:00Z"}) { edges { node { type } } } }`, nil)
		if got := fmt.Sprint(ft.Dig(gq, "events", "edges", 0, "node", "type")); got != "threat.escalated" {
			t.Errorf("GraphQL events where: %v", gq)
		}
	})
}
