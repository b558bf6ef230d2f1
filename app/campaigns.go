package app

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/campaign"
	"github.com/flytrap/flytrap/ent/campaignsession"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/ent/trap"
	"github.com/flytrap/flytrap/ids"
)

// Campaigns group the sessions that leaked the same prompt (its hash clusters one
// operator's prompt) with the same extracted operator and model. They are read from the
// maintained campaign rows (tally package, docs/counters.md): most recently active first,
// by the id of the newest prompt (ids sort by time); the cursor is that id, so pages stay
// stable as prompts arrive. A page's lists are loaded for all its campaigns at once, each a
// bounded run of an index per campaign: a page costs the same however many prompts and
// sessions are stored, in a handful of queries.

// maxCampaignList bounds a campaign's sessions and addresses lists.
const maxCampaignList = 20

// Campaign is a campaign as the API lists it: its stored row, and the page it was listed on,
// which loads what the page's campaigns' lists need in a few queries for all of them.
type Campaign struct {
	*ent.Campaign
	Page *CampaignPage
}

// CampaignConnection is a page of campaigns.
type CampaignConnection struct {
	Edges    []*CampaignEdge          `json:"edges"`
	PageInfo *entgql.PageInfo[string] `json:"pageInfo"`
}

// CampaignEdge is a campaign and its cursor.
type CampaignEdge struct {
	Node   *Campaign             `json:"node"`
	Cursor entgql.Cursor[string] `json:"cursor"`
}

// Campaigns is a page of the caller's campaigns, most recently active first: first of them
// (50 when nil) after the cursor of an earlier page's campaign.
func (a *App) Campaigns(ctx context.Context, first *int, after *entgql.Cursor[string]) (*CampaignConnection, error) {
	if err := CheckSiteScope(ctx, "read campaigns"); err != nil {
		return nil, err
	}
	n := 50
	if first != nil {
		n = *first
	}
	q := a.ent(ctx).Campaign.Query()
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
	conn := &CampaignConnection{Edges: []*CampaignEdge{}, PageInfo: &entgql.PageInfo[string]{}}
	if len(rows) > n {
		rows, conn.PageInfo.HasNextPage = rows[:n], true
	}
	conn.PageInfo.HasPreviousPage = after != nil
	page := &CampaignPage{a: a, members: campaignsession.Table, last: campaignsession.FieldLastPromptID}
	for _, row := range rows {
		page.ids = append(page.ids, row.ID)
		conn.Edges = append(conn.Edges, &CampaignEdge{Cursor: entgql.Cursor[string]{ID: row.LastPromptID},
			Node: &Campaign{Campaign: row, Page: page}})
	}
	if len(conn.Edges) > 0 {
		conn.PageInfo.StartCursor = &conn.Edges[0].Cursor
		conn.PageInfo.EndCursor = &conn.Edges[len(conn.Edges)-1].Cursor
	}
	return conn, nil
}

// listSize reads a campaign list's first argument (maxCampaignList when nil).
func listSize(first *int) (int, error) {
	if first == nil {
		return maxCampaignList, nil
	}
	if *first < 1 || *first > maxCampaignList {
		return 0, apperr.Invalid("first", "must be between 1 and %d", maxCampaignList)
	}
	return *first, nil
}

// LatestSessions is the first (at most 20; nil: 20) of the stored sessions that most recently
// leaked the campaign's prompt.
func (c *Campaign) LatestSessions(ctx context.Context, first *int) ([]*ent.Session, error) {
	return c.Page.latestSessions(ctx, c.ID, first)
}

// Addresses is the first (at most 20; nil: 20) distinct source addresses of the campaign's
// stored sessions, in order.
func (c *Campaign) Addresses(ctx context.Context, first *int) ([]string, error) {
	return c.Page.addressList(ctx, c.ID, first)
}

// latestSessions is the first (at most 20; nil: 20) of campaign id's latest members.
func (p *CampaignPage) latestSessions(ctx context.Context, id string, first *int) ([]*ent.Session, error) {
	n, err := listSize(first)
	if err != nil {
		return nil, err
	}
	ss, err := p.Sessions(ctx, id)
	if err != nil {
		return nil, err
	}
	return append([]*ent.Session{}, ss[:min(n, len(ss))]...), nil
}

// addressList is the first (at most 20; nil: 20) distinct source addresses of campaign id's
// stored sessions, in order.
func (p *CampaignPage) addressList(ctx context.Context, id string, first *int) ([]string, error) {
	n, err := listSize(first)
	if err != nil {
		return nil, err
	}
	out, err := p.Addresses(ctx, id)
	if err != nil {
		return nil, err
	}
	return append([]string{}, out[:min(n, len(out))]...), nil
}

