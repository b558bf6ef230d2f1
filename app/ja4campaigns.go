package app

import (
	"context"
	"fmt"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/ja4campaign"
	"github.com/flytrap/flytrap/ent/ja4campaignsession"
	"github.com/flytrap/flytrap/fingerprint"
	"github.com/flytrap/flytrap/ids"
)

// JA4 campaigns group the sessions whose hits came from one TLS client (its JA4): one
// operator's tooling behind many addresses and user agents. They are read from maintained rows
// (tally package, docs/counters.md), most recently active first, with cursors stable as hits
// arrive, and their lists load as the prompt campaigns' do (CampaignPage).

// Ja4Campaign is a JA4 campaign as the API lists it: its stored row, and its page.
type Ja4Campaign struct {
	*ent.Ja4Campaign
	Page *CampaignPage
}

// Ja4CampaignConnection is a page of JA4 campaigns.
type Ja4CampaignConnection struct {
	Edges    []*Ja4CampaignEdge       `json:"edges"`
	PageInfo *entgql.PageInfo[string] `json:"pageInfo"`
}

// Ja4CampaignEdge is a JA4 campaign and its cursor.
type Ja4CampaignEdge struct {
	Node   *Ja4Campaign          `json:"node"`
	Cursor entgql.Cursor[string] `json:"cursor"`
}

// Ja4Campaigns is a page of the caller's JA4 campaigns, most recently active first: first of
// them (50 when nil) after the cursor of an earlier page's campaign.
func (a *App) Ja4Campaigns(ctx context.Context, first *int, after *entgql.Cursor[string]) (*Ja4CampaignConnection, error) {
	if err := CheckSiteScope(ctx, "read campaigns"); err != nil {
		return nil, err
	}
	n := 50
	if first != nil {
		n = *first
	}
	q := a.ent(ctx).Ja4Campaign.Query()
	if after != nil {
		if ids.Prefix(after.ID) != ids.Hit {
			return nil, apperr.Invalid("after", "is not a cursor this API issued for this list")
		}
		q.Where(ja4campaign.LastHitIDLT(after.ID))
	}
	rows, err := q.Order(ent.Desc(ja4campaign.FieldLastHitID)).Limit(n + 1).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("list JA4 campaigns: %w", err)
	}
	conn := &Ja4CampaignConnection{Edges: []*Ja4CampaignEdge{}, PageInfo: &entgql.PageInfo[string]{}}
	if len(rows) > n {
		rows, conn.PageInfo.HasNextPage = rows[:n], true
	}
	conn.PageInfo.HasPreviousPage = after != nil
	page := &CampaignPage{a: a, members: ja4campaignsession.Table, last: ja4campaignsession.FieldFirstHitID}
	for _, row := range rows {
		page.ids = append(page.ids, row.ID)
		conn.Edges = append(conn.Edges, &Ja4CampaignEdge{Cursor: entgql.Cursor[string]{ID: row.LastHitID},
			Node: &Ja4Campaign{Ja4Campaign: row, Page: page}})
	}
	if len(conn.Edges) > 0 {
		conn.PageInfo.StartCursor = &conn.Edges[0].Cursor
		conn.PageInfo.EndCursor = &conn.Edges[len(conn.Edges)-1].Cursor
	}
	return conn, nil
}

// ClientStack is the client stack family the JA4 points to, or nil.
func (c *Ja4Campaign) ClientStack() *string {
	if f := fingerprint.Family(c.Ja4, "", ""); f != "" {
		return &f
	}
	return nil
}

// LatestSessions is the first (at most 20; nil: 20) of the campaign's newest stored sessions (by
// their first hit with the JA4).
func (c *Ja4Campaign) LatestSessions(ctx context.Context, first *int) ([]*ent.Session, error) {
	return c.Page.latestSessions(ctx, c.ID, first)
}

// Addresses is the first (at most 20; nil: 20) distinct source addresses of the campaign's
// stored sessions, in order.
func (c *Ja4Campaign) Addresses(ctx context.Context, first *int) ([]string, error) {
	return c.Page.addressList(ctx, c.ID, first)
}
