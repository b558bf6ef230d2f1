package rest_test

import (
	"encoding/json"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// TestDeployKey tries every REST route and the GraphQL fields with a deploy key (an API key
// limited to one site's traps): it reads and writes its site's traps and nothing else.
func TestDeployKey(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		other := env.MustGraphQL(a.Admin, `mutation { createSite(input: {name: "staging"}) { id } }`, nil)
		otherSite := ft.Dig(other, "createSite", "id").(string)
		mine := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "on default", "type": "page", "path": "/mine"})["id"].(string)
		theirs := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "on staging", "type": "page", "path": "/theirs", "site_id": otherSite})["id"].(string)
		ss := seedSessions(t, env, a.Org.ID, []sessionSpec{{Class: "BOT", Severity: "high", IP: "203.0.113.9", First: time.Now(), Last: time.Now()}})

		mk := func(vars map[string]any) (string, ft.Response) {
			r := env.GraphQL(a.Admin, `mutation($in: CreateApiKeyInput!) { createApiKey(input: $in) { key apiKey { id siteID expiresAt scope } } }`,
				map[string]any{"in": vars})
			k, _ := ft.Dig(r.Data, "createApiKey", "key").(string)
			return k, r
		}
		key, r := mk(map[string]any{"name": "pipeline", "scope": "READ_WRITE", "siteID": a.Site.ID})
		if key == "" || ft.Dig(r.Data, "createApiKey", "apiKey", "siteID") != a.Site.ID {
			t.Fatalf("create a deploy key: %s", r.Raw)
		}
		// Only an admin makes one; never with the admin scope; only on a site of the organization.
		for _, c := range []struct {
			token string
			in    map[string]any
			code  string
		}{
			{a.Admin, map[string]any{"name": "x", "scope": "ADMIN", "siteID": a.Site.ID}, "BAD_USER_INPUT"},
			{a.Admin, map[string]any{"name": "x", "scope": "READ_WRITE", "siteID": "site_01m8fc3t3tc3974xrnn55mymeq"}, "NOT_FOUND"},
			{a.Admin, map[string]any{"name": "x", "scope": "READ_WRITE", "siteID": mine}, "BAD_USER_INPUT"},
			{a.ReadWrite, map[string]any{"name": "x", "scope": "READ_WRITE", "siteID": a.Site.ID}, "FORBIDDEN"},
			{key, map[string]any{"name": "x", "scope": "READ_ONLY", "siteID": a.Site.ID}, "FORBIDDEN"},
		} {
			r := env.GraphQL(c.token, `mutation($in: CreateApiKeyInput!) { createApiKey(input: $in) { key } }`, map[string]any{"in": c.in})
			if r.Code() != c.code {
				t.Errorf("createApiKey %v: %s, want %s", c.in, r.Raw, c.code)
			}
		}

		// Every REST route: what the key may do, and the 403 for the rest.
		newTrap := `{"name":"from ci","type":"api","path":"/ci"}`
		tried := map[string]bool{}
		try := func(method, path, pattern string, body any, want int) apiReply {
			t.Helper()
			tried[method+" "+pattern] = true
			r := restCall(t, env, key, method, path, body)
			if r.Status != want {
				t.Errorf("%s %s with a deploy key: %d %s, want %d", method, path, r.Status, clipText(string(r.Raw), 300), want)
			}
			if want == 403 && !strings.Contains(string(r.Raw), "deploy key") {
				t.Errorf("%s %s: the 403 does not say why: %s", method, path, r.Raw)
			}
			return r
		}
		list := try("GET", "/dashboard/api/traps", "/dashboard/api/traps", nil, 200)
		if got := ft.Dig(list.plain(t), "data"); len(got.([]any)) != 1 || ft.Dig(got, 0, "id") != mine {
			t.Errorf("a deploy key lists %v, want its site's trap only", got)
		}
		created := try("POST", "/dashboard/api/traps", "/dashboard/api/traps", newTrap, 201)
		if ft.Dig(created.plain(t), "data", "site_id") != a.Site.ID {
			t.Errorf("a deploy key's trap is not on its site: %s", created.Raw)
		}
		if r := restCall(t, env, key, "POST", "/dashboard/api/traps", map[string]any{"name": "x", "type": "page", "site_id": otherSite}); r.Status != 403 {
			t.Errorf("a deploy key creates a trap on another site: %d %s", r.Status, r.Raw)
		}
		try("PATCH", "/dashboard/api/traps/"+mine, "/dashboard/api/traps/{id}", `{"name":"renamed by ci"}`, 200)
		try("PATCH", "/dashboard/api/traps/"+theirs, "/dashboard/api/traps/{id}", `{"name":"x"}`, 404)
		try("DELETE", "/dashboard/api/traps/"+theirs, "/dashboard/api/traps/{id}", nil, 404)
		try("DELETE", "/dashboard/api/traps/"+mine, "/dashboard/api/traps/{id}", nil, 200)
		try("GET", "/dashboard/api/sessions", "/dashboard/api/sessions", nil, 403)
		try("GET", "/dashboard/api/sessions/"+ss[0].ID, "/dashboard/api/sessions/{id}", nil, 403)
		try("GET", "/dashboard/api/sessions/"+ss[0].ID+"/stix", "/dashboard/api/sessions/{id}/stix", nil, 403)
		try("GET", "/dashboard/api/campaigns/cmp_00000000000000000000000000000000/stix", "/dashboard/api/campaigns/{id}/stix", nil, 403)
		try("POST", "/dashboard/api/triage", "/dashboard/api/triage", map[string]any{"ids": []string{ss[0].ID}, "state": "resolved"}, 403)
		try("GET", "/dashboard/api/gate?fail_on=high", "/dashboard/api/gate", nil, 403)
		for _, p := range []string{"overview", "severity", "timeline"} {
			try("GET", "/dashboard/api/analytics/"+p, "/dashboard/api/analytics/"+p, nil, 403)
		}
		wh := "whk_01m8fc3t3tc3974xrnn55mymeq"
		try("GET", "/dashboard/api/webhooks", "/dashboard/api/webhooks", nil, 403)
		try("POST", "/dashboard/api/webhooks", "/dashboard/api/webhooks", `{"url":"https://example.com/hook"}`, 403)
		try("GET", "/dashboard/api/webhooks/"+wh, "/dashboard/api/webhooks/{id}", nil, 403)
		try("PATCH", "/dashboard/api/webhooks/"+wh, "/dashboard/api/webhooks/{id}", `{"active":false}`, 403)
		try("DELETE", "/dashboard/api/webhooks/"+wh, "/dashboard/api/webhooks/{id}", nil, 403)
		try("POST", "/dashboard/api/webhooks/"+wh+"/rotate-secret", "/dashboard/api/webhooks/{id}/rotate-secret", nil, 403)
		try("POST", "/dashboard/api/webhooks/"+wh+"/ping", "/dashboard/api/webhooks/{id}/ping", nil, 403)
		try("GET", "/dashboard/api/webhooks/"+wh+"/deliveries", "/dashboard/api/webhooks/{id}/deliveries", nil, 403)
		try("POST", "/dashboard/api/webhooks/"+wh+"/deliveries/dlv_01m8fc3t3tc3974xrnn55mymeq/redeliver",
			"/dashboard/api/webhooks/{id}/deliveries/{delivery_id}/redeliver", nil, 403)
		try("GET", "/api/v1/events", "/api/v1/events", nil, 403)
		try("GET", "/api/v1/events/stream", "/api/v1/events/stream", nil, 403)
		tried["GET /api/openapi.json"] = true // public

		// The list above is every operation of the OpenAPI document (which a test checks
		// against the route table): a new route fails here until a deploy key is tried on it.
		raw, err := os.ReadFile("openapi.json")
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		var missing []string
		for p, ops := range doc.Paths {
			for m := range ops {
				if m == "parameters" {
					continue
				}
				if op := strings.ToUpper(m) + " " + p; !tried[op] {
					missing = append(missing, op)
				}
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("routes not tried with a deploy key: %v", missing)
		}

		// GraphQL: its site's traps and its site; everything else FORBIDDEN.
		d := env.MustGraphQL(key, `{ traps { totalCount edges { node { siteID } } } sites { totalCount edges { node { id } } } }`, nil)
		if ft.Dig(d, "traps", "totalCount") != 1.0 || ft.Dig(d, "sites", "totalCount") != 1.0 || ft.Dig(d, "sites", "edges", 0, "node", "id") != a.Site.ID {
			t.Errorf("a deploy key's traps and sites: %v", d)
		}
		for _, q := range []string{
			`{ sessions { totalCount } }`, `{ events { totalCount } }`, `{ organization { id } }`, `{ apiKeys { totalCount } }`,
			`{ analytics { severity { high } } }`, `{ analytics { overview { activeTraps } } }`, `{ campaigns { edges { cursor } } }`,
			`{ webhookEndpoints { totalCount } }`, `{ gate(failOn: high) { failed } }`, `{ storage { dialect } }`,
			`{ sessionDetail(id: "` + ss[0].ID + `") { session { id } } }`, `{ node(id: "` + ss[0].ID + `") { id } }`,
			`{ node(id: "` + theirs + `") { id } }`,
			`{ sessionStix(id: "` + ss[0].ID + `") }`, `{ campaignStix(id: "cmp_00000000000000000000000000000000") }`,
			`mutation { triageSessions(input: {ids: ["` + ss[0].ID + `"], state: resolved}) { changed } }`,
			`mutation { createTrap(input: {name: "x", type: page, siteID: "` + otherSite + `"}) { id } }`,
			`mutation { updateTrap(id: "` + theirs + `", input: {name: "x"}) { id } }`,
			`mutation { updateSite(id: "` + a.Site.ID + `", input: {name: "x"}) { id } }`,
			`mutation { createWebhookEndpoint(input: {url: "https://example.com/h"}) { secret } }`,
		} {
			r := env.GraphQL(key, q, nil)
			if r.Code() == "" || (r.Data != nil && ft.Dig(r.Data, "node") != nil) {
				t.Errorf("%s with a deploy key: %s, want an error", q, r.Raw)
			}
		}
		if d := env.MustGraphQL(key, `mutation { createTrap(input: {name: "gql ci", type: api, path: "/gql-ci"}) { siteID } }`, nil); ft.Dig(d, "createTrap", "siteID") != a.Site.ID {
			t.Errorf("createTrap with a deploy key: %v", d)
		}
		// The stream and subscription refuse it too (the stream answered 403 above).
	})
}

