package trap

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/schematype"
)

// Route is what the trap listener makes of a request when it stands in front of the
// customer's application (flytrap serve --upstream, package proxy).
type Route struct {
	// Own says the listener answers it (ServeHTTP): a trap's path, a URL or credential
	// carrying one of our tokens, or a moment the routes cannot be read. Everything
	// else goes to the application and is never recorded.
	Own bool
	// Robots: the site's robots trap answers /robots.txt, to be merged with the
	// application's; Disallow are the site's trap paths it lists.
	Robots   bool
	Disallow []string
	// Site is the site the Host header names ("" for none: proxied, no lures).
	Site string
	// Lures is the site's configuration and the traps a lure may point at (none: no lures).
	Lures   schematype.LureConfig
	Targets []decoy.LureTarget
}

// tokenHeaders are the request headers a planted credential (or the planted session
// secret, as a cookie) comes back in, read to route a request to the listener; a body
// is never read before proxying.
var tokenHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "Cookie"}

// Route decides who answers r. It reads no body and queries no database (the routes
// are a snapshot), so it costs a proxied request little.
func (e *Engine) Route(r *http.Request) Route {
	rt, err := e.routes.get(r.Context())
	if err != nil {
		return Route{Own: true} // ServeHTTP answers 503: never proxy what may be a trap
	}
	sr := rt.site(r.Host)
	if sr == nil {
		return Route{}
	}
	if t := sr.traps[r.URL.Path]; t != nil {
		out := Route{Own: true, Site: sr.site.ID}
		if t.kind.Disallows() {
			out.Robots, out.Disallow = true, sr.disallow(t.Path)
		}
		return out
	}
	if e.carriesToken(r) {
		return Route{Own: true, Site: sr.site.ID}
	}
	out := Route{Site: sr.site.ID, Targets: sr.lures, Lures: schematype.DefaultLures}
	if sr.site.Lures != nil {
		out.Lures = *sr.site.Lures
	}
	return out
}

// carriesToken reports whether r's path, query or credential headers hold a token of ours.
func (e *Engine) carriesToken(r *http.Request) bool {
	if len(r.URL.Path)+len(r.URL.RawQuery) >= decoy.MinTokenLen {
		if len(decoy.FindTokens(e.key, r.URL.Path+"?"+r.URL.RawQuery)) > 0 {
			return true
		}
	}
	for _, h := range tokenHeaders {
		for _, v := range r.Header.Values(h) {
			if len(v) >= decoy.MinTokenLen && len(decoy.FindTokens(e.key, v)) > 0 {
				return true
			}
		}
	}
	return false
}

// Lure renders the lures of one proxied page (decoy.Lure), remembering the page: a lure
// followed later is shown with the page of the site that carried it (lureCarrier).
func (e *Engine) Lure(spec decoy.LureSpec, now time.Time) ([]byte, []decoy.Placement) {
	b, places := decoy.Lure(e.key, spec, now)
	if len(places) > 0 && spec.Page != "" {
		e.lurePages.Add(lurePageKey{spec.SiteID, decoy.LurePageTagOf(e.key, spec.SiteID, spec.Page)}, bound(spec.Page, maxCarrier))
	}
	return b, places
}

// lurePageKey finds a page that carried lures: its site and the tag its lure tokens bear.
type lurePageKey struct {
	site string
	tag  [4]byte
}

// maxCarrier bounds a remembered page's path.
const maxCarrier = 512

// lurePagesSize is how many pages that carried lures an engine remembers (a path each).
const lurePagesSize = 8192

// lureCarrier is the page of site that carried lure token ref: the one this engine
// remembers serving it in, else the follow-up's Referer (when on the same host), each
// confirmed against the token's page tag; "" when neither tells (the page was served
// before a restart or by another instance, and no Referer names it).
func (e *Engine) lureCarrier(rec *hitRecord, ref decoy.TokenRef) string {
	if p, ok := e.lurePages.Get(lurePageKey{rec.Site, decoy.LurePageTag(ref)}); ok && decoy.LurePage(e.key, ref, rec.Site, p) {
		return p
	}
	for _, v := range rec.Headers["Referer"] {
		u, err := url.Parse(v)
		if err != nil || u.Path == "" || (u.Host != "" && !strings.EqualFold(u.Host, rec.Host)) {
			continue
		}
		if p := bound(u.Path, maxCarrier); decoy.LurePage(e.key, ref, rec.Site, p) {
			return p
		}
	}
	return ""
}

// lureTargets are the traps a lure links to, by path: those whose kind is a page an agent
// reads (robots.txt is not a lure's destination; an mcp trap answers a GET with its description).
// A lure's text is its target's public title, never the trap's name.
func lureTargets(traps map[string]*trapRoute, host string) []decoy.LureTarget {
	var out []decoy.LureTarget
	for p, t := range traps {
		if t.kind.LureTarget() {
			out = append(out, decoy.LureTarget{Path: p, Title: PublicTitle(t.Trap, host)})
		}
	}
	slices.SortFunc(out, func(a, b decoy.LureTarget) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// checkRefs keeps the tokens that count on site sr: decoy tokens (their stored hit's
// organization is checked when it is loaded), lure tokens minted for this site, and
// snippet tokens of an active trap of the site's organization. A snippet token's trap
// is returned: the hit is attributed to it.
func (e *Engine) checkRefs(refs []decoy.TokenRef, rt *routes, sr *siteRoutes) ([]decoy.TokenRef, *ent.Trap) {
	var snippet *ent.Trap
	out := refs[:0]
	for _, ref := range refs {
		switch ref.Origin {
		case decoy.OriginLure:
			if _, ok := decoy.LureServed(e.key, ref, sr.site.ID); !ok {
				continue
			}
		case decoy.OriginSnippet:
			t := rt.trapByID[ref.TrapID]
			if t == nil || t.OrgID != sr.site.OrgID {
				continue // deactivated, deleted or another organization's: revoked
			}
			if snippet == nil {
				snippet = t
			}
		}
		out = append(out, ref)
	}
	return out, snippet
}

// tokenSource is what a token that came back points to: the stored hit that served it
// (a decoy's), or for a lure the time its page was served. A snippet has neither: no
// follow-up timing.
func (e *Engine) tokenSource(rec *hitRecord, ref decoy.TokenRef, sources map[string]sourceHit) (tokenOrigin, bool) {
	switch ref.Origin {
	case decoy.OriginLure:
		at, ok := decoy.LureServed(e.key, ref, rec.Site)
		return tokenOrigin{at: at, placement: decoy.LurePlacement(ref.Purpose), lure: true, carrier: e.lureCarrier(rec, ref)}, ok
	case decoy.OriginSnippet:
		return tokenOrigin{placement: decoy.SnippetPlacement, lure: true}, true
	}
	src, ok := sources[ref.HitID]
	if !ok || src.org != rec.Org {
		return tokenOrigin{}, false // a token of another organization, or of a hit not stored: ignore it
	}
	return tokenOrigin{hit: ref.HitID, at: src.receivedAt, placement: ref.Purpose.String(), visible: src.visible}, true
}

type tokenOrigin struct {
	hit       string
	at        time.Time // zero: no follow-up timing
	placement string
	visible   bool   // the serving page showed it to people (llms.txt, robots.txt): opening it is no callback
	lure      bool   // it came from a lure or snippet in the customer's own pages
	carrier   string // a lure's: the page of the site that carried it, "" when not known
}
