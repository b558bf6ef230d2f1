package schema

import (
	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
)

// CrawlerRangeList is the last good copy of one crawler operator's published address list,
// fetched by crawler.Refresher: an instance that restarts starts from it, not from the
// embedded snapshot, and `flytrap admin stats` shows its age. Instance-wide: it belongs to no
// organization, and the system alone reads and writes it.
type CrawlerRangeList struct{ ent.Schema }

func (CrawlerRangeList) Fields() []ent.Field {
	return []ent.Field{
		field.String("id").Immutable().NotEmpty().MaxLen(64), // the list's name, e.g. googlebot
		field.String("url").MaxLen(2048),
		field.Strings("prefixes").Optional(),           // empty: never fetched good (the row keeps the error)
		field.Time("list_time").Optional().Nillable(),  // the document's own creationTime
		field.Time("fetched_at").Optional().Nillable(), // the last good fetch; nil: never
		field.Time("checked_at"),                       // the last attempt, good or not
		field.String("last_error").Default("").MaxLen(512),
	}
}

func (CrawlerRangeList) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.Skip(entgql.SkipAll)}
}

func (CrawlerRangeList) Policy() ent.Policy { return systemOnly() }
