package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/flytrap/flytrap/ent/schematype"
	"github.com/flytrap/flytrap/ids"
)

// Session is one visitor's run of hits, as the detection engine groups and classifies it.
type Session struct{ ent.Schema }

func (Session) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: ids.Session}, TenantMixin{}}
}

func (Session) Fields() []ent.Field {
	ro := entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)
	return []ent.Field{
		field.String("site_id").Optional().Annotations(ro),
		field.String("source_ip").MaxLen(64).Annotations(ro),
		field.String("user_agent").Default("").MaxLen(1024).Annotations(ro, bytesCost(1024)),
		field.Enum("classification").
			Values(classifications...).
			Default("HUMAN").Annotations(entgql.Type("Classification")),
		field.Int("score").Default(0).Min(0).Max(100).Annotations(entgql.OrderField("SCORE")),
		field.Int("confidence").Default(0).Min(0).Max(100),
		field.Enum("severity").Values("critical", "high", "medium", "low").Default("low").
			Annotations(entgql.Type("Severity")),
		field.Strings("signals_fired").Default([]string{}).Annotations(ro),
		field.Time("first_seen").Default(nowUTC).Immutable().Annotations(entgql.OrderField("FIRST_SEEN")),
		field.Time("last_seen").Default(nowUTC).Annotations(entgql.OrderField("LAST_SEEN")),
		field.Int("hit_count").Default(0).Min(0).Annotations(entgql.OrderField("HIT_COUNT")),
		field.Int("tripwires_fired").Default(0).Min(0),
		field.Int("prompts_captured").Default(0).Min(0),
		field.String("extracted_model").Default("").MaxLen(100),
		field.String("extracted_operator").Default("").MaxLen(200),
		field.Strings("traps_triggered").Default([]string{}).Annotations(ro),
		// Triage: what a person or a pipeline made of the session (open until someone
		// says otherwise), who said it (an API key's id and name, or a JWT's subject) and when.
		// Written by app.TriageSessions only; the detection engine never touches them.
		field.Enum("triage_state").Values("open", "acknowledged", "resolved", "ignored").Default("open").
			Annotations(ro, entgql.Type("TriageState")),
		field.String("triaged_by").Default("").MaxLen(300).Annotations(ro, entgql.Skip(entgql.SkipWhereInput)),
		field.String("triaged_by_name").Default("").MaxLen(300).Annotations(ro, entgql.Skip(entgql.SkipWhereInput)),
		field.Time("triaged_at").Optional().Nillable().Annotations(ro),
		field.JSON("state", schematype.SessionState{}).Optional().
			Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

func (Session) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("organization", Organization.Type).Ref("sessions").Field("org_id").
			Unique().Required().Immutable().Annotations(entgql.Skip(entgql.SkipAll)),
		edge.To("hits", Hit.Type).Annotations(entgql.RelayConnection(), entgql.Directives(pageLimits)),
		edge.To("signals", Signal.Type),
		edge.To("prompts", Prompt.Type),
		// Its campaigns (kept by the record package); deleting the session deletes them.
		edge.To("campaign_memberships", CampaignSession.Type).
			Annotations(entsql.OnDelete(entsql.Cascade), entgql.Skip(entgql.SkipAll)),
		// The traps it hit (trap_sessions, the trap filter's); deleting the session deletes them.
		edge.To("trap_memberships", TrapSession.Type).
			Annotations(entsql.OnDelete(entsql.Cascade), entgql.Skip(entgql.SkipAll)),
		// The JA4s its hits came with (ja4_campaign_sessions); deleting the session deletes them.
		edge.To("ja4_memberships", Ja4CampaignSession.Type).
			Annotations(entsql.OnDelete(entsql.Cascade), entgql.Skip(entgql.SkipAll)),
	}
}

func (Session) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("org_id", "last_seen"),
		index.Fields("org_id", "classification", "last_seen"),
		index.Fields("org_id", "severity", "last_seen"),
		index.Fields("org_id", "source_ip", "user_agent", "last_seen"),
		// The gate's question, "an unresolved session at severity ≥ X seen since T?": one
		// range of last_seen per severity and state (app.Gate).
		index.Fields("org_id", "severity", "triage_state", "last_seen"),
	}
}

func (Session) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.QueryField().Directives(pageLimits),
		entgql.RelayConnection(),
	}
}
