package trap

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync"
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
	traps map[string]*ent.Trap // active traps by path
	lures []decoy.LureTarget   // where the lure proxy's lures may point, by path
	known []string             // their paths: an unknown path near one is a typo
}

// siteCache keeps routes fresh: trap and site changes on this instance invalidate
// it at commit; changes on other instances are picked up within maxAge.
type siteCache struct {
	client *ent.Client
	maxAge time.Duration

	mu      sync.Mutex
	current *routes
	loaded  time.Time
	stale   bool
}

func (c *siteCache) invalidate() {
	c.mu.Lock()
	c.stale = true
	c.mu.Unlock()
}

func (c *siteCache) get(ctx context.Context, now time.Time) (*routes, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current != nil && !c.stale && now.Sub(c.loaded) < c.maxAge {
		return c.current, nil
	}
	r, err := c.load(ctx)
	if err != nil {
		if c.current != nil {
			return c.current, nil // serve the last known routes while the database is away
		}
		return nil, err
	}
	c.current, c.loaded, c.stale = r, now, false
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
		sr := &siteRoutes{site: s, traps: map[string]*ent.Trap{}}
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
		if sr := bySite[t.SiteID]; sr != nil {
			sr.traps[t.Path] = t
			sr.known = append(sr.known, t.Path)
		}
	}
	for _, sr := range bySite {
		sr.lures = lureTargets(sr.traps)
	}
	switch {
	case len(sites) == 1:
		r.fallback = bySite[sites[0].ID]
	case len(hostless) == 1:
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
		if p != except && decoy.MustKind(string(t.Type)).Listed {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
