package rest_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// TestSessionDetailOneWindow: REST's session detail and GraphQL's sessionDetail show the
// same hits — the newest --session-detail-limit, oldest first — where REST used to show the
// newest 1000 and the dashboard's node query the oldest 100.
func TestSessionDetailOneWindow(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, func(c *server.Config) { c.SessionDetailLimit = 5 })
		a := env.Tenant("acme")
		base := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
		s := seedSessions(t, env, a.Org.ID, []sessionSpec{{Class: "BOT", Severity: "low", IP: "203.0.113.7",
			First: base, Last: base.Add(time.Hour), HitCount: 8}})[0]
		var specs []hitSpec
		for i := range 8 {
			specs = append(specs, hitSpec{Session: s, Method: "GET", Path: fmt.Sprintf("/p/%d", i), At: base.Add(time.Duration(i) * time.Minute)})
		}
		hits := seedHits(t, env, specs)
		want := []string{}
		for _, h := range hits[3:] {
			want = append(want, h.ID)
		}

		r := mustOK(t, restCall(t, env, a.ReadOnly, http.MethodGet, "/dashboard/api/sessions/"+s.ID, nil), http.StatusOK)
		var restIDs []string
		for _, h := range ft.Dig(r.plain(t), "data", "hits").([]any) {
			restIDs = append(restIDs, h.(map[string]any)["id"].(string))
		}
		d := gqlData(t, env, a.ReadOnly, `query($id: ID!) { sessionDetail(id: $id) { session { id } hitsTruncated hits { id } } }`,
			map[string]any{"id": s.ID})
		var gqlIDs []string
		for _, h := range ft.Dig(d, "sessionDetail", "hits").([]any) {
			gqlIDs = append(gqlIDs, h.(map[string]any)["id"].(string))
		}
		if strings.Join(restIDs, ",") != strings.Join(want, ",") {
			t.Errorf("REST hits %v, want the newest 5 oldest first %v", restIDs, want)
		}
		if strings.Join(gqlIDs, ",") != strings.Join(want, ",") {
			t.Errorf("GraphQL sessionDetail hits %v, want %v", gqlIDs, want)
		}
		if ft.Dig(d, "sessionDetail", "hitsTruncated") != true {
			t.Errorf("hitsTruncated %v, want true", ft.Dig(d, "sessionDetail", "hitsTruncated"))
		}

		// Another kind of id is a missing session on both surfaces; a malformed one names the field.
		trp := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "T", "type": "page"})["id"].(string)
		wantError(t, restCall(t, env, a.ReadOnly, http.MethodGet, "/dashboard/api/sessions/"+trp, nil), []int{http.StatusNotFound}, "session")
		if code := env.GraphQL(a.ReadOnly, `query($id: ID!) { sessionDetail(id: $id) { session { id } } }`, map[string]any{"id": trp}).Code(); code != "NOT_FOUND" {
			t.Errorf("sessionDetail of a trap id: code %q, want NOT_FOUND", code)
		}
		wantError(t, restCall(t, env, a.ReadOnly, http.MethodGet, "/dashboard/api/sessions/nope", nil), []int{http.StatusBadRequest}, "id")
	})
}

// TestRedeliverMembership: a delivery redelivered under another endpoint of the same
// organization is not found, through REST's route and through the mutation alike.
func TestRedeliverMembership(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		newEndpoint := func(url string) string {
			r := mustOK(t, restCall(t, env, a.ReadWrite, http.MethodPost, "/dashboard/api/webhooks", map[string]any{"url": url}), http.StatusCreated)
			return ft.Dig(r.plain(t), "data", "id").(string)
		}
		one, two := newEndpoint("https://one.example.com/hook"), newEndpoint("https://two.example.com/hook")
		r := mustOK(t, restCall(t, env, a.ReadWrite, http.MethodPost, "/dashboard/api/webhooks/"+one+"/ping", nil), http.StatusAccepted)
		dlv := ft.Dig(r.plain(t), "data", "id").(string)

		wantError(t, restCall(t, env, a.ReadWrite, http.MethodPost, "/dashboard/api/webhooks/"+two+"/deliveries/"+dlv+"/redeliver", nil),
			[]int{http.StatusNotFound}, "webhook delivery not found")
		const q = `mutation($d: ID!, $e: ID) { redeliverWebhook(deliveryID: $d, endpointID: $e) { id endpointID } }`
		if code := env.GraphQL(a.ReadWrite, q, map[string]any{"d": dlv, "e": two}).Code(); code != "NOT_FOUND" {
			t.Errorf("redeliverWebhook under another endpoint: code %q, want NOT_FOUND", code)
		}
		got := env.GraphQL(a.ReadWrite, q, map[string]any{"d": dlv, "e": "nope"})
		if got.Code() != "BAD_USER_INPUT" || !strings.Contains(string(got.Raw), `"field":"endpointID"`) {
			t.Errorf("a malformed endpointID: %s", got.Raw)
		}
		wantError(t, restCall(t, env, a.ReadWrite, http.MethodPost, "/dashboard/api/webhooks/nope/deliveries/"+dlv+"/redeliver", nil),
			[]int{http.StatusBadRequest}, "endpoint_id")
		d := gqlData(t, env, a.ReadWrite, q, map[string]any{"d": dlv, "e": one})
		if ft.Dig(d, "redeliverWebhook", "endpointID") != one {
			t.Errorf("redelivery %v, want one of %s", d, one)
		}
		mustOK(t, restCall(t, env, a.ReadWrite, http.MethodPost, "/dashboard/api/webhooks/"+one+"/deliveries/"+dlv+"/redeliver", nil), http.StatusAccepted)
	})
}
