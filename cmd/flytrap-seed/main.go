// Command flytrap-seed fills a database with a large, realistic dataset — organizations,
// traps, sessions, their hits and signals — for measuring reads at scale
// (docs/benchmarks.md, "Reads at scale"). It is a test tool: point it only at a database of
// your own, never at one that serves visitors.
//
// The bulk path: rows are built in memory and written with ent's CreateBulk, which issues one
// multi-row INSERT per -batch rows (ent's validators and schema hooks still run), many batches
// to a transaction (-tx sessions). On SQLite the file is opened with synchronous=OFF for the
// seeding only. One million sessions take minutes.
//
//	flytrap-seed -db /tmp/big.db -sessions 1000000
//	flytrap-seed -db 'postgres://postgres@127.0.0.1:5432/flytrap_big?sslmode=disable' -sessions 1000000
//
// It prints the first organization's id and a new admin API key for it (the organization
// that holds most sessions), to give to flytrap-reads.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"strings"
	"time"

	"entgo.io/ent/dialect"
	"entgo.io/ent/privacy"
	"github.com/oklog/ulid/v2"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/ent/trap"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/viewer"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "flytrap-seed:", err)
		os.Exit(1)
	}
}

type options struct {
	db          string
	sessions    int
	orgs, traps int
	hits        float64 // mean hits per session
	days        int
	batch, tx   int
	seed        uint64
	now         time.Time
}

func run(ctx context.Context, args []string, out io.Writer) error {
	var o options
	fs := flag.NewFlagSet("flytrap-seed", flag.ContinueOnError)
	fs.StringVar(&o.db, "db", "", "database: a SQLite file path or a postgres:// URL (required)")
	fs.IntVar(&o.sessions, "sessions", 1000, "sessions to create, 1–100000000")
	fs.IntVar(&o.orgs, "orgs", 3, "organizations; the first holds 80% of the sessions, the others share the rest")
	fs.IntVar(&o.traps, "traps", 6, "traps per organization")
	fs.Float64Var(&o.hits, "hits", 2.5, "mean hits per session (at least 1 each)")
	fs.IntVar(&o.days, "days", 90, "last_seen spreads over this many days before now, denser towards now")
	fs.IntVar(&o.batch, "batch", 1000, "rows per INSERT statement")
	fs.IntVar(&o.tx, "tx", 20000, "sessions per transaction")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed: the same seed makes the same distributions")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case o.db == "":
		return errors.New("-db is required")
	case o.sessions < 1 || o.sessions > 100_000_000:
		return errors.New("-sessions: from 1 to 100000000")
	case o.orgs < 1 || o.orgs > 1000 || o.traps < 1 || o.traps > 1000:
		return errors.New("-orgs and -traps: from 1 to 1000")
	case o.hits < 1 || o.hits > 100:
		return errors.New("-hits: from 1 to 100")
	case o.days < 1 || o.batch < 1 || o.batch > 1500 || o.tx < o.batch:
		return errors.New("-days ≥ 1, -batch 1–1500 (SQLite's 32766 bound variables), -tx ≥ -batch")
	}
	o.now = time.Now().UTC()
	db, err := store.Open(ctx, o.db)
	if err != nil {
		return err
	}
	defer db.Close()
	if db.Dialect == dialect.SQLite {
		// One connection, not synced: a crash mid-seed loses the seed, which is all the file holds.
		db.SQL.SetMaxOpenConns(1)
		if _, err := db.SQL.ExecContext(ctx, "PRAGMA synchronous=OFF"); err != nil {
			return err
		}
	}
	ctx = privacy.DecisionContext(ctx, privacy.Allow) // an operator's tool, not a tenant's
	s := &seeder{o: o, c: db.Client, rnd: rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15))}
	var seed [32]byte
	seed[0], seed[1] = byte(o.seed), byte(o.seed>>8)
	s.entropy = ulid.Monotonic(rand.NewChaCha8(seed), 0)
	if err := s.setup(ctx); err != nil {
		return err
	}
	start := time.Now()
	if err := s.fill(ctx, out); err != nil {
		return err
	}
	el := time.Since(start)
	fmt.Fprintf(out, "seeded %d sessions, %d hits, %d signals on %s in %v (%.0f sessions/s)\n",
		o.sessions, s.nHits, s.nSignals, db.Dialect, el.Round(time.Second), float64(o.sessions)/el.Seconds())
	if _, err := db.SQL.ExecContext(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	key, _, err := graph.CreateAPIKey(ctx, db.Client, s.orgs[0].id, "flytrap-seed admin key", viewer.Admin)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "org %s\nkey %s\n", s.orgs[0].id, key)
	return nil
}

type org struct {
	id    string
	traps []string
}

type seeder struct {
	o               options
	c               *ent.Client
	rnd             *rand.Rand
	entropy         io.Reader
	orgs            []org
	nHits, nSignals int
}

