package schema

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"entgo.io/contrib/entgql"
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/schematype"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/viewer"
)

// WebhookEndpoint is a URL an organization's events are sent to, signed, in one format.
type WebhookEndpoint struct{ ent.Schema }

func (WebhookEndpoint) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: ids.Webhook}, TenantMixin{}}
}

func (WebhookEndpoint) Fields() []ent.Field {
	ro := entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput, entgql.SkipWhereInput)
	hidden := entgql.Skip(entgql.SkipAll)
	return []ent.Field{
		field.String("url").NotEmpty().MaxLen(2048).Validate(webhookURL).
			Annotations(entgql.OrderField("URL")),
		field.String("description").Default("").MaxLen(2000).Validate(cleanText),
		// EventTypes filters what is sent: event types or "prefix.*"; empty sends everything.
		field.Strings("event_types").Default([]string{}).Validate(eventTypeFilter).
			Annotations(entgql.Skip(entgql.SkipWhereInput)),
		field.Bool("active").Default(true),
		field.Enum("format").Values("json", "slack", "teams", "splunk_hec", "ecs", "cef").Default("json").
			Annotations(entgql.Type("WebhookFormat")),
		// ThrottleMinutes lets at most one threat alert per session and severity through per this many
		// minutes (0: off); an escalation to a higher severity is always sent.
		field.Int("throttle_minutes").Default(0).Min(0).Max(10080),
		// Authorization, when set, is sent as the Authorization header (Splunk HEC: "Splunk <token>"); write-only.
		field.String("authorization").Default("").MaxLen(1024).Sensitive().Validate(cleanText).
			Annotations(entgql.Skip(entgql.SkipType, entgql.SkipWhereInput, entgql.SkipOrderField)),
		field.String("secret").NotEmpty().Sensitive().Annotations(hidden),
		// The secret before the last rotation stays valid until PreviousSecretExpiresAt.
		field.String("previous_secret").Default("").Sensitive().Annotations(hidden),
		field.Time("previous_secret_expires_at").Optional().Nillable().Annotations(ro),
		// FailingSince is the first failed attempt since the last success; after 5 days the endpoint is disabled.
		field.Time("failing_since").Optional().Nillable().Annotations(ro),
		field.String("disabled_reason").Default("").Annotations(ro),
		createdAt(),
		field.Time("updated_at").Default(nowUTC).UpdateDefault(nowUTC).
			Annotations(entgql.Skip(entgql.SkipMutationCreateInput, entgql.SkipMutationUpdateInput, entgql.SkipWhereInput)),
	}
}

func (WebhookEndpoint) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("deliveries", WebhookDelivery.Type).
			Annotations(entsql.OnDelete(entsql.Cascade), entgql.Skip(entgql.SkipAll)),
	}
}

func (WebhookEndpoint) Indexes() []ent.Index {
	return []ent.Index{index.Fields("org_id", "active")}
}

func (WebhookEndpoint) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entgql.QueryField("webhookEndpoints").Directives(pageLimits),
		entgql.RelayConnection(),
		entgql.Mutations(entgql.MutationCreate(), entgql.MutationUpdate()),
	}
}

func (WebhookEndpoint) Policy() ent.Policy { return tenantPolicy(viewer.ReadWrite, viewer.ReadWrite) }

// WebhookDelivery is one event (or ping) to send to one endpoint, with its attempts.
type WebhookDelivery struct{ ent.Schema }

func (WebhookDelivery) Mixin() []ent.Mixin {
	return []ent.Mixin{IDMixin{Prefix: ids.Delivery}, TenantMixin{}}
}

func (WebhookDelivery) Fields() []ent.Field {
	hidden := entgql.Skip(entgql.SkipAll)
	return []ent.Field{
		field.String("endpoint_id").Immutable().Annotations(entgql.Skip(entgql.SkipWhereInput)),
		// MessageID is the webhook-id header: the event id (a redelivery keeps it), or the delivery id of a ping.
		field.String("message_id").NotEmpty().Immutable(),
		field.String("event_type").NotEmpty().Immutable(),
		// SessionID keys the throttle for threat events.
		field.String("session_id").Default("").Immutable().Annotations(hidden),
		field.JSON("payload", map[string]any{}).Immutable().Annotations(entgql.Type("Map")),
		field.Enum("status").Values("PENDING", "SUCCEEDED", "FAILED", "SUPPRESSED").Default("PENDING").
			Annotations(entgql.Type("WebhookDeliveryStatus")),
		field.Int("attempt_count").Default(0),
		field.Time("next_attempt_at").Default(nowUTC),
		// LeaseUntil is set while an instance sends the delivery; once past, another may take it.
		field.Time("lease_until").Optional().Nillable().Annotations(hidden),
		field.Time("delivered_at").Optional().Nillable(),
		field.Int("last_status_code").Optional().Nillable(),
		field.String("last_error").Default(""),
		field.JSON("attempts", []schematype.WebhookAttempt{}).Default([]schematype.WebhookAttempt{}).
			Annotations(entgql.Type("[WebhookAttempt!]")),
		createdAt(),
	}
}

func (WebhookDelivery) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("endpoint", WebhookEndpoint.Type).Ref("deliveries").Field("endpoint_id").
			Unique().Required().Immutable().Annotations(entgql.Skip(entgql.SkipAll)),
	}
}

func (WebhookDelivery) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("status", "next_attempt_at"),
		index.Fields("endpoint_id", "created_at"),
		// An endpoint's deliveries filtered by status (REST ?status=, GraphQL status:), newest first:
		// without it SQLite read every delivery of the status, all endpoints' (0.3–0.6 s at 400,000).
		index.Fields("endpoint_id", "status", "created_at"),
		index.Fields("endpoint_id", "session_id", "created_at"),
	}
}

func (WebhookDelivery) Annotations() []schema.Annotation {
	return []schema.Annotation{entgql.RelayConnection()}
}

// Deliveries are written by the outbox and the dispatcher; callers with read-write read them.
func (WebhookDelivery) Policy() ent.Policy {
	return privacy.Policy{
		Query:    privacy.QueryPolicy{notSiteScoped(), requireScope(viewer.ReadWrite), filterTenant()},
		Mutation: privacy.MutationPolicy{privacy.AlwaysDenyRule()},
	}
}

func webhookURL(s string) error {
	u, err := url.Parse(s)
	if err == nil && (u.Scheme == "syslog+tcp" || u.Scheme == "syslog+tls") {
		if u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return errors.New("a syslog destination is syslog+tcp://host[:port] or syslog+tls://host[:port], nothing more")
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return errors.New("the port must be 1-65535")
			}
		}
		return cleanText(s)
	}
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Hostname() == "" {
		return errors.New("must be an absolute http or https URL, or syslog+tcp:// or syslog+tls://host:port")
	}
	if u.User != nil {
		return errors.New("must not carry credentials; use authorization")
	}
	return cleanText(s)
}

func eventTypeFilter(types []string) error {
	if len(types) > 32 {
		return errors.New("at most 32 entries")
	}
	for _, t := range types {
		if !validEventFilter(t) {
			return fmt.Errorf("%q is not an event type (%s) or a prefix like threat.*", clip(t, maxEcho), strings.Join(eventTypes, ", "))
		}
	}
	return nil
}

func validEventFilter(t string) bool {
	if p, ok := strings.CutSuffix(t, ".*"); ok {
		return slices.ContainsFunc(eventTypes, func(typ string) bool { return strings.HasPrefix(typ, p+".") })
	}
	return t == "*" || slices.Contains(eventTypes, t)
}