// TestKeyExpiry: a key with an expiry works until then and is refused with a clear 401 after;
// the expiry is shown in key lists; an expiry in the past is refused at creation.
func TestKeyExpiry(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		at := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		d := env.MustGraphQL(a.Admin, `mutation($at: Time) { createApiKey(input: {name: "ci", scope: READ_ONLY, expiresAt: $at}) { key apiKey { id expiresAt } } }`,
			map[string]any{"at": at.Format(time.RFC3339Nano)})
		key, id := ft.Dig(d, "createApiKey", "key").(string), ft.Dig(d, "createApiKey", "apiKey", "id").(string)
		if got := gqlTime(ft.Dig(d, "createApiKey", "apiKey", "expiresAt"), time.RFC3339Nano); got != at.Format(time.RFC3339Nano) {
			t.Errorf("expiresAt: %v, want %v", got, at)
		}
		mustOK(t, restCall(t, env, key, http.MethodGet, "/dashboard/api/traps", nil), http.StatusOK)
		list := env.MustGraphQL(a.Admin, `{ apiKeys { edges { node { id expiresAt } } } }`, nil)
		if !strings.Contains(mustJSON(t, list), at.Format("2006-01-02T15:04:05")) {
			t.Errorf("the key list does not show the expiry: %v", list)
		}
		r := env.GraphQL(a.Admin, `mutation { createApiKey(input: {name: "late", scope: READ_ONLY, expiresAt: "2020-01-01T00:00:00Z"}) { key } }`, nil)
		if r.Code() != "BAD_USER_INPUT" || !strings.Contains(string(r.Raw), "future") {
			t.Errorf("an expiry in the past: %s", r.Raw)
		}
		// Move the expiry into the past (the column is immutable through the API).
		q := "UPDATE api_keys SET expires_at = ? WHERE id = ?"
		if env.DB.Dialect == dialect.Postgres {
			q = "UPDATE api_keys SET expires_at = $1 WHERE id = $2"
		}
		past := time.Now().Add(-time.Minute).UTC()
		if _, err := env.DB.SQL.ExecContext(t.Context(), q, past, id); err != nil {
			t.Fatal(err)
		}
		rr := restCall(t, env, key, http.MethodGet, "/dashboard/api/traps", nil)
		if rr.Status != 401 || !strings.Contains(string(rr.Raw), "expired at "+past.Format("2006-01-02T15:04")) {
			t.Errorf("an expired key: %d %s, want 401 saying when it expired", rr.Status, rr.Raw)
		}
		if r := env.GraphQL(key, `{ viewer { orgID } }`, nil); r.Code() != "UNAUTHENTICATED" {
			t.Errorf("an expired key on GraphQL: %s", r.Raw)
		}
	})
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
