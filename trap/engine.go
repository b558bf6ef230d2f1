// Package trap is the trap listener and the hit recorder: it serves the decoys of
// every active trap, recognises the tokens that come back from their hidden
// content, and records every hit durably, in batches, before it answers.
package trap

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/flytrap/flytrap/botauth"
	"github.com/flytrap/flytrap/crawler"
	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/secret"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/record"
)

// Config is the trap listener's part of the configuration.
type Config struct {
	TrustedProxies []netip.Prefix
	QueueSize      int           // hits waiting to be written; beyond it the listener answers 503
	BatchSize      int           // hits written per transaction at most
	Linger         time.Duration // how long a batch waits for company
	WriteTimeout   time.Duration // how long a request waits for its hit to be durable
	SessionIdle    time.Duration // idle gap that ends a session
	RoutesMaxAge   time.Duration // how stale the routes may be when another instance changed them
	RoutesTimeout  time.Duration // how long one reload of the routes may take; the last ones serve meanwhile
	MCPStreamIdle  time.Duration // a legacy MCP stream with no message posted this long ends (0: DefaultMCPStreamIdle)

	// JA4Header is the request header in which a trusted proxy (a CDN) passes the client's
	// JA4 (--trap-ja4-header, e.g. cf-ja4); believed only from TrustedProxies.
	JA4Header string

	// Journal is the directory of the hit journal (journal.go): a hit is acknowledged once
	// written there and applied to the database after. "": no journal, each answer waits
	// for its batch's commit. The server sets it (--hit-journal).
	Journal string
	// JournalMax bounds the journal's bytes on disk; past it the listener answers 503.
	JournalMax int64
	// JournalSegment is the size past which the journal starts a new file (0: DefaultJournalSegment).
	JournalSegment int64
	// AckApplied makes every answer wait until its hit is applied to the database, journal
	// or not (--hit-ack=applied): what a reader of the API sees then includes every hit answered.
	AckApplied bool

	// Crawlers verifies a claimed crawler by forward-confirmed reverse DNS (nil: not at
	// all, the published ranges alone); a hit waits for it at most CrawlerDNSBudget. The
	// server sets them (--crawler-dns, --crawler-dns-budget).
	Crawlers         *crawler.Verifier
	CrawlerDNSBudget time.Duration
	// Signatures bounds the verification of signed agents (Web Bot Auth): the outbound guard
	// of key directory fetches, the wait budget, the caches (botauth.Config; zero: defaults).
	Signatures botauth.Config
}

// DefaultConfig is the listener's configuration with nothing set.
func DefaultConfig() Config {
	return Config{
		QueueSize:     8192,
		BatchSize:     256,
		Linger:        time.Millisecond,
		WriteTimeout:  5 * time.Second,
		SessionIdle:   30 * time.Minute,
		RoutesMaxAge:  time.Second,
		RoutesTimeout: 5 * time.Second,
		JournalMax:    1 << 30,
		Signatures:    botauth.DefaultConfig(),
	}
}

// ApplyLinger is how long a batch of journaled hits waits for company when nobody waits for
// it (answers acknowledged once journaled): the hits show in the API that much later, and
// fuller batches cost less per hit (one session update, one commit, one multi-row insert or COPY).
const ApplyLinger = 10 * time.Millisecond

// ErrOverloaded is returned when the hit queue is full: the listener sheds the request visibly.
var ErrOverloaded = errors.New("hit queue full")

