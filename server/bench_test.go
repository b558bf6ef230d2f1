package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// benchPost runs query through the real router and HTTP stack b.N times, in parallel.
func benchPost(b *testing.B, env *ft.Env, token, query string) {
	body, _ := json.Marshal(map[string]any{"query": query})
	client := env.HTTP.Client()
	b.ReportAllocs()
	b.ResetTimer()
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
