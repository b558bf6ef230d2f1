package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/event"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/organization"
	enttrap "github.com/flytrap/flytrap/ent/trap"
	"github.com/flytrap/flytrap/ent/webhookdelivery"
	evt "github.com/flytrap/flytrap/event"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/tally"
)

func TestMain(m *testing.M) { ft.Main(m) }

// TestSeedIsConsistent seeds a small database and holds what it wrote to what the service
// itself would have written: counters equal to a recount of the raw rows, hits as many as
// the sessions say, events numbered 1…n per organization and by one global seq, an event
// appended afterwards taking the next numbers, and a delivery per event and matching endpoint.
func TestSeedIsConsistent(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		var out bytes.Buffer
		// Small transactions, so the seed's counters and event numbers span several of them;
		// stopped at 1,000 sessions and resumed.
		if err := run(context.Background(), []string{"-db", dsn, "-sessions", "1000", "-hits", "4", "-tx", "500", "-batch", "300"}, &out); err != nil {
			t.Fatalf("seed: %v\n%s", err, out.String())
		}
		if err := run(context.Background(), []string{"-db", dsn, "-resume", "-sessions", "3000", "-hits", "4", "-tx", "1000", "-batch", "300", "-seed", "2"}, &out); err != nil {
			t.Fatalf("seed: %v\n%s", err, out.String())
		}
		if !strings.Contains(out.String(), "seeded 1000 sessions") || !strings.Contains(out.String(), "seeded 2000 sessions") {
			t.Fatalf("output: %s", out.String())
		}
		out.Reset()
		if err := run(context.Background(), []string{"-db", dsn, "-verify"}, &out); err != nil || !strings.Contains(out.String(), "counters agree") ||
			!strings.Contains(out.String(), "campaigns with a grouping") || strings.Contains(out.String(), " 0 campaigns") {
			t.Fatalf("-verify: %v %s", err, out.String())
		}
		ctx := ft.System()
		db, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		c := db.Client

		want, err := tally.Recount(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tally.Stored(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(want) {
			t.Fatalf("counters differ from a recount:\n%s", got.Diff(want))
		}
		// -verify notices a counter that is off.
		if _, err := c.ExecContext(ctx, "UPDATE counters SET value = value + 1 WHERE name = 'tripwires'"); err != nil {
			t.Fatal(err)
		}
		if err := run(context.Background(), []string{"-db", dsn, "-verify"}, &out); err == nil || !strings.Contains(err.Error(), "tripwires") {
			t.Fatalf("-verify after a counter was changed: %v", err)
		}
		if _, err := c.ExecContext(ctx, "UPDATE counters SET value = value - 1 WHERE name = 'tripwires'"); err != nil {
			t.Fatal(err)
		}

		sessions, err := c.Session.Query().All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(sessions) != 3000 {
			t.Fatalf("%d sessions, want 3000", len(sessions))
		}
		hits, prompts := 0, 0
		for _, s := range sessions {
			hits += s.HitCount
			prompts += s.PromptsCaptured
			if s.FirstSeen.After(s.LastSeen) {
				t.Fatalf("session %s: first seen %v after last seen %v", s.ID, s.FirstSeen, s.LastSeen)
			}
		}
		if n := c.Hit.Query().CountX(ctx); n != hits {
			t.Fatalf("%d hits stored, the sessions count %d", n, hits)
		}
		if n := c.Prompt.Query().CountX(ctx); n != prompts || n == 0 {
			t.Fatalf("%d prompts stored, the sessions count %d", n, prompts)
		}
		// Hits as ent reads them: headers, signals and hours decode.
		h := c.Hit.Query().Where(hit.TrapIDNotNil()).FirstX(ctx)
		if h.Headers["User-Agent"] == nil || h.Signals == nil || h.ReceivedHour != h.ReceivedAt.Unix()/3600 || h.Kind != hit.KindDecoy {
			t.Fatalf("hit as read: %+v", h)
		}

		events, err := c.Event.Query().Order(ent.Asc(event.FieldSeq)).All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) < 300 {
			t.Fatalf("%d events: the seed should make threat events for about a third of the sessions", len(events))
		}
		next := map[string]int64{}
		for i, ev := range events {
			next[ev.OrgID]++
			if ev.Seq != int64(i+1) || ev.Position != next[ev.OrgID] {
				t.Fatalf("event %d: seq %d position %d, want %d and %d", i, ev.Seq, ev.Position, i+1, next[ev.OrgID])
			}
			if i > 0 && ev.CreatedAt.Before(events[i-1].CreatedAt) {
				t.Fatalf("event %d (seq %d) is dated before the one before it: event times must rise with seq", i, ev.Seq)
			}
			if !strings.HasPrefix(ev.Type, "threat.") || ev.Data["session_id"] == nil {
				t.Fatalf("event %d: %s %v", i, ev.Type, ev.Data)
			}
		}
		// The service's own append continues the numbering.
		org := events[0].OrgID
		tx, err := c.Tx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := evt.Append(ctx, tx, org, evt.TrapCreated, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if ev.Seq != int64(len(events)+1) || ev.Position != next[org]+1 {
			t.Fatalf("appended after the seed: seq %d position %d, want %d and %d", ev.Seq, ev.Position, len(events)+1, next[org]+1)
		}

		// One delivery per event and endpoint whose filter takes it: every organization has an
		// endpoint for all events; the first also one for escalations.
		escalated := 0
		for _, ev := range events {
			if ev.Type == evt.ThreatEscalated && ev.OrgID == org {
				escalated++
			}
		}
		deliveries, err := c.WebhookDelivery.Query().All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(deliveries) != len(events)+escalated {
			t.Fatalf("%d deliveries, want %d events + %d escalations", len(deliveries), len(events), escalated)
		}
		byMessage := map[string]int{}
		for _, d := range deliveries {
			byMessage[d.MessageID]++
			if d.Status == webhookdelivery.StatusPENDING || d.AttemptCount != 1 || len(d.Attempts) != 1 || d.Payload["id"] != d.MessageID {
				t.Fatalf("delivery %s: status %s, %d attempts, payload id %v", d.ID, d.Status, d.AttemptCount, d.Payload["id"])
			}
		}
		for _, ev := range events {
			if byMessage[ev.ID] == 0 {
				t.Fatalf("event %s has no delivery", ev.ID)
			}
		}
		// The stratified times: sessions come in last_seen order, so ids (by first_seen) mostly grow.
		var rows []struct {
			ID string `json:"id"`
		}
		if err := c.Session.Query().Order(ent.Asc("last_seen")).Select("id").Scan(ctx, &rows); err != nil {
			t.Fatal(err)
		}
		down := 0
		for i := 1; i < len(rows); i++ {
			if rows[i].ID < rows[i-1].ID {
				down++
			}
		}
		if down > len(rows)/2 {
			t.Fatalf("%d of %d sessions' ids fall in last_seen order: the seed should write them in time order", down, len(rows))
		}
	})
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-db", "x.db", "-sessions", "0"},
		{"-db", "x.db", "-hits", "0.5"},
		{"-db", "x.db", "-batch", "2000"},
		{"-db", filepath.Join(t.TempDir(), "empty.db"), "-resume"},
	} {
		if err := run(context.Background(), args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestSeededTrapsAnswer serves a seeded database with the real trap listener and requests
// every seeded trap of every organization as a visitor would, with its site's host: each
// answers 200 and its hit is recorded in its own organization. Several organizations each
// with a host-less site routed nothing (the listener falls back to a host-less site only
// when it is the only one), so the seed could not be measured under ingest.
func TestSeededTrapsAnswer(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		var out bytes.Buffer
		if err := run(context.Background(), []string{"-db", dsn, "-sessions", "30", "-orgs", "3", "-traps", "6", "-giant", "3000"}, &out); err != nil {
			t.Fatalf("seed: %v\n%s", err, out.String())
		}
		// The giant session is counted as the writer would have counted it.
		var verify bytes.Buffer
		if err := run(context.Background(), []string{"-db", dsn, "-verify"}, &verify); err != nil || !strings.Contains(out.String(), "giant session") {
			t.Fatalf("-verify after -giant: %v %s\n%s", err, verify.String(), out.String())
		}
		if !strings.Contains(out.String(), "host "+seedHost(1)+"\n") {
			t.Fatalf("the seed does not say its first organization's host:\n%s", out.String())
		}
		env := ft.StartOn(t, dsn)
		ctx := ft.System()
		c := env.DB.Client
		orgs, err := c.Organization.Query().Order(ent.Asc(organization.FieldCreatedAt), ent.Asc(organization.FieldID)).All(ctx)
		if err != nil || len(orgs) != 3 {
			t.Fatalf("organizations: %d, %v", len(orgs), err)
		}
		client := env.Trap.Client()
		for i, o := range orgs {
			traps, err := c.Trap.Query().Where(enttrap.OrgID(o.ID)).All(ctx)
			if err != nil || len(traps) != 6 {
				t.Fatalf("%s: traps %d, %v", o.ID, len(traps), err)
			}
			for _, tr := range traps {
				before := c.Hit.Query().Where(hit.TrapID(tr.ID)).CountX(ctx)
				req, _ := http.NewRequest(http.MethodGet, env.Trap.URL+tr.Path, nil)
				req.Host = seedHost(i + 1)
				req.Header.Set("User-Agent", "python-requests/2.32.3")
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("org %d trap %s (%s, %s) on host %s: status %d", i+1, tr.Path, tr.Type, tr.ID, req.Host, resp.StatusCode)
				}
				// The writer commits in the background: the hit appears within a few seconds.
				deadline := time.Now().Add(10 * time.Second)
				for c.Hit.Query().Where(hit.TrapID(tr.ID), hit.OrgID(o.ID)).CountX(ctx) != before+1 {
					if time.Now().After(deadline) {
						t.Fatalf("org %d trap %s: the hit was not recorded in its organization", i+1, tr.Path)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}
	})
}
