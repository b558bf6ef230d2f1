package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/flytrap/flytrap/ids"
)

// Site is one of an organization's web properties: the hostname its traps answer on.
type Site struct{ ent.Schema }

func (Site) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: ids.Site}, TenantMixin{}}
}

func (Site) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().MaxLen(200).Validate(cleanText).
			Annotations(entgql.OrderField("NAME")),
		// Host routes trap-listener requests to this site; nil matches any host
		// when it is the organization's only site.
		field.String("host").Optional().Nillable().MaxLen(253).
			Match(hostnamePattern).
			Unique(),
		createdAt(),
	}
}

func (Site) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("organization", Organization.Type).Ref("sites").Field("org_id").
			Unique().Required().Immutable().Annotations(entgql.Skip(entgql.SkipAll)),
		edge.To("traps", Trap.Type).Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

func (Site) Indexes() []ent.Index {
	return []ent.Index{index.Fields("org_id", "created_at")}
}

func (Site) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.QueryField(),
		entgql.RelayConnection(),
		entgql.Mutations(entgql.MutationCreate(), entgql.MutationUpdate()),
	}
}
