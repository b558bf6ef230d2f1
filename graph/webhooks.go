package graph

import (
	"context"
	"fmt"
	"time"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/sequence"
	"github.com/flytrap/flytrap/ent/webhookdelivery"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/graph/model"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/internal/clip"
	"github.com/flytrap/flytrap/webhook"
	"github.com/flytrap/flytrap/wire"
)

// SecretGrace is how long a rotated-out signing secret stays valid.
const SecretGrace = 24 * time.Hour

// PingType is the event type of a test ping.
const PingType = "webhook.ping"

// WebhookEndpoints is the resolver for the webhookEndpoints field.
func (r *queryResolver) WebhookEndpoints(ctx context.Context, after *entgql.Cursor[string], first *int, before *entgql.Cursor[string], last *int, orderBy *ent.WebhookEndpointOrder, where *ent.WebhookEndpointWhereInput) (*ent.WebhookEndpointConnection, error) {
	if err := CheckCursors(after, before, ids.Webhook, orderName(orderBy != nil && orderBy.Field != nil, func() string { return orderBy.Field.String() })); err != nil {
		return nil, err
	}
	return r.ent(ctx).WebhookEndpoint.Query().Paginate(ctx, after, first, before, last,
		ent.WithWebhookEndpointOrder(orderBy), ent.WithWebhookEndpointFilter(where.Filter))
}

// WebhookDeliveries is the resolver for the webhookDeliveries field: newest first.
func (r *queryResolver) WebhookDeliveries(ctx context.Context, endpointID string, after *entgql.Cursor[string], first *int, before *entgql.Cursor[string], last *int, status *webhookdelivery.Status) (*ent.WebhookDeliveryConnection, error) {
	if err := checkWebhookID(endpointID, ids.Webhook, "endpointID"); err != nil {
		return nil, err
	}
	if err := CheckCursors(after, before, ids.Delivery, "CREATED_AT"); err != nil {
		return nil, err
	}
	c := r.ent(ctx)
	if _, err := c.WebhookEndpoint.Get(ctx, endpointID); err != nil {
		return nil, err
	}
	q := c.WebhookDelivery.Query().Where(webhookdelivery.EndpointID(endpointID))
	if status != nil {
		q = q.Where(webhookdelivery.StatusEQ(*status))
	}
	return q.Paginate(ctx, after, first, before, last, ent.WithWebhookDeliveryOrder(&ent.WebhookDeliveryOrder{
		Field: ent.WebhookDeliveryOrderFieldCreatedAt, Direction: entgql.OrderDirectionDesc,
	}))
}

// CreateWebhookEndpoint is the resolver for the createWebhookEndpoint field.
func (r *mutationResolver) CreateWebhookEndpoint(ctx context.Context, input ent.CreateWebhookEndpointInput) (*model.CreateWebhookEndpointPayload, error) {
	secret := webhook.NewSecret()
	ep, err := r.ent(ctx).WebhookEndpoint.Create().SetInput(input).SetSecret(secret).Save(ctx)
	if err != nil {
		return nil, err
	}
	return &model.CreateWebhookEndpointPayload{Endpoint: ep, Secret: secret}, nil
}

// UpdateWebhookEndpoint is the resolver for the updateWebhookEndpoint field.
func (r *mutationResolver) UpdateWebhookEndpoint(ctx context.Context, id string, input ent.UpdateWebhookEndpointInput) (*ent.WebhookEndpoint, error) {
	if err := checkWebhookID(id, ids.Webhook, "id"); err != nil {
		return nil, err
	}
	u := r.ent(ctx).WebhookEndpoint.UpdateOneID(id).SetInput(input)
	if input.Active != nil && *input.Active {
		u.ClearFailingSince().SetDisabledReason("") // turned on again: a fresh start
	}
	return u.Save(ctx)
}

// DeleteWebhookEndpoint is the resolver for the deleteWebhookEndpoint field.
func (r *mutationResolver) DeleteWebhookEndpoint(ctx context.Context, id string) (*model.DeletePayload, error) {
	if err := checkWebhookID(id, ids.Webhook, "id"); err != nil {
		return nil, err
	}
	c := r.ent(ctx)
	if err := c.WebhookEndpoint.DeleteOneID(id).Exec(ctx); err != nil {
		return deleted(id, err)
	}
	// The endpoint's manual-delivery limiter row goes with it.
	_, err := c.Sequence.Delete().Where(sequence.ID(manualKey(id))).Exec(privacy.DecisionContext(ctx, privacy.Allow))
	return deleted(id, err)
}

// RotateWebhookSecret is the resolver for the rotateWebhookSecret field. The outgoing
// secret stays valid for SecretGrace; a secret rotated out earlier is dropped at once.
func (r *mutationResolver) RotateWebhookSecret(ctx context.Context, id string) (*model.RotateWebhookSecretPayload, error) {
	if err := checkWebhookID(id, ids.Webhook, "id"); err != nil {
		return nil, err
	}
	c := r.ent(ctx)
	ep, err := c.WebhookEndpoint.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	secret := webhook.NewSecret()
	ep, err = c.WebhookEndpoint.UpdateOne(ep).
		SetSecret(secret).
		SetPreviousSecret(ep.Secret).
		SetPreviousSecretExpiresAt(r.now().UTC().Add(SecretGrace).Truncate(time.Millisecond)).
		Save(ctx)
	if err != nil {
		return nil, err
	}
	return &model.RotateWebhookSecretPayload{Endpoint: ep, Secret: secret}, nil
}

