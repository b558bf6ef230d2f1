package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/mixin"

	"github.com/flytrap/flytrap/ids"
)

// IDMixin gives a type its prefixed, sortable, random string id.
type IDMixin struct {
	mixin.Schema
	Prefix string
}

func (m IDMixin) Fields() []ent.Field {
	return []ent.Field{
		field.String("id").
			Immutable().
			NotEmpty().
			MaxLen(40).
			DefaultFunc(ids.NewFunc(m.Prefix)),
	}
}

// TenantMixin marks a type as owned by an organization. The privacy policy it
// brings scopes every query and mutation on the type to the viewer's
// organization, so no resolver can forget to.
type TenantMixin struct {
	mixin.Schema
}

func (TenantMixin) Fields() []ent.Field {
	return []ent.Field{
		field.String("org_id").
			Immutable().
			NotEmpty().
			Annotations(
				entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput, entgql.SkipWhereInput),
			),
	}
}

// createdAt is the creation time of a row.
func createdAt() ent.Field {
	return field.Time("created_at").
		Immutable().
		Default(nowUTC).
		Annotations(
			entgql.OrderField("CREATED_AT"),
			entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput),
		)
}
