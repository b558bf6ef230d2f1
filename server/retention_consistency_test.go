package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/record"
	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/server"
)

// After a purge the APIs agree with what is stored: a deleted session leaves the sessions
// list and the figures that count sessions, a kept session keeps its summary and shows the
// hits still stored, and the last 24 hours' figures do not move.
func TestFiguresAfterPurge(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		sys := ft.System()
		c := env.DB.Client
		now := time.Now().UTC()
		at := func(prefix string, t time.Time) string {
			return ids.Format(prefix, ulid.MustNew(ulid.Timestamp(t), ulid.DefaultEntropy()))
		}
		session := func(first, last time.Time, hits ...time.Time) string {
			ss, err := record.CreateSessions(sys, c, c.Session.Create().SetID(at(ids.Session, first)).SetOrgID(a.Org.ID).
				SetSourceIP("203.0.113.9").SetFirstSeen(first).SetLastSeen(last).SetHitCount(len(hits)).
				SetClassification("AI_AGENT").SetSeverity("high"))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hits {
				if _, err := record.CreateHits(sys, c, c.Hit.Create().SetID(at(ids.Hit, h)).SetOrgID(a.Org.ID).SetSessionID(ss[0].ID).
					SetMethod("GET").SetPath("/x").SetHeaders(map[string][]string{}).SetSourceIP("203.0.113.9").SetReceivedAt(h)); err != nil {
					t.Fatal(err)
				}
			}
			return ss[0].ID
		}
		gone := session(now.Add(-100*retention.Day), now.Add(-95*retention.Day), now.Add(-100*retention.Day), now.Add(-95*retention.Day))
		kept := session(now.Add(-40*retention.Day), now.Add(-time.Hour), now.Add(-40*retention.Day), now.Add(-2*time.Hour), now.Add(-time.Hour))

		type figures struct {
			Hits24h, Agents int
			High            int
			Sessions        []string
		}
		read := func() figures {
			t.Helper()
			var f figures
			var ov struct {
				Data struct {
					TotalHits24h   int `json:"totalHits24h"`
					AgentsDetected int `json:"agentsDetected"`
				} `json:"data"`
			}
			_, body := env.Get(a.ReadOnly, "/dashboard/api/analytics/overview")
			json.Unmarshal(body, &ov)
			f.Hits24h, f.Agents = ov.Data.TotalHits24h, ov.Data.AgentsDetected
			var sev struct {
				Data map[string]int `json:"data"`
			}
			_, body = env.Get(a.ReadOnly, "/dashboard/api/analytics/severity")
			json.Unmarshal(body, &sev)
			f.High = sev.Data["high"]
			var list struct {
				Data []struct{ ID string } `json:"data"`
			}
			_, body = env.Get(a.ReadOnly, "/dashboard/api/sessions")
			json.Unmarshal(body, &list)
			for _, s := range list.Data {
				f.Sessions = append(f.Sessions, s.ID)
			}
			return f
		}
		before := read()
		if before.Agents != 2 || before.High != 2 || len(before.Sessions) != 2 || before.Hits24h != 2 {
			t.Fatalf("before the purge: %+v", before)
		}
		res, err := server.NewPurger(env.DB, retention.DefaultConfig(), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now).Purge(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Sessions != 1 || res.Hits != 3 {
			t.Fatalf("purged %+v, want the old session with its 2 hits and the kept one's 40-day-old hit", res)
		}
		after := read()
		if after.Agents != 1 || after.High != 1 || len(after.Sessions) != 1 || after.Sessions[0] != kept || after.Hits24h != 2 {
			t.Fatalf("after the purge: %+v (kept %s, gone %s)", after, kept, gone)
		}
		res2, body := env.Get(a.ReadOnly, "/dashboard/api/sessions/"+kept)
		var detail struct {
			Data struct {
				HitCount int `json:"hit_count"`
				Hits     []struct{ ID string }
			} `json:"data"`
		}
		json.Unmarshal(body, &detail)
		if res2.StatusCode != http.StatusOK || detail.Data.HitCount != 3 || len(detail.Data.Hits) != 2 {
			t.Fatalf("kept session's detail: %d hit_count %d, %d hits shown: %s", res2.StatusCode, detail.Data.HitCount, len(detail.Data.Hits), body)
		}
		if res3, _ := env.Get(a.ReadOnly, "/dashboard/api/sessions/"+gone); res3.StatusCode != http.StatusNotFound {
			t.Fatalf("deleted session's detail: %d, want 404", res3.StatusCode)
		}
	})
}
