package graph

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/flytraptest/testdb"
)

// listQuery asks for a session's detail with every scalar field of its 1,000 hits and 500
// signals: the largest list response the API gives (a sessions page is 100 rows).
const listQuery = `{"query":"query($id: ID!) { sessionDetail(id: $id) {
  hits { id orgID sessionID trapID method path query bodyTruncated sourceIP userAgent receivedAt kind status signals }
  signals { id orgID sessionID hitID name tripwire placement sourceHitID delayMs detail createdAt }
  prompts { id text model operator createdAt } } }","variables":{"id":"%s"}}`

// BenchmarkListResponse is a big list response through gqlgen's executor and POST transport,
// what internal/gqlpatch's rewrites of graph/generated.go (graph/marshal.go) are for. CI runs it
// once to keep it working; docs/benchmarks.md has its figures with and without the rewrites.
func BenchmarkListResponse(b *testing.B) {
	g := newGiant(b, testdb.SQLiteDSN(b), 1000)
	a := app.New(g.db.Client, nil, nil)
	a.DetailLimit = app.MaxDetailLimit // 1,000 items a list, the most a detail holds
	r := NewResolver(a, nil)
	srv := handler.New(NewExecutableSchema(Config{Resolvers: r}))
	srv.AddTransport(transport.POST{})
	body := strings.Replace(strings.ReplaceAll(listQuery, "\n", " "), "%s", g.session.ID, 1)
	ctx := privacy.DecisionContext(context.Background(), privacy.Allow)
	do := func() *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/graphql", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		return w
	}
	w := do()
	if w.Code != http.StatusOK || strings.Contains(w.Body.String(), `"errors"`) || strings.Count(w.Body.String(), `"receivedAt"`) != 1000 {
		b.Fatalf("status %d, %d hits: %.300s", w.Code, strings.Count(w.Body.String(), `"receivedAt"`), w.Body.String())
	}
	b.SetBytes(int64(w.Body.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testdb.ProcessCPU()
	for range b.N {
		do()
	}
	// The process's CPU time per response: on a shared machine steadier than the wall clock.
	b.ReportMetric(float64((testdb.ProcessCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