// setup creates the organizations, each with its default site and traps.
func (s *seeder) setup(ctx context.Context) error {
	kinds := []string{"page", "api", "llms_txt", "robots", "credential", "mcp"}
	for i := range s.o.orgs {
		o, err := s.c.Organization.Create().SetName(fmt.Sprintf("Seeded organization %d", i+1)).Save(ctx)
		if err != nil {
			return fmt.Errorf("create organization: %w", err)
		}
		site, err := s.c.Site.Create().SetOrgID(o.ID).SetName("default").Save(ctx)
		if err != nil {
			return fmt.Errorf("create site: %w", err)
		}
		rec := org{id: o.ID}
		for j := range s.o.traps {
			t, err := s.c.Trap.Create().SetOrgID(o.ID).SetSiteID(site.ID).SetName(fmt.Sprintf("Seeded trap %d", j+1)).
				SetType(trap.Type(kinds[j%len(kinds)])).SetPath(fmt.Sprintf("/seed-%d/%d", i+1, j+1)).Save(ctx)
			if err != nil {
				return fmt.Errorf("create trap: %w", err)
			}
			rec.traps = append(rec.traps, t.ID)
		}
		s.orgs = append(s.orgs, rec)
	}
	return nil
}

// A class's share of sessions, its severity and its signals, roughly as a public honeypot sees them.
type class struct {
	name     session.Classification
	weight   float64
	severity []session.Severity // picked uniformly
	score    [2]int
	signals  []string
	uas      []string
}

