package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// Campaigns are maintained aggregates of the captured prompts, so the campaigns page costs
// the same at any number of prompts and sessions (docs/counters.md, "Campaigns"). The tally
// package writes them when a transaction that created prompts commits (the record package
// notes each prompt it writes), as atomic upserts in a fixed order; only it writes them,
// callers read their organization's rows.

// Campaign is one (prompt hash, operator, model) of an organization, with its all-time counts.
type Campaign struct{ ent.Schema }

func (Campaign) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

func (Campaign) Fields() []ent.Field {
	return []ent.Field{
		// ID is derived from the organization and the key (tally.CampaignID), so concurrent
		// writers name the same row without reading it first.
		field.String("id").Immutable().NotEmpty().MaxLen(40),
		field.String("prompt_hash").MaxLen(64).Immutable(),
		field.String("operator").Default("").MaxLen(200).Immutable(),
		field.String("model").Default("").MaxLen(100).Immutable(),
		// Distinct sessions that ever leaked it, and its captured prompts: all-time, like the
		// hourly hit buckets (a purged prompt or session still counts).
		field.Int64("session_count").Default(0),
		field.Int64("prompt_count").Default(0),
		// Its first and last prompts by id (ids sort by time), and when they were captured.
		field.String("first_prompt_id").MaxLen(40),
		field.String("last_prompt_id").MaxLen(40),
		field.Time("first_seen"),
		field.Time("last_seen"),
	}
}

func (Campaign) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("org_id", "prompt_hash", "operator", "model").Unique(),
		// The list, most recently active first, and its cursor.
		index.Fields("org_id", "last_prompt_id"),
	}
}

func (Campaign) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipAll)}
}

func (Campaign) Policy() ent.Policy { return systemWritten() }

// CampaignSession is a stored session's membership of a campaign. Deleting the session
// deletes it (ON DELETE CASCADE), in the same statement, whoever deletes the session.
type CampaignSession struct{ ent.Schema }

func (CampaignSession) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

func (CampaignSession) Fields() []ent.Field {
	return []ent.Field{
		// No foreign key: the membership is written before its campaign's row (tally.applyCampaigns).
		field.String("campaign_id").MaxLen(40).Immutable(),
		field.String("session_id").Immutable(),
		// The session's source address, copied so a campaign's addresses are read from its members alone.
		field.String("source_ip").MaxLen(64).Immutable(),
		field.Int64("prompts").Default(0),
		// The session's latest prompt of the campaign: its sessions list is newest-leak first.
		field.String("last_prompt_id").MaxLen(40),
	}
}

func (CampaignSession) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("session", Session.Type).Ref("campaign_memberships").Field("session_id").Unique().Required().Immutable(),
	}
}

func (CampaignSession) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("campaign_id", "session_id").Unique(),
		index.Fields("campaign_id", "last_prompt_id"),
		index.Fields("campaign_id", "source_ip"),
		// The cascade from sessions (retention) finds a session's memberships by it.
		index.Fields("session_id"),
	}
}

func (CampaignSession) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipAll)}
}

func (CampaignSession) Policy() ent.Policy { return systemWritten() }
