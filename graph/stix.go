package graph

import "context"

// SessionStix is the resolver for the sessionStix field.
func (r *queryResolver) SessionStix(ctx context.Context, id string) (map[string]any, error) {
	return r.app.SessionSTIX(ctx, id)
}

// CampaignStix is the resolver for the campaignStix field.
func (r *queryResolver) CampaignStix(ctx context.Context, id string) (map[string]any, error) {
	return r.app.CampaignSTIX(ctx, id)
}
