package schema

import (
	"context"

	"entgo.io/ent"
	"entgo.io/ent/entql"

	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/viewer"
)

// Every rule below runs for every query and mutation of the types that use it,
// whichever API made the call. Code that acts for the system rather than for a
// caller (the detection engine, the command line, the event outbox) says so with
// privacy.DecisionContext(ctx, privacy.Allow).

// tenantPolicy scopes a tenant-owned type to the viewer's organization: reads
// need readScope, writes need writeScope. A row of another organization is
// filtered out, so it reads as not found rather than forbidden.
func tenantPolicy(readScope, writeScope viewer.Scope) ent.Policy {
	return privacy.Policy{
		Query: privacy.QueryPolicy{
			notSiteScoped(),
			requireScope(readScope),
			filterTenant(),
		},
		Mutation: privacy.MutationPolicy{
			notSiteScoped(),
			requireScope(writeScope),
			tenantCreate(),
			filterTenant(),
		},
	}
}

// systemWritten is the policy of what only the detection engine writes
// (sessions, hits, events): callers may read their organization's rows.
func systemWritten() ent.Policy {
	return privacy.Policy{
		Query: privacy.QueryPolicy{
			notSiteScoped(),
			requireScope(viewer.ReadOnly),
			filterTenant(),
		},
		Mutation: privacy.MutationPolicy{
			privacy.AlwaysDenyRule(),
		},
	}
}

// requireScope denies callers without a viewer or with less than need.
func requireScope(need viewer.Scope) privacy.QueryMutationRule {
	return privacy.ContextQueryMutationRule(func(ctx context.Context) error {
		v, ok := viewer.FromContext(ctx)
		if !ok {
			return privacy.Denyf("no authenticated caller")
		}
		if !v.Scope.Includes(need) {
			return privacy.Denyf("this needs the %s scope", need.Human())
		}
		return privacy.Skip
	})
}

// notSiteScoped denies deploy keys (viewer.SiteScoped): they reach their site's traps and
// that site only (trapPolicy, sitePolicy), nothing else of the organization.
func notSiteScoped() privacy.QueryMutationRule {
	return privacy.ContextQueryMutationRule(func(ctx context.Context) error {
		if v, ok := viewer.FromContext(ctx); ok && v.SiteScoped() {
			return privacy.Denyf("a deploy key (limited to site %s) may only read and write that site's traps", v.SiteID)
		}
		return privacy.Skip
	})
}

// siteFilter narrows a deploy key's reads and writes to its site: of traps by site_id, of
// sites by id.
func siteFilter() privacy.QueryMutationRule {
	return privacy.FilterFunc(func(ctx context.Context, f privacy.Filter) error {
		v, ok := viewer.FromContext(ctx)
		if !ok || !v.SiteScoped() {
			return privacy.Skip
		}
		switch f := f.(type) {
		case interface{ WhereSiteID(entql.StringP) }:
			f.WhereSiteID(entql.StringEQ(v.SiteID))
		case interface{ WhereID(entql.StringP) }:
			f.WhereID(entql.StringEQ(v.SiteID))
		default:
			return privacy.Denyf("%T has no site", f)
		}
		return privacy.Skip
	})
}

// siteCreate puts a trap a deploy key creates on its site, and refuses another site.
func siteCreate() privacy.MutationRule {
	type siteMutation interface {
		SiteID() (string, bool)
		SetSiteID(string)
	}
	return privacy.OnMutationOperation(privacy.MutationRuleFunc(func(ctx context.Context, m ent.Mutation) error {
		v, ok := viewer.FromContext(ctx)
		if !ok || !v.SiteScoped() {
			return privacy.Skip
		}
		sm, ok := m.(siteMutation)
		if !ok {
			return privacy.Denyf("%T has no site", m)
		}
		if id, set := sm.SiteID(); set && id != v.SiteID {
			return privacy.Denyf("a deploy key of site %s cannot create traps on another site", v.SiteID)
		}
		sm.SetSiteID(v.SiteID)
		return privacy.Skip
	}), ent.OpCreate)
}

