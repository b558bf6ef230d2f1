package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"

	"github.com/flytrap/flytrap/ids"
)

// Organization is a tenant: every other row belongs to one.
type Organization struct{ ent.Schema }

func (Organization) Mixin() []ent.Mixin { return []ent.Mixin{IDMixin{Prefix: ids.Org}} }

func (Organization) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().MaxLen(200).Validate(cleanText),
		createdAt(),
	}
}

func (Organization) Edges() []ent.Edge {
	skip := entgql.Skip(entgql.SkipAll)
	return []ent.Edge{
		edge.To("sites", Site.Type).Annotations(skip),
		edge.To("traps", Trap.Type).Annotations(skip),
		edge.To("sessions", Session.Type).Annotations(skip),
		edge.To("hits", Hit.Type).Annotations(skip),
		edge.To("events", Event.Type).Annotations(skip),
		edge.To("api_keys", APIKey.Type).Annotations(skip),
		edge.To("signals", Signal.Type).Annotations(skip),
		edge.To("prompts", Prompt.Type).Annotations(skip),
	}
}

func (Organization) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.Mutations(entgql.MutationUpdate()),
	}
}
