package ent_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"entgo.io/ent/privacy"
	_ "modernc.org/sqlite"

	"github.com/flytrap/flytrap/ent"
	_ "github.com/flytrap/flytrap/ent/runtime"
)

// A page read outside a GraphQL selection (the REST adapter) runs no COUNT: nothing reads
// totalCount there, and the COUNT over the whole filtered table grew with the data.
func TestPaginateOutsideGraphQLDoesNotCount(t *testing.T) {
	ctx := privacy.DecisionContext(context.Background(), privacy.Allow)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "p.db")+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var queries []string
	drv := dialect.DebugWithContext(entsql.OpenDB(dialect.SQLite, db), func(_ context.Context, v ...any) {
		mu.Lock()
		defer mu.Unlock()
		queries = append(queries, fmt.Sprint(v...))
	})
	client := ent.NewClient(ent.Driver(drv))
	defer client.Close()
	if err := client.Schema.Create(ctx); err != nil {
		t.Fatal(err)
	}
	org := client.Organization.Create().SetName("acme").SaveX(ctx)
	for i := range 3 {
		client.Session.Create().SetOrgID(org.ID).SetSourceIP(fmt.Sprintf("192.0.2.%d", i+1)).SaveX(ctx)
	}
	mu.Lock()
	queries = nil
	mu.Unlock()
	first := 2
	conn, err := client.Session.Query().Paginate(ctx, nil, &first, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(conn.Edges) != 2 || !conn.PageInfo.HasNextPage {
		t.Fatalf("page: %d edges, hasNextPage %v; want 2, true", len(conn.Edges), conn.PageInfo.HasNextPage)
	}
	conn, err = client.Session.Query().Paginate(ctx, conn.PageInfo.EndCursor, &first, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(conn.Edges) != 1 || conn.PageInfo.HasNextPage {
		t.Fatalf("last page: %d edges, hasNextPage %v; want 1, false", len(conn.Edges), conn.PageInfo.HasNextPage)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(queries) == 0 {
		t.Fatal("no queries recorded")
	}
	for _, q := range queries {
		if strings.Contains(strings.ToUpper(q), "COUNT(") {
			t.Errorf("a page outside GraphQL counted: %s", q)
		}
	}
}
