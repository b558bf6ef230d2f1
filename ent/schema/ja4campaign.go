package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// JA4 campaigns group an organization's sessions by the TLS client that sent their hits (its
// JA4, fingerprint package): one stack behind many addresses and user agents is one operator's
// tooling. Like the prompt campaigns (campaign.go) they are maintained aggregates, so the list
// costs the same at any number of hits: the tally package writes them when a transaction that
// stored hits with a JA4 commits (the record package notes each such hit), as atomic upserts in
// a fixed order; only it writes them, callers read their organization's rows.

// Ja4Campaign is one (organization, JA4), with its all-time counts.
type Ja4Campaign struct{ ent.Schema }

func (Ja4Campaign) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

func (Ja4Campaign) Fields() []ent.Field {
	return []ent.Field{
		// ID is derived from the organization and the JA4 (tally.Ja4CampaignID), so concurrent
		// writers name the same row without reading it first.
		field.String("id").Immutable().NotEmpty().MaxLen(40),
		field.String("ja4").MaxLen(40).Immutable(),
		// Distinct sessions that sent a hit with it, and its hits: all-time, like the hourly hit
		// buckets (a purged hit or session still counts).
		field.Int64("session_count").Default(0),
		field.Int64("hit_count").Default(0),
		// Its first and last hits by id (ids sort by time), and when they were received.
		field.String("first_hit_id").MaxLen(40),
		field.String("last_hit_id").MaxLen(40),
		field.Time("first_seen"),
		field.Time("last_seen"),
	}
}

func (Ja4Campaign) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("org_id", "ja4").Unique(),
		// The list, most recently active first, and its cursor.
		index.Fields("org_id", "last_hit_id"),
	}
}

func (Ja4Campaign) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Table("ja4_campaigns"), entgql.Skip(entgql.SkipAll)}
}

func (Ja4Campaign) Policy() ent.Policy { return systemWritten() }

// Ja4CampaignSession is a stored session's membership of a JA4 campaign: the session sent a hit
// with that JA4. It is inserted with the session's first such hit and never updated (a returning
// visitor's hits cost the campaign's row alone, not a membership row each). The sessions list
// filtered by a JA4 starts from it (app/trapfilter.go), as the one filtered by a trap starts
// from trap_sessions. Deleting the session deletes it (ON DELETE CASCADE), in the same
// statement, whoever deletes the session.
type Ja4CampaignSession struct{ ent.Schema }

func (Ja4CampaignSession) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

func (Ja4CampaignSession) Fields() []ent.Field {
	return []ent.Field{
		// No foreign key: the membership is written before its campaign's row (tally.applyCampaigns).
		field.String("campaign_id").MaxLen(40).Immutable(),
		field.String("session_id").Immutable(),
		// The session's source address, copied so a campaign's addresses are read from its members alone.
		field.String("source_ip").MaxLen(64).Immutable(),
		// The session's first hit with the JA4: the campaign's sessions list is newest member first.
		field.String("first_hit_id").MaxLen(40).Immutable(),
	}
}

func (Ja4CampaignSession) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("session", Session.Type).Ref("ja4_memberships").Field("session_id").Unique().Required().Immutable(),
	}
}

func (Ja4CampaignSession) Indexes() []ent.Index {
	return []ent.Index{
		// Session first: the cascade from sessions (retention) finds a session's memberships by
		// it, and the walk of the sessions list probes (session, campaign); one index fewer for
		// the writer to fill than a (campaign_id, session_id) and a session_id index.
		index.Fields("session_id", "campaign_id").Unique(),
		index.Fields("campaign_id", "first_hit_id"),
		index.Fields("campaign_id", "source_ip"),
	}
}

func (Ja4CampaignSession) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Table("ja4_campaign_sessions"), entgql.Skip(entgql.SkipAll)}
}

func (Ja4CampaignSession) Policy() ent.Policy { return systemWritten() }
