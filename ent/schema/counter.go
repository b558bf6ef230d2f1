package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// The figures the dashboard and the API serve (overview, severity, timeline, per-trap charts,
// totalCount) are read from maintained counters rather than counted over raw rows, so they cost
// the same at a thousand sessions and at a million (docs/counters.md). The counter package
// keeps them: every change is an atomic upsert (value = value + delta) made in the transaction
// of the change, at its commit. Only it writes them; callers read their organization's rows.

// HitHour counts one organization's hits in one hour: all of them (trap_id ""), and per trap.
// Deleting hits (retention) leaves it as it is: a purged hit still counts in its hour. The
// buckets themselves go after --retain-hit-hours (400 days by default).
type HitHour struct{ ent.Schema }

func (HitHour) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

func (HitHour) Fields() []ent.Field {
	return []ent.Field{
		// TrapID is "" for the organization's count of every hit of the hour.
		field.String("trap_id").Default("").MaxLen(40).Immutable(),
		// Hour is the Unix hour (seconds / 3600), as hits.received_hour.
		field.Int64("hour").Immutable(),
		field.Int64("hits").Default(0),
	}
}

func (HitHour) Indexes() []ent.Index {
	// hour: retention deletes the buckets past --retain-hit-hours along it.
	return []ent.Index{index.Fields("org_id", "trap_id", "hour").Unique(), index.Fields("hour")}
}

func (HitHour) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipAll)}
}

func (HitHour) Policy() ent.Policy { return systemWritten() }

// Counter is one of an organization's running figures about its stored sessions, by name:
// "sessions/<severity>/<CLASSIFICATION>", "tripwires", "prompts" (counter.SessionsName…).
type Counter struct{ ent.Schema }

func (Counter) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

func (Counter) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").MaxLen(64).Immutable(),
		field.Int64("value").Default(0),
	}
}

func (Counter) Indexes() []ent.Index {
	return []ent.Index{index.Fields("org_id", "name").Unique()}
}

func (Counter) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipAll)}
}

func (Counter) Policy() ent.Policy { return systemWritten() }
