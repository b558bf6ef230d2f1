package graph

import (
	"context"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ent"
)

// Campaigns is the resolver for the campaigns field.
func (r *queryResolver) Campaigns(ctx context.Context, first *int, after *entgql.Cursor[string]) (*app.CampaignConnection, error) {
	return r.app.Campaigns(ctx, first, after)
}

// Sessions is the resolver for the sessions field: the stored sessions that most recently leaked the prompt.
func (r *campaignResolver) Sessions(ctx context.Context, obj *app.Campaign, first *int) ([]*ent.Session, error) {
	return obj.LatestSessions(ctx, first)
}

// Addresses is the resolver for the addresses field.
func (r *campaignResolver) Addresses(ctx context.Context, obj *app.Campaign, first *int) ([]string, error) {
	return obj.Addresses(ctx, first)
}

// Traps is the resolver for the traps field: the traps of the 20 sessions that most recently leaked the prompt.
func (r *campaignResolver) Traps(ctx context.Context, obj *app.Campaign) ([]*app.TrapRef, error) {
	return obj.Traps(ctx)
}

// Campaign returns CampaignResolver implementation.
func (r *Resolver) Campaign() CampaignResolver { return &campaignResolver{r} }

type campaignResolver struct{ *Resolver }

// Ja4Campaigns is the resolver for the ja4Campaigns field.
func (r *queryResolver) Ja4Campaigns(ctx context.Context, first *int, after *entgql.Cursor[string]) (*app.Ja4CampaignConnection, error) {
	return r.app.Ja4Campaigns(ctx, first, after)
}

// Sessions is the resolver for the sessions field: the campaign's newest stored sessions.
func (r *ja4CampaignResolver) Sessions(ctx context.Context, obj *app.Ja4Campaign, first *int) ([]*ent.Session, error) {
	return obj.LatestSessions(ctx, first)
}

// Addresses is the resolver for the addresses field.
func (r *ja4CampaignResolver) Addresses(ctx context.Context, obj *app.Ja4Campaign, first *int) ([]string, error) {
	return obj.Addresses(ctx, first)
}

// Ja4Campaign returns Ja4CampaignResolver implementation.
func (r *Resolver) Ja4Campaign() Ja4CampaignResolver { return &ja4CampaignResolver{r} }

type ja4CampaignResolver struct{ *Resolver }
