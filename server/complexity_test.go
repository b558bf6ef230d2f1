package server_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

const analyticsFields = `overview { totalHits24h agentsDetected tripwiresFired promptsCaptured activeTraps } severity { critical high medium low }`

// Aggregates carry their real cost and every alias is priced: 1,000 aliases of the
// analytics figures passed the old limit and each re-ran the aggregates.
func TestComplexityPricesAggregatesAndAliases(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0])
	a := env.Tenant("acme")
	var q strings.Builder
	q.WriteString("{")
	for i := range 300 { // 1,000 are refused for their size already
		fmt.Fprintf(&q, " a%d: analytics { overview { activeTraps } }", i)
	}
	q.WriteString(" }")
	r := env.GraphQL(a.ReadOnly, q.String(), nil)
	if r.Code() != "COMPLEXITY_LIMIT_EXCEEDED" || r.Data != nil {
		t.Fatalf("300 aliased aggregates: %d %.300s", r.Status, r.Raw)
	}
	// The dashboard's own query passes, as does a handful of aliases.
	src, err := os.ReadFile("../web/src/queries.ts")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)ANALYTICS = `([^`]*)`").FindSubmatch(src)
	if m == nil {
		t.Fatal("the dashboard's ANALYTICS query is not in web/src/queries.ts")
	}
	wantOK(t, env.GraphQL(a.ReadOnly, string(m[1]), nil))
	wantOK(t, env.GraphQL(a.ReadOnly, `{ a: analytics { `+analyticsFields+` } b: analytics { `+analyticsFields+` } }`, nil))
}

// Every connection is priced by its page, the webhook ones included (the hand-kept
// table missed them).
func TestComplexityCoversWebhookConnections(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.ComplexityLimit = 400 })
	a := env.Tenant("acme")
	d := env.MustGraphQL(a.ReadWrite, `mutation { createWebhookEndpoint(input: {url: "https://hooks.example.com/x"}) { endpoint { id } } }`, nil)
	id := ft.Dig(d, "createWebhookEndpoint", "endpoint", "id").(string)
	for _, tt := range []struct {
		query string
		ok    bool
	}{
		{`{ webhookEndpoints(first: 10) { edges { node { id url eventTypes } } } }`, true},
		{`{ webhookEndpoints(first: 100) { edges { node { id url eventTypes } } } }`, false},
		{`{ webhookEndpoints(first: 100) { totalCount pageInfo { hasNextPage } } }`, true},
		{`query($id: ID!, $n: Int) { webhookDeliveries(endpointID: $id, first: $n) { edges { node { id } } } }`, true},
		{`query($id: ID!) { webhookDeliveries(endpointID: $id, first: 100) { edges { node { id status } } } }`, false},
		{`query($id: ID!) { webhookDeliveries(endpointID: $id, first: 2) { edges { node { attempts { at statusCode } } } } }`, false},
	} {
		r := env.GraphQL(a.ReadWrite, tt.query, map[string]any{"id": id, "n": 5})
		if tt.ok && len(r.Errors) > 0 || !tt.ok && r.Code() != "COMPLEXITY_LIMIT_EXCEEDED" {
			t.Errorf("%s: %d %s", tt.query, r.Status, r.Raw)
		}
	}
}