// Engine records hits and serves decoys.
type Engine struct {
	cfg     Config
	client  *ent.Client
	dialect string
	log     *slog.Logger
	key     decoy.Key
	now     func() time.Time

	queue  chan *job
	routes *siteCache
	visits *visitorCache
	recent *lru.Cache[string, *sess] // sessions this instance wrote lately, as it wrote them
	// lurePages are the pages this instance put lures into lately, by site and page tag.
	lurePages *lru.Cache[lurePageKey, string]
	mcp       *mcpStreams // open legacy MCP (HTTP+SSE) streams
	stopped   atomic.Bool
	done      chan struct{}

	// inflight counts requests from their body's read until their answer is written (a
	// legacy MCP stream's: until it opens). While the writer lingers over a batch, waitingWith is
	// the batch's size (else -1), and the request that brings inflight down to it wakes
	// the writer through settled (Run). A request whose write timed out stops counting
	// while its hit may still be queued: the writer may then commit early, never wrongly.
	inflight    atomic.Int64
	waitingWith atomic.Int64
	settled     chan struct{}

	received atomic.Int64 // hits offered to the queue
	shed     atomic.Int64 // requests refused for overload
	written  atomic.Int64 // hits made durable
	observe  BatchObserver

	sigs           *botauth.Verifier // signed agents' signatures (Web Bot Auth)
	recorder       *record.Writer    // stores each batch, with its counters
	openSessionSQL string            // see openSession

	journal      *journal     // nil: no journal (Config.Journal "")
	pending      atomic.Int64 // journaled hits queued, not yet taken by the writer
	replayedHits atomic.Int64 // hits applied from an earlier run's journal
	unapplied    sync.Map     // hit id → organization: journaled hits of this run not yet applied (findAWSKeys)
}

