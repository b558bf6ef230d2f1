package schema

import (
	"errors"
	"fmt"
	"net/netip"

	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"

	"github.com/flytrap/flytrap/ids"
)

// Organization is a tenant: every other row belongs to one.
type Organization struct{ ent.Schema }

func (Organization) Mixin() []ent.Mixin { return []ent.Mixin{IDMixin{Prefix: ids.Org}} }

func (Organization) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().MaxLen(200).Validate(cleanText),
		// The webhook network fields are the operator's (flytrap admin orgs set-webhook-network), never a tenant's:
		// hidden from GraphQL and REST. WebhookAllowPrivate lets this organization's webhooks reach any address.
		field.Bool("webhook_allow_private").Default(false).Annotations(operatorOnly),
		// WebhookAllowCIDRs are private networks this organization's webhooks may reach.
		// Optional: a JSON column has no SQL default, and organizations stored before it existed hold NULL.
		field.Strings("webhook_allow_cidrs").Optional().Validate(cidrList).Annotations(operatorOnly),
		// WebhookShowPrivateResponses stores receivers' answers from addresses that needed an allow-list;
		// without it their bodies are dropped, so an allowed internal host cannot be read back.
		field.Bool("webhook_show_private_responses").Default(false).Annotations(operatorOnly),
		createdAt(),
	}
}

// operatorOnly keeps a field out of the GraphQL schema entirely: the CLI sets it.
var operatorOnly = entgql.Skip(entgql.SkipAll)

func cidrList(cidrs []string) error {
	if len(cidrs) > 64 {
		return errors.New("at most 64 networks")
	}
	for _, c := range cidrs {
		if _, err := netip.ParsePrefix(c); err != nil {
			return fmt.Errorf("%q is not a CIDR", c)
		}
	}
	return nil
}

func (Organization) Edges() []ent.Edge {
	skip := entgql.Skip(entgql.SkipAll)
	return []ent.Edge{
		edge.To("sites", Site.Type).Annotations(skip),
		edge.To("traps", Trap.Type).Annotations(skip),
		edge.To("sessions", Session.Type).Annotations(skip),
		edge.To("hits", Hit.Type).Annotations(skip),
		edge.To("events", Event.Type).Annotations(skip),
		edge.To("api_keys", APIKey.Type).Annotations(skip),
		edge.To("signals", Signal.Type).Annotations(skip),
		edge.To("prompts", Prompt.Type).Annotations(skip),
	}
}

func (Organization) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.Mutations(entgql.MutationUpdate()),
	}
}
