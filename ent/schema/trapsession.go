package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// TrapSession says that a session hit a trap: one row per (trap, session), inserted by the
// hit writer in the transaction of the session's first hit on the trap (when the trap joins
// the session's traps_triggered), never updated. The sessions list filtered by a trap starts
// from it (graph/trapfilter.go): a trap's sessions are counted and listed from this index
// alone, however many hits they sent. Deleting the session deletes its rows (ON DELETE
// CASCADE), in the same statement, whoever deletes it.
type TrapSession struct{ ent.Schema }

func (TrapSession) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

func (TrapSession) Fields() []ent.Field {
	return []ent.Field{
		field.String("trap_id").MaxLen(40).Immutable(),
		field.String("session_id").Immutable(),
	}
}

func (TrapSession) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("session", Session.Type).Ref("trap_memberships").Field("session_id").Unique().Required().Immutable(),
	}
}

func (TrapSession) Indexes() []ent.Index {
	// session_id: the cascade from sessions (retention) finds a session's rows by it.
	return []ent.Index{index.Fields("trap_id", "session_id").Unique(), index.Fields("session_id")}
}

func (TrapSession) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipAll)}
}

func (TrapSession) Policy() ent.Policy { return systemWritten() }
