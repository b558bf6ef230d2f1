package rest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/event"
	ft "github.com/flytrap/flytrap/flytraptest"
)

// The REST layer is a translation of the GraphQL resolvers: for the same data both APIs
// must give the same answer, field for field, in the same order. These tests read one
// fixture through both and compare, after mapping GraphQL's names and types onto the
// document's (createdAt → created_at with milliseconds, active true → 1, …).

// gqlTime reformats a GraphQL Time with layout, or returns the value unchanged if it is not one.
func gqlTime(v any, layout string) any {
	s, _ := v.(string)
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return v
	}
	return tm.UTC().Format(layout)
}

const (
	millisLayout  = "2006-01-02T15:04:05.000Z"
	secondsLayout = "2006-01-02T15:04:05Z"
)

func gqlTrapAsREST(n map[string]any) map[string]any {
	active := 0.0
	if n["active"] == true {
		active = 1
	}
	return map[string]any{
		"id": n["id"], "name": n["name"], "path": n["path"], "type": n["type"], "description": n["description"],
		"public_title": n["publicTitle"], "active": active, "created_at": gqlTime(n["createdAt"], millisLayout), "org_id": n["orgID"], "site_id": n["siteID"],
	}
}

func gqlSessionAsREST(n map[string]any) map[string]any {
	return map[string]any{
		"id": n["id"], "source_ip": n["sourceIP"], "user_agent": n["userAgent"], "classification": n["classification"],
		"score": n["score"], "confidence": n["confidence"], "severity": n["severity"], "signals_fired": n["signalsFired"],
		"first_seen": gqlTime(n["firstSeen"], millisLayout), "last_seen": gqlTime(n["lastSeen"], millisLayout),
		"hit_count": n["hitCount"], "extracted_model": n["extractedModel"], "extracted_operator": n["extractedOperator"],
		"traps_triggered": n["trapsTriggered"], "triage_state": n["triageState"], "triaged_by": n["triagedBy"],
		"triaged_by_name": n["triagedByName"], "triaged_at": gqlTime(n["triagedAt"], millisLayout),
	}
}

func gqlHitAsREST(n map[string]any) map[string]any {
	h := map[string]any{
		"id": n["id"], "trap_id": n["trapID"], "method": n["method"], "path": n["path"], "query": n["query"],
		"headers": n["headers"], "body": n["body"], "body_truncated": n["bodyTruncated"], "source_ip": n["sourceIP"],
		"user_agent": n["userAgent"], "received_at": gqlTime(n["receivedAt"], millisLayout),
		"kind": n["kind"], "status": n["status"], "signals": n["signals"],
	}
	if _, ok := n["ja4"]; ok { // the session detail's hits carry the client's fingerprints
		h["ja4"], h["h2_fingerprint"], h["header_order"], h["client_stack"] = n["ja4"], n["h2Fingerprint"], n["headerOrder"], n["clientStack"]
	}
	return h
}

func gqlSignalAsREST(n map[string]any) map[string]any {
	return map[string]any{
		"name": n["name"], "tripwire": n["tripwire"], "hit_id": n["hitID"], "placement": n["placement"],
		"source_hit_id": n["sourceHitID"], "delay_ms": n["delayMs"], "detail": n["detail"],
		"created_at": gqlTime(n["createdAt"], millisLayout),
	}
}

func gqlEventAsREST(n map[string]any) map[string]any {
	return map[string]any{
		"id": n["id"], "type": n["type"], "api_version": n["apiVersion"],
		"created_at": gqlTime(n["createdAt"], secondsLayout), "data": n["data"],
	}
}

// gqlNodes returns the nodes of a connection at path in d.
func gqlNodes(d map[string]any, path ...any) []map[string]any {
	edges, _ := ft.Dig(d, append(path, "edges")...).([]any)
	out := make([]map[string]any, len(edges))
	for i, e := range edges {
		out[i], _ = ft.Dig(e, "node").(map[string]any)
	}
	return out
}

