package graph

import (
	"context"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/webhookdelivery"
	"github.com/flytrap/flytrap/graph/model"
	"github.com/flytrap/flytrap/ids"
)

// WebhookEndpoints is the resolver for the webhookEndpoints field.
func (r *queryResolver) WebhookEndpoints(ctx context.Context, after *entgql.Cursor[string], first *int, before *entgql.Cursor[string], last *int, orderBy *ent.WebhookEndpointOrder, where *ent.WebhookEndpointWhereInput) (*ent.WebhookEndpointConnection, error) {
	if err := app.CheckCursors(after, before, ids.Webhook, orderName(orderBy != nil && orderBy.Field != nil, func() string { return orderBy.Field.String() })); err != nil {
		return nil, err
	}
	return r.ent(ctx).WebhookEndpoint.Query().Paginate(ctx, after, first, before, last,
		ent.WithWebhookEndpointOrder(orderBy), ent.WithWebhookEndpointFilter(where.Filter))
}

// WebhookDeliveries is the resolver for the webhookDeliveries field: newest first.
func (r *queryResolver) WebhookDeliveries(ctx context.Context, endpointID string, after *entgql.Cursor[string], first *int, before *entgql.Cursor[string], last *int, status *webhookdelivery.Status) (*ent.WebhookDeliveryConnection, error) {
	return r.app.Deliveries(ctx, endpointID, after, first, before, last, status)
}

// CreateWebhookEndpoint is the resolver for the createWebhookEndpoint field.
func (r *mutationResolver) CreateWebhookEndpoint(ctx context.Context, input app.WebhookInput) (*app.WebhookWithSecret, error) {
	return r.app.CreateWebhook(ctx, input)
}

// UpdateWebhookEndpoint is the resolver for the updateWebhookEndpoint field.
func (r *mutationResolver) UpdateWebhookEndpoint(ctx context.Context, id string, input app.WebhookChanges) (*ent.WebhookEndpoint, error) {
	return r.app.UpdateWebhook(ctx, id, input)
}

// DeleteWebhookEndpoint is the resolver for the deleteWebhookEndpoint field.
func (r *mutationResolver) DeleteWebhookEndpoint(ctx context.Context, id string) (*model.DeletePayload, error) {
	return deleted(id, r.app.DeleteWebhook(ctx, id))
}

// RotateWebhookSecret is the resolver for the rotateWebhookSecret field.
func (r *mutationResolver) RotateWebhookSecret(ctx context.Context, id string) (*app.WebhookWithSecret, error) {
	return r.app.RotateWebhookSecret(ctx, id)
}

// RedeliverWebhook is the resolver for the redeliverWebhook field.
func (r *mutationResolver) RedeliverWebhook(ctx context.Context, deliveryID string, endpointID *string) (*ent.WebhookDelivery, error) {
	return r.app.RedeliverWebhook(ctx, deliveryID, endpointID)
}

// PingWebhookEndpoint is the resolver for the pingWebhookEndpoint field.
func (r *mutationResolver) PingWebhookEndpoint(ctx context.Context, id string) (*ent.WebhookDelivery, error) {
	return r.app.PingWebhook(ctx, id)
}
