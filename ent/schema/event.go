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

// Event is an entry of the organization's event log (the outbox): written in the
// same transaction as the change it reports, read by position.
type Event struct{ ent.Schema }

func (Event) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: ids.Event}, TenantMixin{}}
}

func (Event) Fields() []ent.Field {
	return []ent.Field{
		// Position numbers the organization's events 1, 2, 3…; positions commit in order (see
		// package event), so a cursor on them never skips, and they say nothing of other tenants.
		field.Int64("position").Immutable().Positive().
			Annotations(entgql.OrderField("POSITION")),
		// Seq orders every organization's events together, for live delivery; it is never shown.
		field.Int64("seq").Unique().Immutable().Positive().
			Annotations(entgql.Skip(entgql.SkipAll)),
		field.String("type").NotEmpty().MaxLen(64).Immutable(),
		field.String("api_version").NotEmpty().MaxLen(10).Immutable(),
		field.Time("created_at").Default(nowUTC).Immutable().
			Annotations(entgql.OrderField("CREATED_AT")),
		// Data is built by Flytrap, not copied from a visitor: a trap's fields (name 200, path
		// 2,048, description 2,000 bytes at most) or a threat's summary (its model and operator
		// 300 bytes at most, and the ids of the traps the session touched), priced at MaxEventData.
		field.JSON("data", map[string]any{}).Immutable().
			Annotations(entgql.Type("Map"), bytesCost(MaxEventData)),
	}
}

func (Event) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("organization", Organization.Type).Ref("events").Field("org_id").
			Unique().Required().Immutable().Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

func (Event) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("org_id", "position").Unique(),
		index.Fields("org_id", "type", "position"),
		// since= on the events list and stream: the first event at or after a time.
		index.Fields("org_id", "created_at"),
	}
}

func (Event) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.QueryField().Directives(pageLimits), entgql.RelayConnection()}
}
