package schema

import (
	"context"
	"strings"

	"entgo.io/ent"

	"github.com/flytrap/flytrap/apperr"
	gen "github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hook"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/site"
	"github.com/flytrap/flytrap/ent/trap"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/viewer"
)

func (Trap) Hooks() []ent.Hook {
	return []ent.Hook{
		hook.On(trapDefaults, ent.OpCreate),
		hook.Reject(ent.OpUpdate | ent.OpDelete), // one trap at a time, so each change has its event
	}
}

// trapDefaults puts a new trap on the organization's first site and checks its path (the resolver
// picks one for its kind when none is given).
func trapDefaults(next ent.Mutator) ent.Mutator {
	return hook.TrapFunc(func(ctx context.Context, m *gen.TrapMutation) (ent.Value, error) {
		org, _ := m.OrgID()
		sys := privacy.DecisionContext(ctx, privacy.Allow)
		if id, ok := m.SiteID(); ok {
			if ids.Prefix(id) != ids.Site {
				return nil, apperr.Invalid("siteID", "%q is not a site id (site_…)", clip(strings.ToValidUTF8(id, "?"), maxEcho))
			}
			n, err := m.Client().Site.Query().Where(site.ID(id), site.OrgID(org)).Count(sys)
			if err != nil {
				return nil, err
			}
			if n == 0 {
				return nil, apperr.Invalid("siteID", "no such site")
			}
		} else {
			s, err := m.Client().Site.Query().Where(site.OrgID(org)).Order(site.ByCreatedAt(), site.ByID()).First(sys)
			if gen.IsNotFound(err) {
				return nil, apperr.Invalid("siteID", "the organization has no site to put the trap on")
			}
			if err != nil {
				return nil, err
			}
			m.SetSiteID(s.ID)
		}
		p, _ := m.Path()
		if !ValidPath(p) {
			return nil, apperr.Invalid("path", "must start with / and contain no spaces, control characters, ? or #")
		}
		// One active trap a path per site: the unique index says so too, without naming the
		// trap in the way; this names it (REST's conflict_id), for a client to adopt or report.
		if active, set := m.Active(); !set || active {
			site, _ := m.SiteID()
			holder, err := m.Client().Trap.Query().Where(trap.SiteID(site), trap.Path(p), trap.Active(true)).FirstID(sys)
			if err == nil {
				return nil, &apperr.Error{Kind: apperr.KindConflict, Field: "path", ConflictID: holder,
					Msg: "the active trap " + holder + " already has this path on this site"}
			}
			if !gen.IsNotFound(err) {
				return nil, err
			}
		}
		return next.Mutate(ctx, m)
	})
}

// ValidPath says whether p may be a trap's path (the API's rule, which flytrap validate
// applies to a trap file too).
func ValidPath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "//") {
		return false
	}
	for _, r := range p {
		if r <= ' ' || r == 0x7f || r == '?' || r == '#' || r == '\\' {
			return false
		}
	}
	return true
}

func (Site) Hooks() []ent.Hook {
	return []ent.Hook{
		hook.On(siteDeleteGuard, ent.OpDeleteOne), hook.Reject(ent.OpDelete),
		hook.On(siteHostVerification, ent.OpCreate|ent.OpUpdateOne|ent.OpUpdate),
	}
}

// siteHostVerification keeps verification the operator's: a tenant never sets it, and a
// host that changes loses it, so a verified name cannot be swapped for an unchecked one.
func siteHostVerification(next ent.Mutator) ent.Mutator {
	return hook.SiteFunc(func(ctx context.Context, m *gen.SiteMutation) (ent.Value, error) {
		_, tenant := viewer.FromContext(ctx)
		if v, set := m.HostVerified(); set && v && tenant {
			return nil, privacy.Denyf("only the operator verifies a site's host")
		}
		if _, set := m.HostVerified(); set {
			return next.Mutate(ctx, m)
		}
		newHost, hostSet := m.Host()
		switch {
		case m.HostCleared():
			m.SetHostVerified(false)
		case hostSet && m.Op().Is(ent.OpUpdateOne):
			if old, err := m.OldHost(ctx); err != nil || old == nil || *old != newHost {
				m.SetHostVerified(false)
			}
		case hostSet:
			m.SetHostVerified(false)
		}
		return next.Mutate(ctx, m)
	})
}

