package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/session"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/record"
)

// BenchmarkCampaignsPage reads the dashboard's campaigns page (web/src/queries.ts CAMPAIGNS:
// 20 campaigns with their sessions, addresses and traps) one request at a time, with 2,000
// and 20,000 captured prompts in 100 campaigns, and reports the latency's p50 and p99.
func BenchmarkCampaignsPage(b *testing.B) {
	src, err := os.ReadFile("../web/src/queries.ts")
	if err != nil {
		b.Fatal(err)
	}
	m := regexp.MustCompile("(?s)CAMPAIGNS = `([^`]*)`").FindSubmatch(src)
	if m == nil {
		b.Fatal("CAMPAIGNS is not in web/src/queries.ts")
	}
	body, _ := json.Marshal(map[string]any{"query": string(m[1]), "variables": map[string]any{"first": 20}})
	for _, be := range ft.Backends() {
		for _, prompts := range []int{2000, 20000} {
			b.Run(fmt.Sprintf("%s/prompts=%d", be.Name, prompts), func(b *testing.B) {
				env := ft.Start(b, be)
				a := env.Tenant("acme")
				seedPrompts(b, env, a, prompts)
				client := env.HTTP.Client()
				took := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					start := time.Now()
					req, _ := http.NewRequest(http.MethodPost, env.HTTP.URL+"/graphql", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+a.ReadOnly)
					res, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					var out struct {
						Errors []any `json:"errors"`
					}
					err = json.NewDecoder(res.Body).Decode(&out)
					res.Body.Close()
					if err != nil || res.StatusCode != http.StatusOK || len(out.Errors) > 0 {
						b.Fatalf("status %d: %v %v", res.StatusCode, err, out.Errors)
					}
					took = append(took, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
			})
		}
	}
}

// seedPrompts stores n prompts of 100 campaigns from n/5 sessions (five prompts each, of two
// campaigns), through ent in one transaction as the writer does.
func seedPrompts(b *testing.B, env *ft.Env, a ft.Tenant, n int) {
	trap := env.CreateTrap(a.ReadWrite, "Payroll wiki", "page")
	ctx := ft.System()
	tx, err := env.DB.Client.Tx(ctx)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC().Add(-time.Duration(n) * time.Second)
	ss := make([]*ent.SessionCreate, n/5)
	for i := range ss {
		at := now.Add(time.Duration(i*5) * time.Second)
		ss[i] = tx.Session.Create().SetOrgID(a.Org.ID).SetSiteID(a.Site.ID).SetSourceIP(fmt.Sprintf("198.51.%d.%d", i/250%250, i%250)).
			SetUserAgent("agent/1.0").SetClassification(session.ClassificationAI_AGENT_MALICIOUS).SetSeverity(session.SeverityCritical).
			SetFirstSeen(at).SetLastSeen(at).SetHitCount(5).SetPromptsCaptured(5).SetTrapsTriggered([]string{trap})
	}
	for part := range slices.Chunk(ss, 500) {
		if _, err := record.CreateSessions(ctx, tx.Client(), part...); err != nil {
			b.Fatal(err)
		}
	}
	sessions, err := tx.Session.Query().IDs(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ps := make([]*ent.PromptCreate, 0, n)
	for i := range n {
		s := i / 5
		c := (s + i%2*37) % 100
		ps = append(ps, tx.Prompt.Create().SetOrgID(a.Org.ID).SetSessionID(sessions[s%len(sessions)]).SetHitID(fmt.Sprintf("hit_%d", i)).
			SetText(fmt.Sprintf("System prompt %d: you are an agent.", c)).SetHash(fmt.Sprintf("%064d", c)).
			SetOperator(fmt.Sprintf("Operator %d", c%7)).SetModel("gpt-4o").SetCreatedAt(now.Add(time.Duration(i)*time.Second)))
	}
	for part := range slices.Chunk(ps, 500) {
		if _, err := record.CreatePrompts(ctx, tx.Client(), part...); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