// sameJSONValue compares two decoded JSON values and reports the first difference.
func sameJSONValue(t testing.TB, what string, rest, gql any) bool {
	t.Helper()
	if reflect.DeepEqual(rest, gql) {
		return true
	}
	r, _ := json.Marshal(rest)
	g, _ := json.Marshal(gql)
	t.Errorf("%s: REST and GraphQL differ\n REST:    %s\n GraphQL: %s", what, clipText(string(r), 1500), clipText(string(g), 1500))
	return false
}

// TestAgreeRESTGraphQL reads one fixture through both APIs on every backend.
func TestAgreeRESTGraphQL(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		fx := startAgreeFixture(t, b)
		t.Run("traps", func(t *testing.T) { agreeTraps(t, fx) })
		t.Run("sessions", func(t *testing.T) { agreeSessions(t, fx) })
		t.Run("session detail", func(t *testing.T) { agreeSessionDetail(t, fx) })
		t.Run("analytics", func(t *testing.T) { agreeAnalytics(t, fx) })
		t.Run("events", func(t *testing.T) { agreeEvents(t, fx) })
		t.Run("gate", func(t *testing.T) { agreeGate(t, fx) })
	})
}

// agreeGate: GET /dashboard/api/gate is the GraphQL gate query, and both see the fixture's
// triage: the resolved and ignored sessions do not count.
func agreeGate(t *testing.T, fx *agreeFixture) {
	since := fx.base.Add(-2 * time.Hour).Format(time.RFC3339Nano)
	for _, sev := range []string{"critical", "high", "medium", "low"} {
		for _, win := range []string{"", since} {
			q := url.Values{"fail_on": {sev}}
			vars := map[string]any{"failOn": sev}
			if win != "" {
				q.Set("since", win)
				vars["since"] = win
			}
			r := mustOK(t, restCall(t, fx.env, fx.a.ReadOnly, http.MethodGet, "/dashboard/api/gate?"+q.Encode(), nil), http.StatusOK)
			rest, _ := ft.Dig(r.plain(t), "data").(map[string]any)
			d := gqlData(t, fx.env, fx.a.ReadOnly, `query($failOn: Severity!, $since: Time) { gate(failOn: $failOn, since: $since) {
				failed count countExact severities since sessions { id sourceIP userAgent classification score confidence severity
				signalsFired firstSeen lastSeen hitCount extractedModel extractedOperator trapsTriggered triageState triagedBy
				triagedByName triagedAt } } }`, vars)
			g, _ := ft.Dig(d, "gate").(map[string]any)
			sessions := []any{}
			for _, n := range g["sessions"].([]any) {
				sessions = append(sessions, gqlSessionAsREST(n.(map[string]any)))
			}
			gql := map[string]any{"failed": g["failed"], "count": g["count"], "count_exact": g["countExact"],
				"severities": g["severities"], "since": gqlTime(g["since"], millisLayout), "sessions": sessions}
			sameJSONValue(t, "gate?"+q.Encode(), rest, gql)
			for _, s := range rest["sessions"].([]any) {
				if st := s.(map[string]any)["triage_state"]; st != "open" && st != "acknowledged" {
					t.Errorf("gate?%s counts a session in state %v", q.Encode(), st)
				}
			}
			if sev == "low" && win == "" && rest["failed"] != true {
				t.Errorf("gate?%s: not failed, yet the fixture has open sessions", q.Encode())
			}
		}
	}
}

// gqlData runs a GraphQL operation and fails t (not the fixture's test) on any error.
func gqlData(t testing.TB, env *ft.Env, token, query string, vars map[string]any) map[string]any {
	t.Helper()
	r := env.GraphQL(token, query, vars)
	if r.Status != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("GraphQL %d: %s", r.Status, r.Raw)
	}
	return r.Data
}

type agreeFixture struct {
	env      *ft.Env
	a        ft.Tenant
	traps    []string
	sessions []string
	detail   string // a session with hits, ties included
	base     time.Time
}

