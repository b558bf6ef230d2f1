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

// Hit is one request a visitor made to a trap. Everything in it is attacker-controlled
// and bounded before it is stored.
type Hit struct{ ent.Schema }

// Bounds on what a hit keeps of a request.
const (
	MaxHitBody    = 16 << 10
	MaxHitHeaders = 8 << 10
)

func (Hit) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: ids.Hit}, TenantMixin{}}
}

func (Hit) Fields() []ent.Field {
	return []ent.Field{
		field.String("session_id").Immutable(),
		// TrapID survives the trap's deletion as plain data, so history keeps its attribution.
		field.String("trap_id").Optional().Immutable(),
		field.String("method").MaxLen(16).Immutable(),
		field.String("path").MaxLen(2048).Immutable(),
		field.String("query").Default("").MaxLen(4096).Immutable(),
		field.JSON("headers", map[string][]string{}).Immutable().
			Annotations(entgql.Type("Map")),
		field.String("body").Default("").MaxLen(MaxHitBody).Immutable(),
		field.Bool("body_truncated").Default(false).Immutable(),
		field.String("source_ip").MaxLen(64).Immutable(),
		field.String("user_agent").Default("").MaxLen(1024).Immutable(),
		field.Time("received_at").Default(nowUTC).Immutable().
			Annotations(entgql.OrderField("RECEIVED_AT")),
		// ReceivedHour (Unix hours) lets the hourly timeline group in SQL the same way on every
		// database; a hook derives it from received_at.
		field.Int64("received_hour").Optional().Immutable().Annotations(entgql.Skip(entgql.SkipAll)),
		// Kind says what the request was: a decoy served, a callback carrying a token, an unknown path.
		field.Enum("kind").Values("decoy", "callback", "not_found").Default("decoy").Immutable().
			Annotations(entgql.Type("HitKind")),
		field.Int("status").Default(200).Immutable(),
		// Signals are the signals this hit fired.
		field.Strings("signals").Default([]string{}).Immutable(),
	}
}

func (Hit) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("organization", Organization.Type).Ref("hits").Field("org_id").
			Unique().Required().Immutable().Annotations(entgql.Skip(entgql.SkipAll)),
		edge.From("session", Session.Type).Ref("hits").Field("session_id").
			Unique().Required().Immutable(),
	}
}

func (Hit) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("org_id", "received_hour"),
		index.Fields("session_id", "received_at"),
		index.Fields("trap_id"),
	}
}

func (Hit) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.RelayConnection()}
}
