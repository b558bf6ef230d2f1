package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	entsql "entgo.io/ent/dialect/sql"
	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/store"
)

// TestSessionHitsPageInfoDoesNotCount: a session's hits connection answers pageInfo from its
// page's one extra row. entgql counted every hit of the session whenever pageInfo was
// selected (a GROUP BY over a million hits: 700 ms on PostgreSQL, docs/benchmarks.md); the
// count runs only for totalCount, or for pageInfo asked without edges.
func TestSessionHitsPageInfoDoesNotCount(t *testing.T) {
	testdb.ForEachBackend(t, func(t *testing.T, b testdb.Backend) {
		g := newGiant(t, b.DSN(t), 120)
		rec := &recorder{Driver: entsql.OpenDB(g.db.Dialect, g.db.SQL)}
		client := ent.NewClient(ent.Driver(rec))
		store.Undistinct(client)
		srv := handler.New(NewExecutableSchema(Config{Resolvers: NewResolver(app.New(client, nil, nil), nil),
			Directives: DirectiveRoot{PageLimits: func(ctx context.Context, _ any, next graphql.Resolver) (any, error) { return next(ctx) }}}))
		srv.AddTransport(transport.POST{})
		do := func(query string) (map[string]any, []stmt) {
			t.Helper()
			rec.mu.Lock()
			rec.stmts = nil
			rec.mu.Unlock()
			body, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"id": g.session.ID}})
			req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			req = req.WithContext(privacy.DecisionContext(req.Context(), privacy.Allow))
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, req)
			var r struct {
				Data   map[string]any
				Errors []any
			}
			if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil || len(r.Errors) > 0 {
				t.Fatalf("%s: %v %s", query, err, w.Body.String())
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			return r.Data["node"].(map[string]any)["hits"].(map[string]any), append([]stmt(nil), rec.stmts...)
		}
		counts := func(stmts []stmt) bool {
			for _, s := range stmts {
				if strings.Contains(strings.ToUpper(s.query), "COUNT(") {
					return true
				}
			}
			return false
		}
		const page = `query($id: ID!) { node(id: $id) { ... on Session { hits(first: %s) { %s } } } }`
		for _, tc := range []struct {
			name, first, fields string
			wantCount, wantNext bool
			edges               int
		}{
			{"pageInfo with edges", "50", "pageInfo { hasNextPage endCursor } edges { node { id } }", false, true, 50},
			{"the last page", "200", "pageInfo { hasNextPage } edges { node { id } }", false, false, 120},
			{"totalCount", "50", "totalCount pageInfo { hasNextPage } edges { node { id } }", true, true, 50},
			{"totalCount alone", "50", "totalCount", true, false, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				conn, stmts := do(fmt.Sprintf(page, tc.first, tc.fields))
				if got := counts(stmts); got != tc.wantCount {
					t.Errorf("counted: %v, want %v (%d statements)", got, tc.wantCount, len(stmts))
				}
				if pi, ok := conn["pageInfo"].(map[string]any); ok && pi["hasNextPage"] != tc.wantNext {
					t.Errorf("hasNextPage = %v, want %v", pi["hasNextPage"], tc.wantNext)
				}
				if edges, _ := conn["edges"].([]any); len(edges) != tc.edges {
					t.Errorf("%d edges, want %d", len(edges), tc.edges)
				}
				if tc.wantCount && strings.Contains(tc.fields, "totalCount") && conn["totalCount"] != float64(g.n) {
					t.Errorf("totalCount = %v, want %d", conn["totalCount"], g.n)
				}
			})
		}
	})
}
