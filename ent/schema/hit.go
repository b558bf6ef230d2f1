package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/dialect"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/flytrap/flytrap/ent/schematype"
	"github.com/flytrap/flytrap/ids"
)

// Hit is one request a visitor made to a trap. Everything in it is attacker-controlled
// and bounded before it is stored.
type Hit struct{ ent.Schema }

// Bounds on what a hit keeps of a request.
const (
	MaxHitBody    = 16 << 10
	MaxHitHeaders = 8 << 10
	// MaxEventData is what an event's data is priced at (the cost limit's bytes): a trap's
	// event holds at most ~4.3 KB; a threat's grows only with the traps its session touched.
	MaxEventData = 4 << 10
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
		field.String("path").MaxLen(2048).Immutable().Annotations(bytesCost(2048)),
		field.String("query").Default("").MaxLen(4096).Immutable().Annotations(bytesCost(4096)),
		// Headers are stored as header lines (schematype.Headers), not JSON: smaller and cheaper
		// to write. The column keeps SQLite's declared type, so upgrading rewrites no table there;
		// PostgreSQL's jsonb becomes text (old rows keep their JSON, which Scan reads).
		field.Other("headers", schematype.Headers{}).Immutable().
			SchemaType(map[string]string{dialect.SQLite: "json", dialect.Postgres: "text"}).
			Annotations(entgql.Type("Map"), entgql.Skip(entgql.SkipWhereInput), bytesCost(MaxHitHeaders)),
		field.String("body").Default("").MaxLen(MaxHitBody).Immutable().Annotations(bytesCost(MaxHitBody)),
		field.Bool("body_truncated").Default(false).Immutable(),
		field.String("source_ip").MaxLen(64).Immutable(),
		field.String("user_agent").Default("").MaxLen(1024).Immutable().Annotations(bytesCost(1024)),
		field.Time("received_at").Default(nowUTC).Immutable().
			Annotations(entgql.OrderField("RECEIVED_AT")),
		// ReceivedHour (Unix hours) lets the counters' one-time recount (tally.Recount) group
		// hits by hour in SQL the same way on every database; the listener computes it with the row.
		field.Int64("received_hour").Optional().Immutable().Annotations(entgql.Skip(entgql.SkipAll)),
		// Kind says what the request was: a decoy served, a callback carrying a token, an unknown path.
		field.Enum("kind").Values("decoy", "callback", "not_found").Default("decoy").Immutable().
			Annotations(entgql.Type("HitKind")),
		field.Int("status").Default(200).Immutable(),
		// Signals are the signals this hit fired.
		field.Strings("signals").Default([]string{}).Immutable(),
		// What the connection proved of its client (package fingerprint); NULL when it proved
		// nothing (plain HTTP has no JA4; HTTP/1 no HTTP/2 fingerprint), and on hits stored
		// before they were taken. The client stack family is derived from them when read.
		// In the where input, so sessions can be filtered by a JA4 (hasHitsWith: {ja4}: served
		// from ja4_campaign_sessions, app/keyfilter.go).
		field.String("ja4").Optional().Nillable().MaxLen(40).Immutable(),
		field.String("h2_fingerprint").Optional().Nillable().MaxLen(256).Immutable().
			Annotations(entgql.Skip(entgql.SkipWhereInput)),
		field.String("header_order").Optional().Nillable().MaxLen(32).Immutable().
			Annotations(entgql.Skip(entgql.SkipWhereInput)),
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
		// No (org_id, received_hour): the timeline reads tally's hourly counters, not hits.
		// With id: a session's detail reads its newest hits in (received_at, id) order along it,
		// however many it has, with no sort (graph/sessiondetail.go).
		index.Fields("session_id", "received_at", "id"),
		// A session's hits connection (Session.hits) pages in id order: without it PostgreSQL
		// walked every partition's primary key for a session of a million hits (11.7 s, issue 22).
		index.Fields("session_id", "id"),
		index.Fields("trap_id"),
	}
}

func (Hit) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.RelayConnection()}
}
