package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/session"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/record"
)

// benchPost runs query through the real router and HTTP stack b.N times, in parallel. It
// reports the process's CPU per request (server and client), steadier than wall time on a
// shared machine.
func benchPost(b *testing.B, env *ft.Env, token, query string) {
	body, _ := json.Marshal(map[string]any{"query": query})
	client := env.HTTP.Client()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testdb.ProcessCPU()
	defer func() {
		b.ReportMetric(float64((testdb.ProcessCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
	}()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, env.HTTP.URL+"/graphql", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Fatalf("status %d", res.StatusCode)
			}
		}
	})
}

// BenchmarkAuthenticatedQuery is the floor of every API request: key check, GraphQL, one row.
func BenchmarkAuthenticatedQuery(b *testing.B) {
	for _, be := range ft.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			env := ft.Start(b, be)
			a := env.Tenant("acme")
			benchPost(b, env, a.ReadOnly, `{ organization { id } }`)
		})
	}
}

// BenchmarkTrapsPage reads a full page (100) of the traps connection with its total count.
func BenchmarkTrapsPage(b *testing.B) {
	for _, be := range ft.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			env := ft.Start(b, be)
			a := env.Tenant("acme")
			for i := range 300 {
				env.MustGraphQL(a.ReadWrite, fmt.Sprintf(`mutation { createTrap(input:{name:"t%d", type: api}) { id } }`, i), nil)
			}
			benchPost(b, env, a.ReadOnly, `{ traps(first: 100) { totalCount pageInfo { endCursor hasNextPage } edges { node { id name path type active createdAt } } } }`)
		})
	}
}

// BenchmarkCreateTrap is a write with its outbox event in one transaction.
func BenchmarkCreateTrap(b *testing.B) {
	for _, be := range ft.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			env := ft.Start(b, be)
			a := env.Tenant("acme")
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				env.MustGraphQL(a.ReadWrite, fmt.Sprintf(`mutation { createTrap(input:{name:"t%d", type: api}) { id } }`, i), nil)
			}
		})
	}
}

// BenchmarkSessionsPage is the dashboard's sessions page over GraphQL: 50 of 1,000 sessions,
// newest first, the nine fields scripts/postgraphile-compare.sh asks both servers for.
func BenchmarkSessionsPage(b *testing.B) {
	for _, be := range ft.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			env := ft.Start(b, be)
			a := env.Tenant("acme")
			now := time.Now().UTC()
			bulk := make([]*ent.SessionCreate, 1000)
			for i := range bulk {
				bulk[i] = env.DB.Client.Session.Create().SetOrgID(a.Org.ID).SetSiteID(a.Site.ID).
					SetSourceIP(fmt.Sprintf("198.51.%d.%d", i/250, i%250)).SetUserAgent("python-requests/2.32.3").
					SetClassification(session.ClassificationBOT).SetSeverity(session.SeverityMedium).SetScore(50).
					SetFirstSeen(now.Add(-time.Duration(i) * time.Minute)).SetLastSeen(now.Add(-time.Duration(i) * time.Minute)).
					SetHitCount(2)
			}
			if _, err := record.CreateSessions(ft.System(), env.DB.Client, bulk...); err != nil {
				b.Fatal(err)
			}
			benchPost(b, env, a.ReadOnly, `{ sessions(first: 50, orderBy: {field: LAST_SEEN, direction: DESC}) { edges { node { id sourceIP userAgent classification score severity firstSeen lastSeen hitCount } } } }`)
		})
	}
}
