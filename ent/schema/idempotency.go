package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// IdempotencyKey is a trap create made with an Idempotency-Key header (REST), kept for
// app.IdempotencyWindow: a retry with the same key and the same request gets the first
// answer again and makes nothing; the same key with another request is refused. Written
// and read by the app layer alone, in the create's transaction (docs/cli.md).
type IdempotencyKey struct{ ent.Schema }

func (IdempotencyKey) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

func (IdempotencyKey) Fields() []ent.Field {
	return []ent.Field{
		field.String("key").NotEmpty().MaxLen(255).Immutable(),
		// RequestHash is the SHA-256 of the request as decoded (hex): the fields given, not
		// their spelling.
		field.String("request_hash").MaxLen(64).Immutable(),
		// Response is the body of the first answer.
		field.Bytes("response").MaxLen(1 << 16).Immutable(),
		field.Int("status").Immutable(),
		field.Time("created_at").Immutable().Default(nowUTC),
	}
}

func (IdempotencyKey) Indexes() []ent.Index {
	return []ent.Index{index.Fields("org_id", "key").Unique(), index.Fields("org_id", "created_at")}
}

func (IdempotencyKey) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipAll)}
}

func (IdempotencyKey) Policy() ent.Policy { return systemOnly() }
