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

// Signal is one firing of a detection signal, with its evidence.
type Signal struct{ ent.Schema }

func (Signal) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: ids.Signal}, TenantMixin{}}
}

func (Signal) Fields() []ent.Field {
	return []ent.Field{
		field.String("session_id").Immutable(),
		field.String("hit_id").Immutable(),
		field.String("name").MaxLen(64).Immutable(),
		field.Bool("tripwire").Default(false).Immutable(),
		// Placement is where the hidden content that caused it stood (html_comment, json_meta…), when a token says so.
		field.String("placement").Default("").MaxLen(32).Immutable(),
		// SourceHitID is the hit that served the decoy whose token came back.
		field.String("source_hit_id").Default("").MaxLen(40).Immutable(),
		// DelayMS is the time from serving the decoy to this request, for token signals.
		field.Int64("delay_ms").Optional().Nillable().Immutable(),
		field.String("detail").Default("").MaxLen(2048).Immutable().Annotations(bytesCost(2048)),
		field.Time("created_at").Default(nowUTC).Immutable(),
	}
}

func (Signal) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("organization", Organization.Type).Ref("signals").Field("org_id").
			Unique().Required().Immutable().Annotations(entgql.Skip(entgql.SkipAll)),
		edge.From("session", Session.Type).Ref("signals").Field("session_id").Unique().Required().Immutable(),
	}
}

func (Signal) Indexes() []ent.Index {
	// (session_id, created_at, id): a session's newest signals in the detail's order, no sort.
	return []ent.Index{index.Fields("session_id", "created_at", "id"), index.Fields("org_id", "name", "created_at")}
}

func (Signal) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)}
}

func (Signal) Policy() ent.Policy { return systemWritten() }

// MaxPromptText is detect.MaxPromptBytes, which the schema does not import.
const MaxPromptText = 32 << 10

// Prompt is a system prompt (or instructions) a visitor leaked, kept verbatim (bounded).
type Prompt struct{ ent.Schema }

func (Prompt) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: ids.Prompt}, TenantMixin{}}
}

func (Prompt) Fields() []ent.Field {
	return []ent.Field{
		field.String("session_id").Immutable(),
		field.String("hit_id").Immutable(),
		// Text is at most detect.MaxPromptBytes (32 KiB), priced as such.
		field.Text("text").Immutable().Annotations(bytesCost(MaxPromptText)),
		// Hash (SHA-256 of the normalised text) clusters the prompts of one operator.
		field.String("hash").MaxLen(64).Immutable(),
		field.String("model").Default("").MaxLen(100).Immutable(),
		field.String("operator").Default("").MaxLen(200).Immutable(),
		// Source is where it came: json_field, form_field, body, query, or a provider shape
		// (anthropic_system, openai_messages, gemini_system_instruction).
		field.String("source").Default("").MaxLen(32).Immutable(),
		field.Time("created_at").Default(nowUTC).Immutable(),
	}
}

func (Prompt) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("organization", Organization.Type).Ref("prompts").Field("org_id").
			Unique().Required().Immutable().Annotations(entgql.Skip(entgql.SkipAll)),
		edge.From("session", Session.Type).Ref("prompts").Field("session_id").Unique().Required().Immutable(),
	}
}

func (Prompt) Indexes() []ent.Index {
	// (org_id, id): campaigns read the organization's newest prompts (graph/campaigns.go).
	// (session_id, created_at, id): a session's newest prompts in the detail's order, no sort.
	return []ent.Index{index.Fields("session_id", "created_at", "id"), index.Fields("org_id", "hash"), index.Fields("org_id", "id")}
}

func (Prompt) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput)}
}

func (Prompt) Policy() ent.Policy { return systemWritten() }

// Secret is an installation secret, such as the key that signs decoy tokens.
type Secret struct{ ent.Schema }

func (Secret) Fields() []ent.Field {
	return []ent.Field{
		field.String("id").Immutable().NotEmpty(),
		field.Bytes("value").Immutable().Sensitive(),
	}
}

func (Secret) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipAll)}
}

// Secrets are the system's alone.
func (Secret) Policy() ent.Policy { return systemOnly() }