// New returns an engine over client. It loads (or creates) the installation's token key.
// dia is the database's dialect (dialect.SQLite or dialect.Postgres).
func New(ctx context.Context, cfg Config, client *ent.Client, dia string, log *slog.Logger) (*Engine, error) {
	key, err := loadKey(ctx, client)
	if err != nil {
		return nil, err
	}
	recent, _ := lru.New[string, *sess](20_000) // only fails for a size < 1
	lurePages, _ := lru.New[lurePageKey, string](lurePagesSize)
	e := &Engine{
		cfg:       cfg,
		client:    client,
		lurePages: lurePages,
		dialect:   dia,
		log:       log,
		key:       key,
		now:       time.Now,
		queue:     make(chan *job, cfg.QueueSize),
		routes:    &siteCache{client: client, maxAge: cfg.RoutesMaxAge, timeout: cmp.Or(cfg.RoutesTimeout, 5*time.Second), log: log},
		visits:    newVisitorCache(100_000),
		recent:    recent,
		mcp:       newMCPStreams(),
		settled:   make(chan struct{}, 1),
		done:      make(chan struct{}),

		recorder: record.NewWriter(dia),
		sigs:     botauth.New(cfg.Signatures, log),
	}
	e.waitingWith.Store(-1)
	e.openSessionSQL = openSessionSQL(dia)
	if _, err := e.routes.get(ctx); err != nil { // before the first visitor
		return nil, fmt.Errorf("load trap routes: %w", err)
	}
	if cfg.Journal != "" {
		if e.journal, err = openJournal(cfg.Journal, cmp.Or(cfg.JournalMax, 1<<30), cmp.Or(cfg.JournalSegment, DefaultJournalSegment)); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// InvalidateRoutes reloads sites and traps in the background (another instance changed them).
func (e *Engine) InvalidateRoutes() { e.routes.invalidate() }

// Key is the installation's token key (tests use it to read tokens back).
func (e *Engine) Key() decoy.Key { return e.key }

// Stats reports the hits written and the requests shed since start.
func (e *Engine) Stats() (written, shed int64) { return e.written.Load(), e.shed.Load() }

// Counts reports, since start, the hits offered to the writer's queue, those made
// durable and those refused because the queue was full.
func (e *Engine) Counts() (received, recorded, shed int64) {
	return e.received.Load(), e.written.Load(), e.shed.Load()
}

// JournalStats reports the hit journal's bytes on disk and the hits applied from an
// earlier run's journal since start.
func (e *Engine) JournalStats() (bytes, replayed int64) {
	if e.journal != nil {
		bytes = e.journal.bytes()
	}
	return bytes, e.replayedHits.Load()
}

// MCPStreams is the number of open legacy MCP streams.
func (e *Engine) MCPStreams() int { return e.mcp.count() }

// QueueDepth is the number of hits waiting for the writer.
func (e *Engine) QueueDepth() int { return len(e.queue) }

// BatchObserver is told of every transaction the writer ran: its hits, how long it took
// from begin to commit, and its error. It runs on the writer: it must not block.
type BatchObserver func(hits int, took time.Duration, err error)

// Observe sets the writer's BatchObserver; call it before Run.
func (e *Engine) Observe(o BatchObserver) { e.observe = o }

// writeBatchObserved is writeBatch, reported to the observer.
func (e *Engine) writeBatchObserved(ctx context.Context, batch []*job) error {
	start := time.Now()
	err := e.writeBatch(ctx, batch)
	if e.observe != nil {
		e.observe(len(batch), time.Since(start), err)
	}
	return err
}

const keyID = "decoy-token-key"

// loadKey reads the token key every instance shares, creating it on first start.
func loadKey(ctx context.Context, client *ent.Client) (decoy.Key, error) {
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	err := client.Secret.Create().SetID(keyID).SetValue(fresh).OnConflictColumns(secret.FieldID).DoNothing().Exec(ctx)
	if err != nil && !errors.Is(err, sql.ErrNoRows) { // ErrNoRows: another start stored it first

		return nil, fmt.Errorf("store the token key: %w", err)
	}
	s, err := client.Secret.Get(ctx, keyID)
	if err != nil {
		return nil, fmt.Errorf("load the token key: %w", err)
	}
	return decoy.Key(s.Value), nil
}

// answered marks the end of a counted request's wait (see inflight).
func (e *Engine) answered() {
	if e.inflight.Add(-1) <= e.waitingWith.Load() {
		select {
		case e.settled <- struct{}{}:
		default: // the writer has a wake-up waiting already
		}
	}
}

// Run writes queued hits until ctx ends, then drains the queue: every hit the
// listener accepted is written before Run returns.
//
// A batch is written once it is full, once Linger has passed since its first hit, or
// as soon as every request the listener is serving waits on it: a hit that could join
// is then at least a network round trip away, and waiting would only delay the hits at
// hand. Under load other requests are always being prepared or answered, and batches
// fill as before; a lone visitor's hit is written at once instead of a Linger later
// (PostgreSQL's commit_delay waits only while commit_siblings transactions are active,
// for the same reason).
//
// With a journal, what an earlier run journaled and did not apply is applied first
// (replay), and a batch waits for company only while Linger runs, unless requests wait
// for their hits to be applied (AckApplied): nobody waits on it.
func (e *Engine) Run(ctx context.Context) {
	defer close(e.done)
	defer e.sigs.Close() // the directory fetches under way end with the writer
	if e.journal != nil {
		defer e.journal.close()
		e.replay(context.WithoutCancel(ctx), ctx.Done())
	}
	waited := e.journal == nil || e.cfg.AckApplied // requests wait on the batch
	lingerFor := e.cfg.Linger
	if !waited {
		lingerFor = max(lingerFor, ApplyLinger)
	}
	batch := make([]*job, 0, e.cfg.BatchSize)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		var first *job
		select {
		case first = <-e.queue:
		case <-ctx.Done():
			e.stopped.Store(true)
			e.drain(batch)
			return
		}
		batch = append(batch[:0], first)
		linger.Reset(lingerFor)
	fill:
		for len(batch) < e.cfg.BatchSize {
			select { // what is already queued, without the cost of a select on the timer too
			case j := <-e.queue:
				batch = append(batch, j)
				continue
			default:
			}
			e.waitingWith.Store(int64(len(batch)))
			if waited && e.inflight.Load() <= int64(len(batch)) { // every request in flight waits on this batch
				e.waitingWith.Store(-1)
				break fill
			}
			select {
			case j := <-e.queue:
				batch = append(batch, j)
			case <-e.settled: // look at the queue and the count again
			case <-linger.C:
				e.waitingWith.Store(-1)
				break fill
			}
			e.waitingWith.Store(-1)
		}
		linger.Stop()
		e.write(ctx, batch)
	}
}

// drain writes what is left in the queue at shutdown.
func (e *Engine) drain(batch []*job) {
	ctx, stopped := context.WithCancel(context.Background())
	stopped()
	for {
		batch = batch[:0]
		for len(batch) < e.cfg.BatchSize {
			select {
			case j := <-e.queue:
				batch = append(batch, j)
				continue
			default:
			}
			break
		}
		if len(batch) == 0 {
			return
		}
		e.write(ctx, batch)
	}
}

// Done is closed once Run has drained the queue and returned.
func (e *Engine) Done() <-chan struct{} { return e.done }

// write makes a batch durable in one transaction; if that fails, each hit is tried
// alone so one bad record cannot sink the others. Journaled hits are applied (apply):
// retried until stored, or until ctx ends (they stay in the journal).
func (e *Engine) write(ctx context.Context, batch []*job) {
	if e.journal != nil {
		e.pending.Add(-int64(len(batch)))
		e.apply(context.WithoutCancel(ctx), batch, ctx.Done())
		return
	}
	ctx = context.WithoutCancel(ctx)
	err := e.writeBatchObserved(ctx, batch)
	if err != nil && len(batch) > 1 {
		e.log.Warn("writing a batch of hits failed; writing them one by one", "hits", len(batch), "err", err)
		for _, j := range batch {
			j.done <- e.writeBatchObserved(ctx, []*job{j})
		}
		return
	}
	if err != nil {
		e.log.Error("writing a hit failed", "err", err)
	}
	for _, j := range batch {
		j.done <- err
	}
}

// visitorCache remembers, per visitor, the session it is in and the unknown paths a
// stranger (no session yet) probed, bounded in size.
type visitorCache struct {
	mu       sync.Mutex
	max      int
	sessions map[string]visitorSession
	probes   map[string][]probe
}

// probe is an unknown path a stranger asked for, and when.
type probe struct {
	path string
	at   int64 // Unix seconds
}

type visitorSession struct {
	id       string
	lastSeen time.Time
}

func newVisitorCache(max int) *visitorCache {
	return &visitorCache{max: max, sessions: map[string]visitorSession{}, probes: map[string][]probe{}}
}

func (c *visitorCache) session(key string) (visitorSession, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[key]
	return s, ok
}

func (c *visitorCache) setSession(key string, s visitorSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) >= c.max {
		clear(c.sessions) // crude but bounded: the database still finds open sessions
	}
	c.sessions[key] = s
	delete(c.probes, key)
}