// Traps is the traps the campaign's 20 latest sessions triggered.
func (c *Campaign) Traps(ctx context.Context) ([]*TrapRef, error) {
	return c.Page.Traps(ctx, c.ID)
}

// CampaignPage loads the lists of one page's campaigns: each list once, for all of them,
// when a field first asks (gqlgen resolves the fields concurrently; the others wait).
type CampaignPage struct {
	a             *App
	ids           []string // the campaigns, read through the tenant rule: the statements below take them as given
	members, last string   // the memberships' table and their latest item's column (campaign_sessions, last_prompt_id)

	sessionsOnce, addressesOnce, trapsOnce sync.Once
	sessions                               map[string][]*ent.Session
	addresses                              map[string][]string
	traps                                  map[string][]*TrapRef
	sessionsErr, addressesErr, trapsErr    error
}

// Sessions loads the 20 latest members of every campaign of the page in one statement (a
// UNION ALL of one index run each, along (campaign_id, last_prompt_id) or its like), then their sessions
// by primary key.
func (p *CampaignPage) Sessions(ctx context.Context, id string) ([]*ent.Session, error) {
	p.sessionsOnce.Do(func() { p.sessions, p.sessionsErr = p.loadSessions(ctx) })
	return p.sessions[id], p.sessionsErr
}

