package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// TrapSession says that a session hit a trap: one row per (trap, session), inserted by the
// hit writer in the transaction of the session's first hit on the trap (when the trap joins
// the session's traps_triggered), never updated. The sessions list filtered by a trap starts
// from it (graph/trapfilter.go): a trap's sessions are counted and listed from this index
// alone, however many hits they sent. Retention deletes a session's rows with the session.
type TrapSession struct{ ent.Schema }

func (TrapSession) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

func (TrapSession) Fields() []ent.Field {
	return []ent.Field{
		field.String("trap_id").MaxLen(40).Immutable(),
		field.String("session_id").MaxLen(40).Immutable(),
	}
}

func (TrapSession) Indexes() []ent.Index {
	// session_id: retention deletes a session's rows with it.
	return []ent.Index{index.Fields("trap_id", "session_id").Unique(), index.Fields("session_id")}
}

func (TrapSession) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipAll)}
}

func (TrapSession) Policy() ent.Policy { return systemWritten() }