// touch notes that the visitor's hit was journaled at: until it is applied, and its
// session known, the visitor counts as in a session (answerNotFound records its probes).
// Its probes stay, for the session the hit makes.
func (c *visitorCache) touch(key string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[key]
	if ok && !at.After(s.lastSeen) {
		return
	}
	if !ok && len(c.sessions) >= c.max {
		clear(c.sessions)
	}
	c.sessions[key] = visitorSession{id: s.id, lastSeen: at}
}

// probe notes an unknown path a stranger asked for.
func (c *visitorCache) probe(key, path string, at time.Time, limit int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.probes) >= c.max {
		clear(c.probes)
	}
	ps := c.probes[key]
	if len(ps) < limit && !slices.ContainsFunc(ps, func(p probe) bool { return p.path == path }) {
		c.probes[key] = append(ps, probe{path, at.Unix()})
	}
}

// takeProbes hands over a stranger's probes (paths and times) to its new session.
func (c *visitorCache) takeProbes(key string) (paths []string, ats []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.probes[key] {
		paths, ats = append(paths, p.path), append(ats, p.at)
	}
	delete(c.probes, key)
	return paths, ats
}

// RoutesHook reloads the route snapshot when a trap or site change commits here (registered
// for both in server/hooks.go), before the change's request returns; other instances'
// changes arrive by NOTIFY or the snapshot's age.
func (e *Engine) RoutesHook() ent.Hook {
	return event.AfterCommit(ent.OpCreate|ent.OpUpdateOne|ent.OpDeleteOne, func(ctx context.Context, _ ent.Mutation) { e.routes.reloadAfter(ctx) })
}