func startAgreeFixture(t *testing.T, b ft.Backend) *agreeFixture {
	env := ft.Start(t, b)
	fx := &agreeFixture{env: env, a: env.Tenant("acme")}
	other := env.Tenant("other")
	for i, typ := range []string{"page", "api", "llms_txt", "robots", "credential", "mcp"} {
		body := map[string]any{"name": fmt.Sprintf("trap %d", i), "type": typ}
		if i%2 == 0 {
			body["description"] = fmt.Sprintf("description %d", i)
		}
		if i%3 == 0 {
			body["public_title"] = fmt.Sprintf("Public title %d", i)
		}
		if typ == "page" || typ == "api" || typ == "credential" {
			body["path"] = fmt.Sprintf("/agree/%s", typ)
		}
		fx.traps = append(fx.traps, restNewTrap(t, env, fx.a.ReadWrite, body)["id"].(string))
	}
	mustOK(t, restCall(t, env, fx.a.ReadWrite, http.MethodPatch, "/dashboard/api/traps/"+fx.traps[1], `{"active":0,"name":"renamed"}`), http.StatusOK)
	mustOK(t, restCall(t, env, fx.a.ReadWrite, http.MethodDelete, "/dashboard/api/traps/"+fx.traps[5], nil), http.StatusOK)
	fx.traps = fx.traps[:5]
	otherTrap := restNewTrap(t, env, other.ReadWrite, map[string]any{"name": "theirs", "type": "page", "path": "/agree/page"})["id"].(string)

	// Recent enough to count in the analytics' 24 hours.
	fx.base = time.Now().UTC().Truncate(time.Millisecond)
	sessions := seedSessions(t, env, fx.a.Org.ID, variedSessions(60, fx.base, fx.traps[0], fx.traps[1]))
	for _, s := range sessions {
		fx.sessions = append(fx.sessions, s.ID)
	}
	seedHits(t, env, hitsForTraps(sessions))
	detail := sessions[3]
	fx.detail = detail.ID
	at := detail.LastSeen.Add(-time.Minute)
	seedHits(t, env, []hitSpec{
		{Session: detail, TrapID: fx.traps[2], Method: "POST", Path: "/x", Query: "a=1", Body: `{"k":"v"}`, At: at,
			Headers: map[string][]string{"X-A": {"1", "2"}, "Content-Type": {"application/json"}}},
		{Session: detail, Method: "GET", Path: "/y", At: at, Truncated: true,
			JA4: "t13d1812h1_85036bcba153_b26ce05bbdd6", HeaderOrder: "h105_0e0009a49490"},
		{Session: detail, TrapID: fx.traps[0], Method: "GET", Path: "/z", At: at.Add(-time.Hour), JA4: "t13d1517h2_8daaf6152771_cb7bf5808d99",
			H2: "1:65536;2:0;4:6291456;6:262144|15663105|0|m,a,s,p", HeaderOrder: "h213_63e7874454b1"},
	})
	// Triage states through both APIs: resolved and ignored by REST, acknowledged by GraphQL.
	mustOK(t, restCall(t, env, fx.a.ReadWrite, http.MethodPost, "/dashboard/api/triage",
		map[string]any{"ids": fx.sessions[0:6], "state": "resolved"}), http.StatusOK)
	mustOK(t, restCall(t, env, fx.a.ReadWrite, http.MethodPost, "/dashboard/api/triage",
		map[string]any{"ids": fx.sessions[6:9], "state": "ignored"}), http.StatusOK)
	gqlData(t, env, fx.a.ReadWrite, `mutation($ids: [ID!]!) { triageSessions(input: {ids: $ids, state: acknowledged}) { changed } }`,
		map[string]any{"ids": fx.sessions[9:12]})
	theirs := seedSessions(t, env, other.Org.ID, variedSessions(15, fx.base, otherTrap, otherTrap))
	seedHits(t, env, hitsForTraps(theirs))
	appendEvent(t, env, fx.a.Org.ID, event.ThreatDetected, map[string]any{
		"session_id": detail.ID, "source_ip": detail.SourceIP, "classification": "ai_agent", "severity": "high",
		"score": 80, "hit_count": 3, "tripwires_fired": 1, "extracted_model": "m", "extracted_operator": "o",
		"traps_triggered": []string{fx.traps[0]},
	})
	appendEvent(t, env, other.Org.ID, event.ThreatDetected, map[string]any{"session_id": theirs[0].ID})
	appendEvent(t, env, fx.a.Org.ID, event.ThreatEscalated, map[string]any{"session_id": detail.ID, "severity": "critical"})
	return fx
}

