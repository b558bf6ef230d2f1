package rest_test

import (
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"entgo.io/contrib/entgql"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// craftedCursor is a cursor in entgql's format (base64 of msgpack) holding what a caller chose.
func craftedCursor(id string, value any) string {
	var b strings.Builder
	entgql.Cursor[string]{ID: id, Value: value}.MarshalGQL(&b)
	return strings.Trim(b.String(), `"`)
}

// TestCraftedCursorsAre400 sends cursors the API never issues, whose value ent would
// hand to the database as it is, to the REST lists and the GraphQL connections: each is
// a 400 / BAD_USER_INPUT, never a database error answered as a 500 (found by FuzzDeliveriesQuery).
func TestCraftedCursorsAre400(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "t", "type": "api", "path": "/t"})
		ses := seedSessions(t, env, a.Org.ID, variedSessions(3, time.Now().Add(-time.Hour), "", ""))[0].ID
		wh := mustOK(t, restCall(t, env, a.Admin, http.MethodPost, "/dashboard/api/webhooks",
			map[string]any{"url": "https://hooks.example.com/x", "active": false}), http.StatusCreated).data().(map[string]any)["id"].(string)

		when := time.Now().UTC()
		values := map[string]any{
			"a map":               map[string]any{"k": 1},
			"a list":              []any{1, "x"},
			"a uint64 past int64": uint64(math.MaxUint64),
			"a float":             1.5,
			"NaN":                 math.NaN(),
			"a string":            "2026-11-22",
			"a number":            int64(7),
			"a year past 9999":    time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC),
			"a NUL string":        "a\x00b",
			"nothing":             nil,
		}
		lists := []struct {
			path, id string
			ok       func(v any) bool // the values a cursor of this list may carry
		}{
			{"/dashboard/api/sessions", ses, func(v any) bool { _, isTime := v.(time.Time); return isTime }},
			{"/dashboard/api/webhooks/" + wh + "/deliveries", "dlv_01m84wnm2xvsfenn7cm7d7zmbd", func(v any) bool { _, isTime := v.(time.Time); return isTime }},
		}
		for _, l := range lists {
			for what, v := range values {
				r := restCall(t, env, a.Admin, http.MethodGet, l.path+"?"+url.Values{"cursor": {craftedCursor(l.id, v)}}.Encode(), nil)
				wantError(t, r, []int{http.StatusBadRequest}, "cursor")
				if t.Failed() {
					t.Fatalf("%s: a cursor holding %s", l.path, what)
				}
			}
			// The right type with another kind of id is refused too; the right one is not.
			wantError(t, restCall(t, env, a.Admin, http.MethodGet, l.path+"?cursor="+url.QueryEscape(craftedCursor(a.Org.ID, when)), nil), []int{http.StatusBadRequest}, "cursor")
			mustOK(t, restCall(t, env, a.Admin, http.MethodGet, l.path+"?cursor="+url.QueryEscape(craftedCursor(l.id, when)), nil), http.StatusOK)
		}

		// A cursor naming its value twice made entgql's decoder panic inside msgpack (found by
		// FuzzConnectionCursor): REST answered 500, GraphQL an internal error.
		const twice = "gqF2vn000000000000000000000000000000000000000aF2pA00000"
		wantError(t, restCall(t, env, a.Admin, http.MethodGet, "/dashboard/api/sessions?cursor="+twice, nil), []int{http.StatusBadRequest}, "cursor")
		if r := env.GraphQL(a.Admin, `query($c: Cursor) { sessions(after: $c) { totalCount } }`, map[string]any{"c": twice}); r.Code() == "INTERNAL" || len(r.Errors) == 0 {
			t.Fatalf("GraphQL with a cursor naming its value twice: %s", r.Raw)
		}

		gql := []struct{ query, id string }{
			{`query($c: Cursor) { sessions(after: $c) { totalCount } }`, ses},
			{`query($c: Cursor) { sessions(before: $c, last: 1, orderBy: {field: SCORE}) { totalCount } }`, ses},
			{`query($c: Cursor) { traps(after: $c, orderBy: {field: NAME}) { totalCount } }`, "trp_01m84wnm2xvsfenn7cm7d7zmbd"},
			{`query($c: Cursor) { events(after: $c) { totalCount } }`, "evt_01m84wnm2xvsfenn7cm7d7zmbd"},
			{`query($c: Cursor) { apiKeys(after: $c, orderBy: {field: CREATED_AT}) { totalCount } }`, "key_01m84wnm2xvsfenn7cm7d7zmbd"},
			{`query($c: Cursor) { sites(after: $c) { totalCount } }`, a.Site.ID},
			{`query($c: Cursor, $w: ID!) { webhookDeliveries(endpointID: $w, after: $c) { totalCount } }`, "dlv_01m84wnm2xvsfenn7cm7d7zmbd"},
		}
		for _, g := range gql {
			for what, v := range values {
				if what == "nothing" || what == "a number" || what == "a string" {
					continue // a valid cursor for some of these orders
				}
				r := env.GraphQL(a.Admin, g.query, map[string]any{"c": craftedCursor(g.id, v), "w": wh})
				if r.Code() != "BAD_USER_INPUT" {
					t.Fatalf("%s with a cursor holding %s: %s", g.query, what, r.Raw)
				}
			}
		}
	})
}