func (Organization) Hooks() []ent.Hook {
	return []ent.Hook{hook.On(operatorFields, ent.OpUpdate|ent.OpUpdateOne)}
}

// operatorFields refuses a tenant's change to the fields the operator sets through the CLI,
// whatever API a future change might expose them on.
func operatorFields(next ent.Mutator) ent.Mutator {
	return hook.OrganizationFunc(func(ctx context.Context, m *gen.OrganizationMutation) (ent.Value, error) {
		if _, tenant := viewer.FromContext(ctx); tenant {
			for _, f := range append(m.Fields(), appended(m)...) {
				if strings.HasPrefix(f, "webhook_") {
					return nil, privacy.Denyf("only the operator sets an organization's webhook network")
				}
			}
		}
		return next.Mutate(ctx, m)
	})
}

// siteDeleteGuard keeps traps from losing their site, and an organization from losing its last one.
func siteDeleteGuard(next ent.Mutator) ent.Mutator {
	return hook.SiteFunc(func(ctx context.Context, m *gen.SiteMutation) (ent.Value, error) {
		id, _ := m.ID()
		s, err := m.Client().Site.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		sys := privacy.DecisionContext(ctx, privacy.Allow)
		traps, err := m.Client().Trap.Query().Where(trap.SiteID(id)).Count(sys)
		if err != nil {
			return nil, err
		}
		if traps > 0 {
			return nil, apperr.Conflict("site %s still has %d trap(s); delete or move them first", id, traps)
		}
		sites, err := m.Client().Site.Query().Where(site.OrgID(s.OrgID)).Count(sys)
		if err != nil {
			return nil, err
		}
		if sites <= 1 {
			return nil, apperr.Conflict("an organization keeps at least one site")
		}
		return next.Mutate(ctx, m)
	})
}

func appended(m *gen.OrganizationMutation) []string {
	if _, ok := m.AppendedWebhookAllowCidrs(); ok {
		return []string{"webhook_allow_cidrs"}
	}
	return nil
}

func (APIKey) Hooks() []ent.Hook {
	return []ent.Hook{hook.On(keyScopeCeiling, ent.OpCreate)}
}

// keyScopeCeiling keeps a caller from minting a key with more scope than its own.
func keyScopeCeiling(next ent.Mutator) ent.Mutator {
	return hook.APIKeyFunc(func(ctx context.Context, m *gen.APIKeyMutation) (ent.Value, error) {
		if v, ok := viewer.FromContext(ctx); ok {
			if s, _ := m.Scope(); !v.Scope.Includes(s) {
				return nil, privacy.Denyf("a %s caller cannot create a %s key", v.Scope.Human(), s.Human())
			}
		}
		return next.Mutate(ctx, m)
	})
}

// A hit's hour is derived from its time. The counters of hits, sessions and prompts are
// kept by the one package that writes them (record), as explicit deltas: no hook here.
func (Hit) Hooks() []ent.Hook {
	return []ent.Hook{hook.On(hitHour, ent.OpCreate)}
}

// hitHour buckets a hit by the hour it was received in, for the timeline.
func hitHour(next ent.Mutator) ent.Mutator {
	return hook.HitFunc(func(ctx context.Context, m *gen.HitMutation) (ent.Value, error) {
		if at, ok := m.ReceivedAt(); ok {
			m.SetReceivedHour(at.Unix() / 3600)
		}
		return next.Mutate(ctx, m)
	})
}
