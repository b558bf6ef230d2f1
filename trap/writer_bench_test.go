package trap

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/record"
	"github.com/flytrap/flytrap/store"
)

// BenchmarkWriteBatch is the hit writer alone: batches of 128 page hits with a browser's
// headers, written by writeBatch as the writer goroutine does — from 128 returning
// visitors (each batch touches every visitor's session once), or from new visitors only
// (each hit makes a session); "-tls" the same with a JA4 on every hit (one of three
// clients), which the writer also counts in its JA4 campaign. It reports the writer's wall
// time and its process CPU per hit (on PostgreSQL the server's CPU is not in it).
//
// On PostgreSQL hits is partitioned by day (a new database's default); postgres-plain is
// the same on a plain hits table (--pg-partitions=false).
func BenchmarkWriteBatch(b *testing.B) {
	for _, be := range testdb.Backends() {
		layouts := []struct {
			name string
			opts store.Options
		}{{be.Name, store.Options{}}}
		if be.Name == "postgres" {
			layouts = append(layouts, struct {
				name string
				opts store.Options
			}{"postgres-plain", store.Options{NoPartitions: true}})
		}
		for _, l := range layouts {
			for _, visitors := range []string{"returning", "new", "returning-tls", "new-tls"} {
				b.Run(l.name+"/"+visitors, func(b *testing.B) {
					writeBatches(b, be, l.opts, strings.HasPrefix(visitors, "new"), strings.HasSuffix(visitors, "-tls"))
				})
			}
		}
	}
}

// benchJA4s are three TLS clients' JA4s (Chromium, curl, Python).
var benchJA4s = []string{"t13d1516h2_8daaf6152771_d8a2da3f94cd", "t13d3112h2_e8f1e7e78f70_6bebaf5329ac", "t13d1812h1_85036bcba153_b26ce05bbdd6"}

func writeBatches(b *testing.B, be testdb.Backend, opts store.Options, fresh, tls bool) {
	ctx := privacy.DecisionContext(context.Background(), privacy.Allow)
	db, err := store.OpenWith(ctx, be.DSN(b), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	org := db.Client.Organization.Create().SetName("acme").SaveX(ctx)
	site := db.Client.Site.Create().SetOrgID(org.ID).SetName("main").SaveX(ctx)
	tr := db.Client.Trap.Create().SetOrgID(org.ID).SetSiteID(site.ID).SetName("Docs").SetType("page").
		SetPath("/internal/docs").SaveX(ctx)
	e, err := New(ctx, DefaultConfig(), db.Client, db.Dialect, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	headers := map[string][]string{
		"Accept":          {"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"},
		"Accept-Encoding": {"gzip, deflate, br, zstd"},
		"Accept-Language": {"en-US,en;q=0.9"},
		"Sec-Fetch-Dest":  {"document"},
		"Sec-Fetch-Mode":  {"navigate"},
	}
	const visitors = 128
	batch := make([]*job, visitors)
	start, cpu := time.Now(), testdb.ProcessCPU()
	n := 0
	b.ResetTimer()
	for n < b.N {
		now := time.Now().UTC()
		for i := range batch {
			ua := fmt.Sprintf("Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/131.0.%d.0 Safari/537.36", i)
			if fresh {
				ua += fmt.Sprintf(" v%d", n)
			}
			h := map[string][]string{"User-Agent": {ua}}
			for k, v := range headers {
				h[k] = v
			}
			rec := &hitRecord{trap: tr, Hit: record.Hit{
				ID: ids.New(ids.Hit), Org: org.ID, Site: site.ID, Status: 200, Observation: detect.Observation{
					Kind: "decoy", Method: "GET", Host: "trap.example", Path: "/internal/docs", Headers: h, UA: ua,
					IP: netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), At: now,
				}}}
			if tls {
				rec.JA4 = benchJA4s[i%len(benchJA4s)]
			}
			rec.prepare()
			batch[i] = &job{rec: rec}
		}
		if err := e.writeBatch(ctx, batch); err != nil {
			b.Fatal(err)
		}
		n += visitors
	}
	b.StopTimer()
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(n), "wall-µs/hit")
	b.ReportMetric(float64((testdb.ProcessCPU()-cpu).Microseconds())/float64(n), "cpu-µs/hit")
}
