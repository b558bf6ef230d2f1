package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/flytrap/flytrap/ids"
)

// Trap is a decoy an organization plants on one of its sites.
type Trap struct{ ent.Schema }

func (Trap) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: ids.Trap}, TenantMixin{}}
}

func (Trap) Fields() []ent.Field {
	return []ent.Field{
		field.String("site_id").Optional().
			Annotations(entgql.Skip(entgql.SkipMutationUpdateInput, entgql.SkipWhereInput)),
		field.String("name").NotEmpty().MaxLen(200).Validate(cleanText).
			Annotations(entgql.OrderField("NAME")),
		// Path is where the decoy answers; left empty on create, the service picks a plausible one.
		field.String("path").Optional().MaxLen(512).
			Annotations(entgql.OrderField("PATH"), entgql.Skip(entgql.SkipMutationUpdateInput)),
		field.Enum("type").Values(trapKinds...).
			Annotations(entgql.OrderField("TYPE"), entgql.Type("TrapType"), entgql.Skip(entgql.SkipMutationUpdateInput)),
		field.String("description").Default("").MaxLen(2000).Validate(cleanText),
		// PublicTitle is the title visitors read in the decoy and in lures linking to it;
		// empty, one is generated for the trap's kind and site. Name and description are
		// the operator's and never leave the dashboard.
		field.String("public_title").Default("").MaxLen(120).Validate(oneLine).
			Annotations(entgql.Skip(entgql.SkipWhereInput)),
		field.Bool("active").Default(true),
		createdAt(),
		field.Time("updated_at").Default(nowUTC).UpdateDefault(nowUTC).
			Annotations(entgql.OrderField("UPDATED_AT"), entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)),
	}
}

func (Trap) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("organization", Organization.Type).Ref("traps").Field("org_id").
			Unique().Required().Immutable().Annotations(entgql.Skip(entgql.SkipAll)),
		edge.From("site", Site.Type).Ref("traps").Field("site_id").Unique().
			Annotations(entgql.Skip(entgql.SkipMutationUpdateInput)),
	}
}

func (Trap) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("org_id", "created_at"),
		// One active trap per path and site; inactive ones may share a path.
		index.Fields("site_id", "path").Unique().Annotations(entsql.IndexWhere("active")),
	}
}

func (Trap) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.QueryField().Directives(pageLimits),
		entgql.RelayConnection(),
		entgql.Mutations(entgql.MutationCreate(), entgql.MutationUpdate()),
	}
}