// agreeTraps: GET /dashboard/api/traps is the GraphQL traps connection, oldest first.
func agreeTraps(t *testing.T, fx *agreeFixture) {
	d := gqlData(t, fx.env, fx.a.ReadOnly, `{ traps(first: 100, orderBy: {field: CREATED_AT, direction: ASC}) {
		edges { node { id name path type description publicTitle active createdAt orgID siteID } } } }`, nil)
	var gql []any
	for _, n := range gqlNodes(d, "traps") {
		gql = append(gql, gqlTrapAsREST(n))
	}
	r := mustOK(t, restCall(t, fx.env, fx.a.ReadOnly, http.MethodGet, "/dashboard/api/traps", nil), http.StatusOK)
	rest, _ := ft.Dig(r.plain(t), "data").([]any)
	if len(rest) != len(fx.traps) {
		t.Errorf("REST lists %d traps, want %d", len(rest), len(fx.traps))
	}
	sameJSONValue(t, "traps", rest, gql)
}

// agreeSessions: the sessions list is the GraphQL sessions connection ordered by
// LAST_SEEN DESC, with each REST filter mapped onto its where input: same sessions,
// same order, same page boundaries, same values.
func agreeSessions(t *testing.T, fx *agreeFixture) {
	since := fx.base.Add(-time.Hour).Format(time.RFC3339Nano)
	until := fx.base.Add(-90 * time.Minute).Format(time.RFC3339Nano)
	cases := []struct {
		rest  url.Values
		where map[string]any
	}{
		{url.Values{}, nil},
		{url.Values{"severity": {"high"}}, map[string]any{"severity": "high"}},
		{url.Values{"classification": {"AI_AGENT"}}, map[string]any{"classification": "AI_AGENT"}},
		{url.Values{"source_ip": {"198.51.100.2"}}, map[string]any{"sourceIP": "198.51.100.2"}},
		{url.Values{"trap_id": {fx.traps[0]}}, map[string]any{"hasHitsWith": []any{map[string]any{"trapID": fx.traps[0]}}}},
		{url.Values{"since": {since}}, map[string]any{"lastSeenGTE": since}},
		{url.Values{"until": {until}}, map[string]any{"firstSeenLT": until}},
		{url.Values{"triage_state": {"open"}}, map[string]any{"triageState": "open"}},
		{url.Values{"triage_state": {"resolved,ignored"}}, map[string]any{"triageStateIn": []any{"resolved", "ignored"}}},
		{url.Values{"severity": {"medium"}, "since": {fx.base.Add(-3 * time.Hour).Format(time.RFC3339)}},
			map[string]any{"severity": "medium", "lastSeenGTE": fx.base.Add(-3 * time.Hour).Format(time.RFC3339)}},
	}
	const page = 9
	for _, c := range cases {
		what := "sessions?" + c.rest.Encode()
		// REST pages.
		var restPages [][]any
		q := cloneQuery(c.rest)
		q.Set("limit", fmt.Sprint(page))
		for {
			r := mustOK(t, restCall(t, fx.env, fx.a.ReadOnly, http.MethodGet, "/dashboard/api/sessions?"+q.Encode(), nil), http.StatusOK)
			body := r.plain(t)
			data, _ := ft.Dig(body, "data").([]any)
			restPages = append(restPages, data)
			if ft.Dig(body, "pagination", "has_more") != true {
				break
			}
			q.Set("cursor", ft.Dig(body, "pagination", "next_cursor").(string))
		}
		// GraphQL pages.
		var gqlPages [][]any
		vars := map[string]any{"first": page, "where": c.where}
		for {
			d := gqlData(t, fx.env, fx.a.ReadOnly, `query($first: Int, $after: Cursor, $where: SessionWhereInput) {
				sessions(first: $first, after: $after, where: $where, orderBy: {field: LAST_SEEN, direction: DESC}) {
					edges { node { id sourceIP userAgent classification score confidence severity signalsFired
						firstSeen lastSeen hitCount extractedModel extractedOperator trapsTriggered triageState triagedBy triagedByName triagedAt } }
					pageInfo { hasNextPage endCursor } } }`, vars)
			var nodes []any
			for _, n := range gqlNodes(d, "sessions") {
				nodes = append(nodes, gqlSessionAsREST(n))
			}
			if nodes == nil {
				nodes = []any{}
			}
			gqlPages = append(gqlPages, nodes)
			if ft.Dig(d, "sessions", "pageInfo", "hasNextPage") != true {
				break
			}
			vars["after"] = ft.Dig(d, "sessions", "pageInfo", "endCursor")
		}
		if len(restPages) < 2 && c.where == nil {
			t.Errorf("%s: one page only; the fixture should span several", what)
		}
		sameJSONValue(t, what, restPages, gqlPages)
	}
}