// RedeliverWebhook is the resolver for the redeliverWebhook field: a new delivery of the
// same message (same webhook-id, so a receiver that already has it can drop it). Given
// endpointID, a delivery of another endpoint is not found, as if it did not exist.
func (r *mutationResolver) RedeliverWebhook(ctx context.Context, deliveryID string, endpointID *string) (*ent.WebhookDelivery, error) {
	if endpointID != nil {
		if err := checkWebhookID(*endpointID, ids.Webhook, "endpointID"); err != nil {
			return nil, err
		}
	}
	if err := checkWebhookID(deliveryID, ids.Delivery, "deliveryID"); err != nil {
		return nil, err
	}
	c := r.ent(ctx)
	d, err := c.WebhookDelivery.Get(ctx, deliveryID)
	if endpointID != nil && (ent.IsNotFound(err) || err == nil && d.EndpointID != *endpointID) {
		return nil, apperr.NotFound("webhook delivery")
	}
	if err != nil {
		return nil, err
	}
	ep, err := c.WebhookEndpoint.Get(ctx, d.EndpointID)
	if err != nil {
		return nil, err
	}
	if !ep.Active {
		return nil, apperr.Conflict("endpoint %s is not active; turn it on first", ep.ID)
	}
	if err := r.takeManual(ctx, ep.ID); err != nil {
		return nil, err
	}
	return r.queueDelivery(ctx, ep, "", d.MessageID, d.EventType, d.Payload)
}

// PingWebhookEndpoint is the resolver for the pingWebhookEndpoint field.
func (r *mutationResolver) PingWebhookEndpoint(ctx context.Context, id string) (*ent.WebhookDelivery, error) {
	if err := checkWebhookID(id, ids.Webhook, "id"); err != nil {
		return nil, err
	}
	ep, err := r.ent(ctx).WebhookEndpoint.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := r.takeManual(ctx, ep.ID); err != nil {
		return nil, err
	}
	msg := ids.New(ids.Delivery)
	payload := wire.Object(wire.Event{ID: msg, Type: PingType, APIVersion: event.APIVersion, CreatedAt: wire.Seconds(r.now()),
		Data: wire.Object(wire.Ping{EndpointID: ep.ID, OrgID: ep.OrgID})})
	return r.queueDelivery(ctx, ep, msg, msg, PingType, payload)
}

// queueDelivery writes a pending delivery. Deliveries are the system's to write, so the
// caller's right to the endpoint was checked by reading it first.
func (r *Resolver) queueDelivery(ctx context.Context, ep *ent.WebhookEndpoint, id, msg, typ string, payload map[string]any) (*ent.WebhookDelivery, error) {
	now := r.now().UTC().Truncate(time.Millisecond)
	create := r.ent(ctx).WebhookDelivery.Create().
		SetOrgID(ep.OrgID).
		SetEndpointID(ep.ID).
		SetMessageID(msg).
		SetEventType(typ).
		SetPayload(payload).
		SetCreatedAt(now).
		SetNextAttemptAt(now)
	if id != "" {
		create.SetID(id) // a ping's webhook-id is its delivery id
	}
	d, err := create.Save(privacy.DecisionContext(ctx, privacy.Allow))
	if err != nil {
		return nil, err
	}
	return d, nil
}

// ManualLimit bounds the deliveries callers ask for (pings, redeliveries) per endpoint: they
// make this service send requests, so a caller could otherwise aim it at a receiver at will.
type ManualLimit struct {
	PerMinute float64 // sustained rate
	Burst     int     // sent at once before the rate applies
}

// DefaultManualLimit is 6 a minute with a burst of 3.
var DefaultManualLimit = ManualLimit{PerMinute: 6, Burst: 3}

func manualKey(endpoint string) string { return "webhook-manual:" + endpoint }

// takeManual spends one of the endpoint's manual deliveries or refuses with the wait. The
// state is one row per endpoint (a GCRA "theoretical arrival time" in milliseconds) locked by
// the upsert until the caller's transaction ends, so every instance shares one limit and
// concurrent requests queue rather than overshoot. A refused request spends nothing.
func (r *Resolver) takeManual(ctx context.Context, endpoint string) error {
	lim := r.Manual
	if lim.PerMinute <= 0 || lim.Burst < 1 {
		return nil
	}
	c := r.ent(ctx)
	sys := privacy.DecisionContext(ctx, privacy.Allow)
	key := manualKey(endpoint)
	if err := c.Sequence.Create().SetID(key).SetValue(0).
		OnConflictColumns(sequence.FieldID).AddValue(0).Exec(sys); err != nil {
		return fmt.Errorf("manual delivery limit: %w", err)
	}
	row, err := c.Sequence.Get(sys, key)
	if err != nil {
		return fmt.Errorf("manual delivery limit: %w", err)
	}
	interval := max(int64(float64(time.Minute.Milliseconds())/lim.PerMinute), 1)
	now := r.now().UnixMilli()
	tat := max(row.Value, now) + interval
	if wait := time.Duration(tat-now-int64(lim.Burst)*interval) * time.Millisecond; wait > 0 {
		return apperr.TooManyFor(wait, "this endpoint was pinged or redelivered to too often; retry in %ds",
			int((wait+time.Second-1)/time.Second))
	}
	return c.Sequence.UpdateOneID(key).SetValue(tat).Exec(sys)
}

func checkWebhookID(id, prefix, field string) error {
	if ids.Prefix(id) != prefix {
		what := map[string]string{ids.Webhook: "webhook endpoint", ids.Delivery: "webhook delivery"}[prefix]
		return apperr.Invalid(field, "%q is not a %s id (%s_…)", clip.Mark(id, 64), what, prefix)
	}
	return nil
}
