package trap

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/trap"
)

// routes is a snapshot of every site and active trap, so a request is routed
// without a database query.
type routes struct {
	byHost   map[string]*siteRoutes // verified hosts only: a tenant's claim alone routes nothing
	fallback *siteRoutes            // the only site, or the only site without a host
	trapByID map[string]*ent.Trap   // every active trap: the one a snippet token names
}

type siteRoutes struct {
	site  *ent.Site
	traps map[string]*trapRoute // active traps by path, each with its kind
	lures []decoy.LureTarget    // where the lure proxy's lures may point, by path
	known []string              // their paths: an unknown path near one is a typo
}

// siteCache keeps routes fresh without ever making a visitor wait on the database: a
// request reads the current snapshot, and a stale one (older than maxAge, or invalidated)
// is reloaded in the background, one load at a time, each bounded by timeout, while the
// last good snapshot keeps serving. Only the very first request of an engine whose start
// could not load them waits for the routes. A change committed on this instance reloads
// them before its request returns (reloadAfter), so the caller sees its own trap at once.
type siteCache struct {
	client  *ent.Client
	maxAge  time.Duration
	timeout time.Duration
	log     *slog.Logger

	cur     atomic.Pointer[snapshot]
	wanted  atomic.Uint64 // generation asked for: invalidations bump it
	loading atomic.Bool   // a background reload is running
	mu      sync.Mutex    // one load at a time
	failed  time.Time     // when a failed reload was last logged (under mu)
}

// trapRoute is an active trap and its kind, resolved once when the routes load: the
// listener asks the kind, never its name.
type trapRoute struct {
	*ent.Trap
	kind *decoy.Kind
}

// snapshot is a set of routes and the generation and time they were loaded at.
type snapshot struct {
	r   *routes
	gen uint64
	at  time.Time
}

// invalidate marks the routes stale (another instance changed them) and reloads them in
// the background.
func (c *siteCache) invalidate() {
	c.wanted.Add(1)
	c.refresh()
}

// reloadAfter is invalidate for a change committed on this instance: it reloads the routes
// before returning (within timeout), so the request that made the change sees its effect.
// A reload that began after the change covers it: concurrent changes share loads.
func (c *siteCache) reloadAfter(ctx context.Context) {
	c.reload(ctx, c.wanted.Add(1))
}

func (c *siteCache) get(ctx context.Context) (*routes, error) {
	s := c.cur.Load()
	if s == nil {
		return c.reload(ctx, c.wanted.Load())
	}
	if s.gen != c.wanted.Load() || time.Since(s.at) >= c.maxAge { // wall time, whatever the engine's clock
		c.refresh()
	}
	return s.r, nil
}

// refresh starts a background reload unless one is running.
func (c *siteCache) refresh() {
	if !c.loading.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer c.loading.Store(false)
		c.reload(context.Background(), c.wanted.Load())
	}()
}

// reload loads the routes unless a snapshot of generation gen or later exists, and returns
// the newest snapshot's routes; on failure the last good ones (nil and the error if none).
func (c *siteCache) reload(ctx context.Context, gen uint64) (*routes, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.cur.Load(); s != nil && s.gen >= gen && time.Since(s.at) < c.maxAge {
		return s.r, nil
	}
	gen = c.wanted.Load() // what this load will cover
	at := time.Now()
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	r, err := c.load(lctx)
	if err != nil {
		if at.Sub(c.failed) >= time.Minute {
			c.failed = at
			c.log.Warn("reloading trap routes failed; serving the last ones loaded", "err", err, "timeout_ms", c.timeout.Milliseconds())
		}
		if s := c.cur.Load(); s != nil {
			return s.r, nil
		}
		return nil, err
	}
	c.cur.Store(&snapshot{r: r, gen: gen, at: at})
	return r, nil
}

func (c *siteCache) load(ctx context.Context) (*routes, error) {
	sys := privacy.DecisionContext(ctx, privacy.Allow)
	sites, err := c.client.Site.Query().Order(ent.Asc("created_at"), ent.Asc("id")).All(sys)
	if err != nil {
		return nil, err
	}
	traps, err := c.client.Trap.Query().Where(trap.Active(true)).All(sys)
	if err != nil {
		return nil, err
	}
	r := &routes{byHost: map[string]*siteRoutes{}, trapByID: make(map[string]*ent.Trap, len(traps))}
	bySite := map[string]*siteRoutes{}
	var hostless []*siteRoutes
	for _, s := range sites {
		sr := &siteRoutes{site: s, traps: map[string]*trapRoute{}}
		bySite[s.ID] = sr
		switch {
		case s.Host != nil && s.HostVerified:
			r.byHost[*s.Host] = sr // one verified site per host (a unique index)
		case s.Host != nil:
			// Claimed by a tenant, not yet checked by the operator: routes nothing, so no
			// organization takes another's traffic by naming its host first.
		default:
			hostless = append(hostless, sr)
		}
	}
	for _, t := range traps {
		r.trapByID[t.ID] = t
		kind, ok := decoy.KindOf(string(t.Type))
		if !ok { // the type's enum is made from the kinds: only a newer version's row
			c.log.Error("a trap of an unknown kind serves nothing", "trap", t.ID, "type", t.Type)
			continue
		}
		if sr := bySite[t.SiteID]; sr != nil {
			sr.traps[t.Path] = &trapRoute{Trap: t, kind: kind}
			sr.known = append(sr.known, t.Path)
		}
	}
	for _, sr := range bySite {
		host := ""
		if sr.site.Host != nil {
			host = *sr.site.Host
		}
		sr.lures = lureTargets(sr.traps, host)
	}
	// A request whose Host names no verified site goes to the instance's default site: the
	// only site, else the oldest without a host (the first start's). Sites are read oldest
	// first, so a host-less site made later (another organization's, flytrap orgs create)
	// never takes the default's visitors; it routes once its host is verified.
	switch {
	case len(sites) == 1:
		r.fallback = bySite[sites[0].ID]
	case len(hostless) > 0:
		r.fallback = hostless[0]
	}
	return r, nil
}

// paths are the paths of the site's active traps (shared: never change it).
func (sr *siteRoutes) paths() []string { return sr.known }

// site finds the site a Host header names.
func (r *routes) site(host string) *siteRoutes {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if sr, ok := r.byHost[host]; ok {
		return sr
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		if sr, ok := r.byHost[h]; ok {
			return sr
		}
	}
	return r.fallback
}

// disallow lists the paths of a site's active traps, sorted, for its robots.txt decoy:
// an order that changed per request (a map's) would tell a crawler the file is generated.
func (sr *siteRoutes) disallow(except string) []string {
	var out []string
	for p, t := range sr.traps {
		if p != except && t.kind.Listed {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// VerifiedHost reports whether host (a TLS server name) is the verified host of a site,
// the only names the trap listener obtains certificates for (traptls, --trap-tls auto):
// never the fallback site's "any host", never an unverified claim.
func (e *Engine) VerifiedHost(ctx context.Context, host string) bool {
	if len(host) > 253 {
		return false
	}
	rt, err := e.routes.get(ctx)
	if err != nil {
		return false
	}
	_, ok := rt.byHost[strings.ToLower(strings.TrimSuffix(host, "."))]
	return ok
}
