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

// Site is one of an organization's web properties: the hostname its traps answer on.
type Site struct{ ent.Schema }

func (Site) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: ids.Site}, TenantMixin{}}
}

func (Site) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().MaxLen(200).Validate(cleanText).
			Annotations(entgql.OrderField("NAME")),
		// Host routes trap-listener requests to this site once the operator verified it
		// (HostVerified); nil matches any host when it is the only site. Unique per
		// organization only, so a clash never tells one tenant about another's hosts.
		field.String("host").Optional().Nillable().MaxLen(253).
			Match(hostnamePattern),
		// HostVerified is set by the operator (flytrap sites verify), who checked the organization
		// owns the host; a tenant cannot set it, and changing the host clears it.
		field.Bool("host_verified").Default(false).
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput, entgql.SkipWhereInput, entgql.SkipOrderField)),
		// Lures is how the lure proxy puts lures into the site's pages (flytrap sites lures);
		// nil: schematype.DefaultLures. Set by the operator only.
		field.JSON("lures", &schematype.LureConfig{}).Optional().
			Annotations(entgql.Skip(entgql.SkipAll)),
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
	return []ent.Index{
		index.Fields("org_id", "created_at"),
		index.Fields("org_id", "host").Unique(),
		// One verified site per host across the instance: the one the trap listener routes to.
		index.Fields("host").Unique().Annotations(entsql.IndexWhere("host_verified")),
	}
}

func (Site) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.QueryField().Directives(pageLimits),
		entgql.RelayConnection(),
		entgql.Mutations(entgql.MutationCreate(), entgql.MutationUpdate()),
	}
}
