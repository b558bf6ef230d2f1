package record

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/store"
)

// BenchmarkInsertHits is the hit INSERT alone: batches of 128 hit rows (sampleHit's kinds,
// each with a browser's headers) in one transaction begun as the writer begins its own
// (store.Prepared), committed, on each database; on PostgreSQL both ways: COPY (the
// writer's, insertHits) and multi-row INSERTs of 64 rows (insert). wall-µs/hit includes
// the database server's work; cpu-µs/hit is this process's alone.
func BenchmarkInsertHits(b *testing.B) {
	for _, be := range testdb.Backends() {
		ways := []string{"insertHits"}
		if be.Name == "postgres" {
			ways = append(ways, "insert")
		}
		for _, way := range ways {
			b.Run(be.Name+"/"+way, func(b *testing.B) { insertBatches(b, be, way) })
		}
	}
}

func insertBatches(b *testing.B, be testdb.Backend, way string) {
	ctx := privacy.DecisionContext(context.Background(), privacy.Allow)
	s, err := store.Open(ctx, be.DSN(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := s.Client
	org := c.Organization.Create().SetName("acme").SaveX(ctx)
	site := c.Site.Create().SetOrgID(org.ID).SetName("default").SaveX(ctx)
	session := c.Session.Create().SetID(ids.New(ids.Session)).SetOrgID(org.ID).SetSiteID(site.ID).
		SetSourceIP("192.0.2.1").SaveX(ctx)
	w := NewWriter(s.Dialect)
	insert := w.insertHits
	if way == "insert" {
		insert = func(ctx context.Context, c *ent.Client, rows [][]any) error { return w.insert(ctx, c, rows, hitChunk) }
	}
	const batch = 128
	rows := make([][]any, batch)
	start, cpu := time.Now(), testdb.ProcessCPU()
	b.ResetTimer()
	for n := 0; n < b.N; n += batch {
		for i := range rows {
			h, _ := sampleHit(i, org.ID)
			h.TrapID = "" // no trap rows in this database
			h.Headers["Accept"] = []string{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
			h.Headers["Accept-Language"] = []string{fmt.Sprintf("en-US,en;q=0.%d", i%10)}
			h.At = time.Now().UTC()
			h.Prepare()
			h.Session = &Session{ID: session.ID}
			if rows[i], err = h.complete(); err != nil {
				b.Fatal(err)
			}
		}
		tx, err := c.Tx(store.Prepared(ctx))
		if err != nil {
			b.Fatal(err)
		}
		if err := insert(store.Prepared(ctx), tx.Client(), rows); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	n := (b.N + batch - 1) / batch * batch
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(n), "wall-µs/hit")
	b.ReportMetric(float64((testdb.ProcessCPU()-cpu).Microseconds())/float64(n), "cpu-µs/hit")
}
