package graph

import (
	"context"
	"fmt"
	"time"

	"entgo.io/contrib/entgql"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/predicate"
	"github.com/flytrap/flytrap/ent/prompt"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/graph/model"
)

// Campaigns group the sessions that leaked the same prompt (its hash clusters one
// operator's prompt) with the same extracted operator and model. They are computed from
// the prompts table on each request, most recently active first (by the newest prompt's
// id, which sorts by time); the cursor is that id, so pages stay stable as prompts arrive.

// maxCampaignList bounds a campaign's sessions and addresses lists.
const maxCampaignList = 20

// campaignWindow is how many of the organization's newest captured prompts campaigns are
// grouped from: a bound on the GROUP BY, so the list costs the same however many prompts
// the organization has captured (docs/counters.md). A campaign whose prompts are all older
// is not listed; the counts of one that is cover its prompts within the window.
const campaignWindow = 10000

// Campaigns is the resolver for the campaigns field.
func (r *queryResolver) Campaigns(ctx context.Context, first *int, after *entgql.Cursor[string]) (*model.CampaignConnection, error) {
	n := 50
	if first != nil {
		n = *first
	}
	var rows []struct {
		Hash     string `json:"hash"`
		Operator string `json:"operator"`
		Model    string `json:"model"`
		Sessions int    `json:"sessions"`
		Prompts  int    `json:"prompts"`
		Last     string `json:"last"`
	}
	c := r.ent(ctx)
	var window []predicate.Prompt
	// The oldest prompt of the window, read along the (org_id, id) index.
	oldest, err := c.Prompt.Query().Order(ent.Desc(prompt.FieldID)).Offset(campaignWindow - 1).Limit(1).IDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("bound campaigns: %w", err)
	}
	if len(oldest) == 1 {
		window = append(window, prompt.IDGTE(oldest[0]))
	}
	err = c.Prompt.Query().Where(window...).Modify(func(q *entsql.Selector) {
		last := entsql.Max(q.C(prompt.FieldID))
		q.Select(q.C(prompt.FieldHash), q.C(prompt.FieldOperator), q.C(prompt.FieldModel),
			entsql.As(entsql.Count("DISTINCT "+q.C(prompt.FieldSessionID)), "sessions"),
			entsql.As(entsql.Count("*"), "prompts"), entsql.As(last, "last")).
			GroupBy(q.C(prompt.FieldHash), q.C(prompt.FieldOperator), q.C(prompt.FieldModel)).
			OrderExpr(entsql.Expr(last + " DESC")).Limit(n + 1)
		if after != nil {
			q.Having(entsql.LT(last, after.ID))
		}
	}).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("group campaigns: %w", err)
	}
	conn := &model.CampaignConnection{Edges: []*model.CampaignEdge{}, PageInfo: &entgql.PageInfo[string]{}}
	if len(rows) > n {
		rows, conn.PageInfo.HasNextPage = rows[:n], true
	}
	conn.PageInfo.HasPreviousPage = after != nil
	for _, row := range rows {
		cur := entgql.Cursor[string]{ID: row.Last}
		conn.Edges = append(conn.Edges, &model.CampaignEdge{Cursor: cur, Node: &model.Campaign{
			PromptHash: row.Hash, Operator: row.Operator, Model: row.Model, SessionCount: row.Sessions, PromptCount: row.Prompts,
		}})
	}
	if len(conn.Edges) > 0 {
		conn.PageInfo.StartCursor = &conn.Edges[0].Cursor
		conn.PageInfo.EndCursor = &conn.Edges[len(conn.Edges)-1].Cursor
	}
	return conn, nil
}

// inCampaign selects the sessions of campaign c.
func inCampaign(c *model.Campaign) predicate.Session {
	return session.HasPromptsWith(prompt.Hash(c.PromptHash), prompt.Operator(c.Operator), prompt.Model(c.Model))
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

// FirstSeen is the resolver for the firstSeen field.
func (r *campaignResolver) FirstSeen(ctx context.Context, obj *model.Campaign) (*time.Time, error) {
	s, err := r.ent(ctx).Session.Query().Where(inCampaign(obj)).Order(ent.Asc(session.FieldFirstSeen)).
		Select(session.FieldFirstSeen).First(ctx)
	if err != nil {
		return nil, err
	}
	return &s.FirstSeen, nil
}

// LastSeen is the resolver for the lastSeen field.
func (r *campaignResolver) LastSeen(ctx context.Context, obj *model.Campaign) (*time.Time, error) {
	s, err := r.ent(ctx).Session.Query().Where(inCampaign(obj)).Order(ent.Desc(session.FieldLastSeen)).
		Select(session.FieldLastSeen).First(ctx)
	if err != nil {
		return nil, err
	}
	return &s.LastSeen, nil
}

// Sessions is the resolver for the sessions field: the most recently seen first.
func (r *campaignResolver) Sessions(ctx context.Context, obj *model.Campaign, first *int) ([]*ent.Session, error) {
	n, err := listSize(first)
	if err != nil {
		return nil, err
	}
	return r.ent(ctx).Session.Query().Where(inCampaign(obj)).
		Order(ent.Desc(session.FieldLastSeen), ent.Desc(session.FieldID)).Limit(n).All(ctx)
}

// Addresses is the resolver for the addresses field.
func (r *campaignResolver) Addresses(ctx context.Context, obj *model.Campaign, first *int) ([]string, error) {
	n, err := listSize(first)
	if err != nil {
		return nil, err
	}
	out, err := r.ent(ctx).Session.Query().Where(inCampaign(obj)).Unique(true).
		Order(ent.Asc(session.FieldSourceIP)).Limit(n).Select(session.FieldSourceIP).Strings(ctx)
	if out == nil {
		out = []string{}
	}
	return out, err
}

// Traps is the resolver for the traps field: the traps of its most recent sessions.
func (r *campaignResolver) Traps(ctx context.Context, obj *model.Campaign) ([]*model.TrapRef, error) {
	ss, err := r.ent(ctx).Session.Query().Where(inCampaign(obj)).Order(ent.Desc(session.FieldLastSeen)).
		Limit(maxCampaignList).Select(session.FieldTrapsTriggered).All(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	seen := map[string]bool{}
	for _, s := range ss {
		for _, id := range s.TrapsTriggered {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	return r.trapRefs(ctx, ids)
}

// Campaign returns CampaignResolver implementation.
func (r *Resolver) Campaign() CampaignResolver { return &campaignResolver{r} }

type campaignResolver struct{ *Resolver }