var classes = []class{
	{session.ClassificationHUMAN, 30, sev("low"), [2]int{0, 15}, nil,
		[]string{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36", "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 Version/17.5 Safari/605.1.15"}},
	{session.ClassificationBOT, 20, sev("low", "medium"), [2]int{20, 45}, []string{detect.SignalAutomationClientUA, detect.SignalMachineSpeedFollowup},
		[]string{"python-requests/2.32.3", "Go-http-client/1.1", "curl/8.5.0"}},
	{session.ClassificationCRAWLER, 15, sev("low"), [2]int{10, 30}, []string{detect.SignalSearchCrawlerUA},
		[]string{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Mozilla/5.0 (compatible; bingbot/2.0)"}},
	{session.ClassificationAI_CRAWLER, 12, sev("low", "medium"), [2]int{25, 50}, []string{detect.SignalKnownAICrawlerUA, detect.SignalRobotsDisallowIgnored},
		[]string{"Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)", "ClaudeBot/1.0", "CCBot/2.0"}},
	{session.ClassificationSCANNER, 12, sev("medium", "high"), [2]int{40, 70}, []string{detect.SignalScannerUA, detect.SignalSystematicProbing},
		[]string{"Mozilla/5.0 zgrab/0.x", "Nuclei - Open-source project (github.com/projectdiscovery/nuclei)"}},
	{session.ClassificationAI_ASSISTANT, 6, sev("medium"), [2]int{40, 65}, []string{detect.SignalKnownAIAssistantUA, detect.SignalCallbackHit},
		[]string{"ChatGPT-User/1.0", "Perplexity-User/1.0"}},
	{session.ClassificationAI_AGENT, 4, sev("high", "critical"), [2]int{70, 90}, []string{detect.SignalKnownAIAgentUA, detect.SignalInjectionFollowed, detect.SignalLLMSpeedFollowup},
		[]string{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ChatGPT-Agent/1.0)", "Claude-Code/1.0"}},
	{session.ClassificationAI_AGENT_MALICIOUS, 1, sev("critical"), [2]int{90, 100}, []string{detect.SignalInjectionFollowed, detect.SignalCredentialUsed, detect.SignalSystemPromptLeaked},
		[]string{"Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/130.0 Safari/537.36"}},
}

func sev(v ...string) []session.Severity {
	out := make([]session.Severity, len(v))
	for i, s := range v {
		out[i] = session.Severity(s)
	}
	return out
}

var classTotal = func() (t float64) {
	for _, c := range classes {
		t += c.weight
	}
	return t
}()

func (s *seeder) pickClass() *class {
	x := s.rnd.Float64() * classTotal
	for i := range classes {
		if x < classes[i].weight {
			return &classes[i]
		}
		x -= classes[i].weight
	}
	return &classes[len(classes)-1]
}

func (s *seeder) id(prefix string, t time.Time) string {
	return prefix + "_" + strings.ToLower(ulid.MustNew(ulid.Timestamp(t), s.entropy).String())
}

var paths = []string{"/", "/robots.txt", "/llms.txt", "/wp-login.php", "/.env", "/api/v1/users", "/docs/internal", "/admin"}

// fill writes the sessions, tx sessions to a transaction, each with its hits and signals.
func (s *seeder) fill(ctx context.Context, out io.Writer) error {
	span := time.Duration(s.o.days) * 24 * time.Hour
	report := max(s.o.sessions/10, s.o.tx)
	for done := 0; done < s.o.sessions; {
		n := min(s.o.tx, s.o.sessions-done)
		tx, err := s.c.Tx(ctx)
		if err != nil {
			return err
		}
		var sessions []*ent.SessionCreate
		var hits []*ent.HitCreate
		var signals []*ent.SignalCreate
		for range n {
			o := &s.orgs[0]
			if len(s.orgs) > 1 && s.rnd.Float64() >= 0.8 {
				o = &s.orgs[1+s.rnd.IntN(len(s.orgs)-1)]
			}
			c := s.pickClass()
			// Denser towards now: age = span × u², so half the sessions fall in the last quarter.
			u := s.rnd.Float64()
			last := s.o.now.Add(-time.Duration(u * u * float64(span))).Truncate(time.Millisecond)
			nh := 1 + int(s.rnd.ExpFloat64()*(s.o.hits-1))
			nh = min(nh, 500)
			dur := time.Duration(s.rnd.ExpFloat64() * float64(time.Duration(nh)*20*time.Second))
			first := last.Add(-dur)
			sid := s.id(ids.Session, first)
			ip := netip.AddrFrom4([4]byte{byte(1 + s.rnd.IntN(223)), byte(s.rnd.IntN(256)), byte(s.rnd.IntN(256)), byte(1 + s.rnd.IntN(254))}).String()
			ua := c.uas[s.rnd.IntN(len(c.uas))]
			var fired []string
			if len(c.signals) > 0 {
				fired = c.signals[:1+s.rnd.IntN(len(c.signals))]
			}
			tripwires := 0
			for _, f := range fired {
				if detect.IsTripwire(f) {
					tripwires++
				}
			}
			var trapsHit []string
			hitIDs := make([]string, nh)
			for h := range nh {
				at := first
				if nh > 1 {
					at = first.Add(dur * time.Duration(h) / time.Duration(nh-1))
				}
				hid := s.id(ids.Hit, at)
				hitIDs[h] = hid
				hc := tx.Hit.Create().SetID(hid).SetOrgID(o.id).SetSessionID(sid).SetMethod("GET").
					SetPath(paths[s.rnd.IntN(len(paths))]).SetHeaders(map[string][]string{"User-Agent": {ua}, "Accept": {"*/*"}}).
					SetSourceIP(ip).SetUserAgent(ua).SetReceivedAt(at)
				if s.rnd.IntN(4) > 0 { // most hits land on a trap
					t := o.traps[s.rnd.IntN(len(o.traps))]
					hc.SetTrapID(t)
					trapsHit = appendOnce(trapsHit, t)
				} else {
					hc.SetKind("not_found").SetStatus(404)
				}
				hits = append(hits, hc)
			}
			for i, f := range fired {
				signals = append(signals, tx.Signal.Create().SetOrgID(o.id).SetSessionID(sid).
					SetHitID(hitIDs[min(i, nh-1)]).SetName(f).SetTripwire(detect.IsTripwire(f)).SetCreatedAt(last))
			}
			if fired == nil {
				fired = []string{}
			}
			if trapsHit == nil {
				trapsHit = []string{}
			}
			score := c.score[0] + s.rnd.IntN(c.score[1]-c.score[0]+1)
			sessions = append(sessions, tx.Session.Create().SetID(sid).SetOrgID(o.id).SetSourceIP(ip).SetUserAgent(ua).
				SetClassification(c.name).SetSeverity(c.severity[s.rnd.IntN(len(c.severity))]).
				SetScore(score).SetConfidence(min(100, score+10)).SetSignalsFired(fired).
				SetFirstSeen(first).SetLastSeen(last).SetHitCount(nh).SetTripwiresFired(tripwires).
				SetTrapsTriggered(trapsHit))
		}
		if err := s.write(ctx, tx, sessions, hits, signals); err != nil {
			return err
		}
		s.nHits += len(hits)
		s.nSignals += len(signals)
		done += n
		if done%report < n || done == s.o.sessions {
			fmt.Fprintf(out, "%d/%d sessions\n", done, s.o.sessions)
		}
	}
	return nil
}

// write commits one transaction: the sessions, then their hits and signals, batch rows per INSERT.
func (s *seeder) write(ctx context.Context, tx *ent.Tx, sessions []*ent.SessionCreate, hits []*ent.HitCreate, signals []*ent.SignalCreate) error {
	defer tx.Rollback()
	for b := range chunks(len(sessions), s.o.batch) {
		if err := tx.Session.CreateBulk(sessions[b[0]:b[1]]...).Exec(ctx); err != nil {
			return fmt.Errorf("insert sessions: %w", err)
		}
	}
	for b := range chunks(len(hits), s.o.batch) {
		if err := tx.Hit.CreateBulk(hits[b[0]:b[1]]...).Exec(ctx); err != nil {
			return fmt.Errorf("insert hits: %w", err)
		}
	}
	for b := range chunks(len(signals), s.o.batch) {
		if err := tx.Signal.CreateBulk(signals[b[0]:b[1]]...).Exec(ctx); err != nil {
			return fmt.Errorf("insert signals: %w", err)
		}
	}
	return tx.Commit()
}

// chunks yields [from, to) bounds of n items, size at a time.
func chunks(n, size int) func(func([2]int) bool) {
	return func(yield func([2]int) bool) {
		for i := 0; i < n; i += size {
			if !yield([2]int{i, min(i+size, n)}) {
				return
			}
		}
	}
}

func appendOnce(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