// agreeSessionDetail: a session's detail is its GraphQL node with its hits, oldest first.
func agreeSessionDetail(t *testing.T, fx *agreeFixture) {
	for _, id := range []string{fx.detail, fx.sessions[0], fx.sessions[1]} {
		// The dashboard's query: one resolver serves it and REST.
		d := gqlData(t, fx.env, fx.a.ReadOnly, `query($id: ID!) { sessionDetail(id: $id) { session {
			id sourceIP userAgent classification score confidence severity signalsFired
			firstSeen lastSeen hitCount extractedModel extractedOperator trapsTriggered triageState triagedBy triagedByName triagedAt signature
			clientStacks { ja4 h2Fingerprint headerOrder family hits } }
			hits { id trapID method path query headers body bodyTruncated sourceIP userAgent receivedAt kind status signals
				ja4 h2Fingerprint headerOrder clientStack }
			signals { name tripwire hitID placement sourceHitID delayMs detail createdAt }
			prompts { text } hitsTruncated signalsTruncated promptsTruncated } }`,
			map[string]any{"id": id})
		detail, _ := d["sessionDetail"].(map[string]any)
		node, _ := ft.Dig(detail, "session").(map[string]any)
		if node == nil {
			t.Fatalf("GraphQL sessionDetail(%s) has no session", id)
		}
		node["signals"], node["prompts"] = detail["signals"], detail["prompts"]
		want := gqlSessionAsREST(node)
		hits := []any{}
		for _, h := range detail["hits"].([]any) {
			hits = append(hits, gqlHitAsREST(h.(map[string]any)))
		}
		want["hits"] = hits
		prompts := []any{}
		for _, p := range node["prompts"].([]any) {
			prompts = append(prompts, p.(map[string]any)["text"])
		}
		want["extracted"] = map[string]any{"model": node["extractedModel"], "operator": node["extractedOperator"], "prompts": prompts}
		callbacks := []any{}
		for _, h := range hits {
			if h.(map[string]any)["kind"] == "callback" {
				callbacks = append(callbacks, h)
			}
		}
		want["callbacks"] = callbacks
		signals := []any{}
		for _, sg := range node["signals"].([]any) {
			signals = append(signals, gqlSignalAsREST(sg.(map[string]any)))
		}
		want["signals"] = signals
		want["hits_truncated"], want["signals_truncated"], want["prompts_truncated"] = detail["hitsTruncated"], detail["signalsTruncated"], detail["promptsTruncated"]
		stacks := []any{}
		for _, cs := range node["clientStacks"].([]any) {
			c := cs.(map[string]any)
			stacks = append(stacks, map[string]any{"ja4": c["ja4"], "h2_fingerprint": c["h2Fingerprint"], "header_order": c["headerOrder"], "family": c["family"], "hits": c["hits"]})
		}
		want["client_stacks"] = stacks
		want["signature"] = node["signature"]

		r := mustOK(t, restCall(t, fx.env, fx.a.ReadOnly, http.MethodGet, "/dashboard/api/sessions/"+id, nil), http.StatusOK)
		got, _ := ft.Dig(r.plain(t), "data").(map[string]any)
		if id == fx.detail && len(hits) < 4 {
			t.Errorf("session %s has %d hits, want at least 4", id, len(hits))
		}
		sameJSONValue(t, "session "+id, got, want)
	}
}

