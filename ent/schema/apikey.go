package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/viewer"
)

// APIKey is a programmatic credential of an organization. Only its hash is stored.
type APIKey struct{ ent.Schema }

func (APIKey) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: ids.APIKey}, TenantMixin{}}
}

func (APIKey) Fields() []ent.Field {
	ro := entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)
	return []ent.Field{
		field.String("name").NotEmpty().MaxLen(200).Validate(cleanText).Annotations(entgql.OrderField("NAME")),
		field.Enum("scope").GoType(viewer.Scope("")).Immutable().Annotations(entgql.Type("ApiKeyScope")),
		// Prefix is the key's first characters, safe to show so a person can tell keys apart.
		field.String("prefix").Immutable().MaxLen(16).Annotations(ro),
		field.String("hash").Immutable().Unique().Sensitive().Annotations(entgql.Skip(entgql.SkipAll)),
		createdAt(),
		field.Time("last_used_at").Optional().Nillable().Annotations(ro),
		field.Time("revoked_at").Optional().Nillable().Annotations(ro),
		// ExpiresAt, when set, ends the key: from then on it is refused with 401, as a revoked one.
		field.Time("expires_at").Optional().Nillable().Immutable().Annotations(ro),
		// SiteID, when set, makes a deploy key: it may read and write the traps of that site
		// and nothing else (docs/decisions.md, "Deploy-scoped keys").
		field.String("site_id").Optional().Nillable().Immutable().Annotations(ro),
	}
}

func (APIKey) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("organization", Organization.Type).Ref("api_keys").Field("org_id").
			Unique().Required().Immutable().Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

func (APIKey) Indexes() []ent.Index {
	return []ent.Index{index.Fields("org_id", "created_at")}
}

func (APIKey) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.Type("ApiKey"),
		entgql.QueryField("apiKeys").Directives(pageLimits),
		entgql.RelayConnection(),
	}
}
