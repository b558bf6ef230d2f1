package graph

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/campaign"
	"github.com/flytrap/flytrap/ent/campaignsession"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/graph/model"
	"github.com/flytrap/flytrap/ids"
)

// Campaigns group the sessions that leaked the same prompt (its hash clusters one
// operator's prompt) with the same extracted operator and model. They are read from the
// maintained campaign rows (tally package, docs/counters.md): most recently active first,
// by the id of the newest prompt (ids sort by time); the cursor is that id, so pages stay
// stable as prompts arrive. Every field reads a bounded run of an index: a page costs the
// same however many prompts and sessions are stored.

// maxCampaignList bounds a campaign's sessions and addresses lists.
const maxCampaignList = 20

// Campaigns is the resolver for the campaigns field.
func (r *queryResolver) Campaigns(ctx context.Context, first *int, after *entgql.Cursor[string]) (*model.CampaignConnection, error) {
	n := 50
	if first != nil {
		n = *first
	}
	q := r.ent(ctx).Campaign.Query()
	if after != nil {
		if ids.Prefix(after.ID) != ids.Prompt {
			return nil, apperr.Invalid("after", "is not a cursor this API issued for this list")
		}
		q.Where(campaign.LastPromptIDLT(after.ID))
	}
	rows, err := q.Order(ent.Desc(campaign.FieldLastPromptID)).Limit(n + 1).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("list campaigns: %w", err)
	}
	conn := &model.CampaignConnection{Edges: []*model.CampaignEdge{}, PageInfo: &entgql.PageInfo[string]{}}
	if len(rows) > n {
		rows, conn.PageInfo.HasNextPage = rows[:n], true
	}
	conn.PageInfo.HasPreviousPage = after != nil
	for _, row := range rows {
		conn.Edges = append(conn.Edges, &model.CampaignEdge{Cursor: entgql.Cursor[string]{ID: row.LastPromptID}, Node: row})
	}
	if len(conn.Edges) > 0 {
		conn.PageInfo.StartCursor = &conn.Edges[0].Cursor
		conn.PageInfo.EndCursor = &conn.Edges[len(conn.Edges)-1].Cursor
	}
	return conn, nil
}

func listSize(first *int) (int, error) {
	if first == nil {
		return maxCampaignList, nil
	}
	if *first < 1 || *first > maxCampaignList {
		return 0, apperr.Invalid("first", "must be between 1 and %d", maxCampaignList)
	}
	return *first, nil
}

// recentSessions is the stored sessions that most recently leaked c's prompt, newest leak
// first: n memberships along (campaign_id, last_prompt_id), then their sessions by id.
func (r *Resolver) recentSessions(ctx context.Context, c *ent.Campaign, n int, fields ...string) ([]*ent.Session, error) {
	c2 := r.ent(ctx)
	list, err := c2.CampaignSession.Query().Where(campaignsession.CampaignID(c.ID)).
		Order(ent.Desc(campaignsession.FieldLastPromptID)).Limit(n).Select(campaignsession.FieldSessionID).Strings(ctx)
	if err != nil || len(list) == 0 {
		return []*ent.Session{}, err
	}
	q := c2.Session.Query().Where(session.IDIn(list...))
	if len(fields) > 0 {
		q.Select(fields...)
	}
	ss, err := q.All(ctx)
	if err != nil {
		return nil, err
	}
	pos := make(map[string]int, len(list))
	for i, id := range list {
		pos[id] = i
	}
	slices.SortFunc(ss, func(a, b *ent.Session) int { return pos[a.ID] - pos[b.ID] })
	return ss, nil
}

// Sessions is the resolver for the sessions field: the sessions that most recently leaked the prompt.
func (r *campaignResolver) Sessions(ctx context.Context, obj *ent.Campaign, first *int) ([]*ent.Session, error) {
	n, err := listSize(first)
	if err != nil {
		return nil, err
	}
	return r.recentSessions(ctx, obj, n)
}

// addressesSQL lists the first distinct source addresses of a campaign's stored sessions,
// one index probe each (a loose index scan on (campaign_id, source_ip)), so a campaign of a
// hundred thousand sessions from two addresses costs what one of three sessions does.
const addressesSQL = `WITH RECURSIVE a(ip, k) AS (
  SELECT MIN(source_ip), 1 FROM campaign_sessions WHERE campaign_id = $1
  UNION ALL
  SELECT (SELECT MIN(source_ip) FROM campaign_sessions WHERE campaign_id = $1 AND source_ip > a.ip), k + 1 FROM a WHERE a.ip IS NOT NULL AND k < $2
) SELECT ip FROM a WHERE ip IS NOT NULL`

// Addresses is the resolver for the addresses field.
func (r *campaignResolver) Addresses(ctx context.Context, obj *ent.Campaign, first *int) ([]string, error) {
	n, err := listSize(first)
	if err != nil {
		return nil, err
	}
	c := r.ent(ctx)
	q := addressesSQL
	if c.Dialect() != "postgres" {
		q = sqliteParams.Replace(q)
	}
	// Raw SQL passes no privacy rule: obj was read through one, and its id names its organization's campaign alone.
	rows, err := c.QueryContext(ctx, q, obj.ID, n)
	if err != nil {
		return nil, fmt.Errorf("list campaign addresses: %w", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var ip string
		if err := rows.Scan(&ip); err != nil {
			return nil, err
		}
		out = append(out, ip)
	}
	return out, rows.Err()
}

// sqliteParams numbers SQLite's parameters as PostgreSQL's ($1 reused is ?1 reused).
var sqliteParams = strings.NewReplacer("$1", "?1", "$2", "?2")

// Traps is the resolver for the traps field: the traps of its most recent sessions.
func (r *campaignResolver) Traps(ctx context.Context, obj *ent.Campaign) ([]*model.TrapRef, error) {
	ss, err := r.recentSessions(ctx, obj, maxCampaignList, session.FieldID, session.FieldTrapsTriggered)
	if err != nil {
		return nil, err
	}
	var list []string
	seen := map[string]bool{}
	for _, s := range ss {
		for _, id := range s.TrapsTriggered {
			if !seen[id] {
				seen[id] = true
				list = append(list, id)
			}
		}
	}
	return r.trapRefs(ctx, list)
}

// Campaign returns CampaignResolver implementation.
func (r *Resolver) Campaign() CampaignResolver { return &campaignResolver{r} }

type campaignResolver struct{ *Resolver }
