package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
)

// Sequence is a named counter. Incrementing its row inside a transaction holds
// the row lock until commit, so values are handed out in commit order: the
// property the event log's cursors rely on.
type Sequence struct{ ent.Schema }

func (Sequence) Fields() []ent.Field {
	return []ent.Field{
		field.String("id").Immutable().NotEmpty(),
		field.Int64("value").Default(0),
	}
}

func (Sequence) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipAll)}
}