func (p *CampaignPage) loadSessions(ctx context.Context) (map[string][]*ent.Session, error) {
	c := p.a.ent(ctx)
	var b strings.Builder
	for i := range p.ids {
		if i > 0 {
			b.WriteString(" UNION ALL ")
		}
		fmt.Fprintf(&b, "SELECT campaign_id, session_id FROM (SELECT campaign_id, session_id FROM %s WHERE campaign_id = %s ORDER BY %s DESC LIMIT %d) m%d",
			p.members, param(c, i+1), p.last, maxCampaignList, i)
	}
	members := map[string][]string{}
	var list []string
	err := queryRows(ctx, c, b.String(), anys(p.ids), func(scan func(...any) error) error {
		var cid, sid string
		if err := scan(&cid, &sid); err != nil {
			return err
		}
		members[cid] = append(members[cid], sid)
		list = append(list, sid)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list campaign sessions: %w", err)
	}
	byID := map[string]*ent.Session{}
	if len(list) > 0 {
		// By primary key alone: these are the organization's sessions (its campaigns' members),
		// and with the tenant rule's org_id SQLite would walk the organization's sessions instead.
		ss, err := c.Session.Query().Where(session.IDIn(list...)).All(privacy.DecisionContext(ctx, privacy.Allow))
		if err != nil {
			return nil, fmt.Errorf("load campaign sessions: %w", err)
		}
		for _, s := range ss {
			byID[s.ID] = s
		}
	}
	out := make(map[string][]*ent.Session, len(members))
	for cid, sids := range members {
		ss := make([]*ent.Session, 0, len(sids))
		for _, sid := range sids {
			if s := byID[sid]; s != nil {
				ss = append(ss, s)
			}
		}
		out[cid] = ss
	}
	return out, nil
}

// Addresses loads the first 20 distinct source addresses of every campaign of the page in
// one statement: per campaign a loose index scan of (campaign_id, source_ip), one probe per
// address, so a campaign of a hundred thousand sessions from two addresses costs what one of
// three sessions does.
func (p *CampaignPage) Addresses(ctx context.Context, id string) ([]string, error) {
	p.addressesOnce.Do(func() { p.addresses, p.addressesErr = p.loadAddresses(ctx) })
	return p.addresses[id], p.addressesErr
}

func (p *CampaignPage) loadAddresses(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	if len(p.ids) == 0 {
		return out, nil
	}
	c := p.a.ent(ctx)
	var with, sel strings.Builder
	limit := param(c, len(p.ids)+1)
	for i := range p.ids {
		id := param(c, i+1)
		if i > 0 {
			with.WriteString(", ")
			sel.WriteString(" UNION ALL ")
		}
		fmt.Fprintf(&with, "a%d(ip, k) AS (SELECT MIN(source_ip), 1 FROM %s WHERE campaign_id = %s"+
			" UNION ALL SELECT (SELECT MIN(source_ip) FROM %s WHERE campaign_id = %s AND source_ip > a%d.ip), k + 1"+
			" FROM a%d WHERE a%d.ip IS NOT NULL AND k < %s)", i, p.members, id, p.members, id, i, i, i, limit)
		fmt.Fprintf(&sel, "SELECT %d, ip FROM a%d WHERE ip IS NOT NULL", i, i)
	}
	q := "WITH RECURSIVE " + with.String() + " " + sel.String()
	err := queryRows(ctx, c, q, append(anys(p.ids), maxCampaignList), func(scan func(...any) error) error {
		var i int
		var ip string
		if err := scan(&i, &ip); err != nil {
			return err
		}
		out[p.ids[i]] = append(out[p.ids[i]], ip)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list campaign addresses: %w", err)
	}
	for cid := range out {
		slices.Sort(out[cid]) // one arm's rows come in order; sorting again costs nothing and promises it
	}
	return out, nil
}

// Traps loads the traps the page's campaigns' latest sessions triggered, in one query.
func (p *CampaignPage) Traps(ctx context.Context, id string) ([]*TrapRef, error) {
	p.trapsOnce.Do(func() { p.traps, p.trapsErr = p.loadTraps(ctx) })
	out := p.traps[id]
	if out == nil {
		out = []*TrapRef{}
	}
	return out, p.trapsErr
}

func (p *CampaignPage) loadTraps(ctx context.Context) (map[string][]*TrapRef, error) {
	each := map[string][]string{}
	var all []string
	seenAll := map[string]bool{}
	for _, cid := range p.ids {
		ss, err := p.Sessions(ctx, cid)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, s := range ss {
			for _, t := range s.TrapsTriggered {
				if !seen[t] && len(each[cid]) < maxTrapRefs {
					seen[t] = true
					each[cid] = append(each[cid], t)
				}
				if !seenAll[t] {
					seenAll[t] = true
					all = append(all, t)
				}
			}
		}
	}
	byID := map[string]*ent.Trap{}
	for part := range slices.Chunk(all, 500) {
		ts, err := p.a.ent(ctx).Trap.Query().Where(trap.IDIn(part...)).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("load traps: %w", err)
		}
		for _, t := range ts {
			byID[t.ID] = t
		}
	}
	out := make(map[string][]*TrapRef, len(each))
	for cid, list := range each {
		out[cid] = refsOf(list, byID)
	}
	return out, nil
}

// param is the n-th parameter of a statement of c's dialect, which may be used more than once.
func param(c *ent.Client, n int) string {
	if c.Dialect() == "postgres" {
		return "$" + strconv.Itoa(n)
	}
	return "?" + strconv.Itoa(n)
}

// queryRows runs q and hands each row to row.
func queryRows(ctx context.Context, c *ent.Client, q string, args []any, row func(scan func(...any) error) error) error {
	if len(args) == 0 {
		return nil
	}
	rows, err := c.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// maxTrapRefs bounds the traps resolved for one session or campaign.
const maxTrapRefs = 100

// TrapRef is a trap as a session or campaign refers to it; a deleted trap keeps its id.
type TrapRef struct {
	ID      string  `json:"id"`
	Name    string  `json:"name"` // empty when the trap was deleted
	Path    *string `json:"path,omitempty"`
	Type    string  `json:"type"`
	Deleted bool    `json:"deleted"`
}

// TrapRefs resolves trap ids (at most maxTrapRefs) to names and paths, in the order given.
func (a *App) TrapRefs(ctx context.Context, ids []string) ([]*TrapRef, error) {
	if len(ids) > maxTrapRefs {
		ids = ids[:maxTrapRefs]
	}
	if len(ids) == 0 {
		return []*TrapRef{}, nil
	}
	traps, err := a.ent(ctx).Trap.Query().Where(trap.IDIn(ids...)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("load traps: %w", err)
	}
	byID := map[string]*ent.Trap{}
	for _, t := range traps {
		byID[t.ID] = t
	}
	return refsOf(ids, byID), nil
}

// refsOf is the references to ids, from the traps found; a deleted trap keeps its id.
func refsOf(ids []string, byID map[string]*ent.Trap) []*TrapRef {
	out := make([]*TrapRef, 0, len(ids))
	for _, id := range ids {
		t := byID[id]
		if t == nil {
			out = append(out, &TrapRef{ID: id, Deleted: true})
			continue
		}
		ref := &TrapRef{ID: t.ID, Name: t.Name, Type: string(t.Type)}
		if t.Path != "" {
			p := t.Path
			ref.Path = &p
		}
		out = append(out, ref)
	}
	return out
}
