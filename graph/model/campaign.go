package model

import (
	"context"

	"github.com/flytrap/flytrap/ent"
)

// Campaign is a campaign as GraphQL serves it: its stored row, and the page it was listed
// on, which loads what the page's campaigns' fields need in a few queries for all of them.
type Campaign struct {
	*ent.Campaign
	Page CampaignPage
}

// CampaignPage loads the lists of a page's campaigns, once each, whichever field asks first.
type CampaignPage interface {
	// Sessions is the campaign's stored sessions that most recently leaked its prompt (at most 20).
	Sessions(ctx context.Context, campaignID string) ([]*ent.Session, error)
	// Addresses is the first distinct source addresses of its stored sessions (at most 20).
	Addresses(ctx context.Context, campaignID string) ([]string, error)
	// Traps is the traps its 20 latest sessions triggered.
	Traps(ctx context.Context, campaignID string) ([]*TrapRef, error)
}