// trapPolicy is the tenant policy of traps, with deploy keys held to their site's.
func trapPolicy() ent.Policy {
	return privacy.Policy{
		Query: privacy.QueryPolicy{
			requireScope(viewer.ReadOnly),
			siteFilter(),
			filterTenant(),
		},
		Mutation: privacy.MutationPolicy{
			requireScope(viewer.ReadWrite),
			siteCreate(),
			siteFilter(),
			tenantCreate(),
			filterTenant(),
		},
	}
}

// filterTenant adds org_id = viewer's organization to every query, update and delete.
func filterTenant() privacy.QueryMutationRule {
	type orgFilter interface{ WhereOrgID(entql.StringP) }
	return privacy.FilterFunc(func(ctx context.Context, f privacy.Filter) error {
		v, ok := viewer.FromContext(ctx)
		if !ok {
			return privacy.Denyf("no authenticated caller")
		}
		of, ok := f.(orgFilter)
		if !ok {
			return privacy.Denyf("%T has no organization", f)
		}
		of.WhereOrgID(entql.StringEQ(v.OrgID))
		return privacy.Skip
	})
}

// tenantCreate stamps a created row with the viewer's organization, and refuses
// a row stamped with another one.
func tenantCreate() privacy.MutationRule {
	type orgMutation interface {
		OrgID() (string, bool)
		SetOrgID(string)
	}
	return privacy.OnMutationOperation(privacy.MutationRuleFunc(func(ctx context.Context, m ent.Mutation) error {
		v, ok := viewer.FromContext(ctx)
		if !ok {
			return privacy.Denyf("no authenticated caller")
		}
		om, ok := m.(orgMutation)
		if !ok {
			return privacy.Denyf("%T has no organization", m)
		}
		if id, set := om.OrgID(); set && id != v.OrgID {
			return privacy.Denyf("cannot create rows of another organization")
		}
		om.SetOrgID(v.OrgID)
		return privacy.Allow
	}), ent.OpCreate)
}

// organizationPolicy lets a caller see its own organization and an admin rename it.
func organizationPolicy() ent.Policy {
	ownOrg := privacy.FilterFunc(func(ctx context.Context, f privacy.Filter) error {
		v, ok := viewer.FromContext(ctx)
		if !ok {
			return privacy.Denyf("no authenticated caller")
		}
		idf, ok := f.(interface{ WhereID(entql.StringP) })
		if !ok {
			return privacy.Denyf("%T is not an organization", f)
		}
		idf.WhereID(entql.StringEQ(v.OrgID))
		return privacy.Skip
	})
	return privacy.Policy{
		Query: privacy.QueryPolicy{notSiteScoped(), requireScope(viewer.ReadOnly), ownOrg},
		Mutation: privacy.MutationPolicy{
			privacy.DenyMutationOperationRule(ent.OpCreate | ent.OpDelete | ent.OpDeleteOne),
			notSiteScoped(),
			requireScope(viewer.Admin),
			ownOrg,
		},
	}
}

func (Organization) Policy() ent.Policy { return organizationPolicy() }
func (Site) Policy() ent.Policy         { return sitePolicy() }
func (Trap) Policy() ent.Policy         { return trapPolicy() }
func (APIKey) Policy() ent.Policy       { return tenantPolicy(viewer.Admin, viewer.Admin) }
func (Session) Policy() ent.Policy      { return systemWritten() }
func (Hit) Policy() ent.Policy          { return systemWritten() }
func (Event) Policy() ent.Policy        { return systemWritten() }

// sitePolicy is the tenant policy of sites (read: read-only, write: admin), a deploy key
// reading its own site only.
func sitePolicy() ent.Policy {
	return privacy.Policy{
		Query: privacy.QueryPolicy{
			requireScope(viewer.ReadOnly),
			siteFilter(),
			filterTenant(),
		},
		Mutation: privacy.MutationPolicy{
			notSiteScoped(),
			requireScope(viewer.Admin),
			tenantCreate(),
			filterTenant(),
		},
	}
}

// Sequence rows are internal counters: the system alone touches them.
func (Sequence) Policy() ent.Policy { return systemOnly() }

func systemOnly() ent.Policy {
	return privacy.Policy{
		Query:    privacy.QueryPolicy{privacy.AlwaysDenyRule()},
		Mutation: privacy.MutationPolicy{privacy.AlwaysDenyRule()},
	}
}