// agreeAnalytics: overview, severity and timeline are the GraphQL analytics fields.
func agreeAnalytics(t *testing.T, fx *agreeFixture) {
	// The timeline moves with the clock: if the hour turns between the two reads, read both again.
	for attempt := 0; ; attempt++ {
		hour := time.Now().Unix() / 3600
		d := gqlData(t, fx.env, fx.a.ReadOnly, `{ analytics {
			overview { totalHits24h agentsDetected tripwiresFired promptsCaptured activeTraps }
			severity { critical high medium low }
			timeline { hour hits } } }`, nil)
		overview := mustOK(t, restCall(t, fx.env, fx.a.ReadOnly, http.MethodGet, "/dashboard/api/analytics/overview", nil), http.StatusOK)
		severity := mustOK(t, restCall(t, fx.env, fx.a.ReadOnly, http.MethodGet, "/dashboard/api/analytics/severity", nil), http.StatusOK)
		timeline := mustOK(t, restCall(t, fx.env, fx.a.ReadOnly, http.MethodGet, "/dashboard/api/analytics/timeline", nil), http.StatusOK)
		if time.Now().Unix()/3600 != hour && attempt < 3 {
			continue
		}
		sameJSONValue(t, "overview", ft.Dig(overview.plain(t), "data"), ft.Dig(d, "analytics", "overview"))
		sameJSONValue(t, "severity", ft.Dig(severity.plain(t), "data"), ft.Dig(d, "analytics", "severity"))
		var buckets []any
		total := 0.0
		for _, bkt := range ft.Dig(d, "analytics", "timeline").([]any) {
			buckets = append(buckets, map[string]any{"hour": gqlTime(ft.Dig(bkt, "hour"), secondsLayout), "hits": ft.Dig(bkt, "hits")})
			total += ft.Dig(bkt, "hits").(float64)
		}
		sameJSONValue(t, "timeline", ft.Dig(timeline.plain(t), "data"), buckets)
		if total == 0 || ft.Dig(d, "analytics", "overview", "activeTraps") != 4.0 {
			t.Errorf("the fixture should give non-zero figures: %v", d)
		}
		break
	}
}

// agreeEvents: GET /api/v1/events is the GraphQL events connection (oldest first),
// with the type filter as typeIn.
func agreeEvents(t *testing.T, fx *agreeFixture) {
	for _, types := range [][]string{nil, {"trap.created"}, {"threat.detected", "trap.deleted", "threat.escalated"}} {
		var where map[string]any
		q := url.Values{"limit": {"4"}}
		if types != nil {
			where = map[string]any{"typeIn": types}
			q.Set("type", strings.Join(types, ","))
		}
		var gql []any
		vars := map[string]any{"where": where}
		for {
			d := gqlData(t, fx.env, fx.a.ReadOnly, `query($after: Cursor, $where: EventWhereInput) {
				events(first: 4, after: $after, where: $where) {
					edges { node { id type apiVersion createdAt data } } pageInfo { hasNextPage endCursor } } }`, vars)
			for _, n := range gqlNodes(d, "events") {
				gql = append(gql, gqlEventAsREST(n))
			}
			if ft.Dig(d, "events", "pageInfo", "hasNextPage") != true {
				break
			}
			vars["after"] = ft.Dig(d, "events", "pageInfo", "endCursor")
		}
		var rest []any
		for {
			r := mustOK(t, restCall(t, fx.env, fx.a.ReadOnly, http.MethodGet, "/api/v1/events?"+q.Encode(), nil), http.StatusOK)
			body := r.plain(t)
			evs, _ := ft.Dig(body, "events").([]any)
			rest = append(rest, evs...)
			if ft.Dig(body, "has_more") != true {
				break
			}
			q.Set("cursor", ft.Dig(body, "next_cursor").(string))
		}
		if len(rest) == 0 {
			t.Errorf("types %v: no events", types)
		}
		sameJSONValue(t, fmt.Sprintf("events of types %v", types), rest, gql)
	}
}
