package tally

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/campaign"
	"github.com/flytrap/flytrap/ent/campaignsession"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/prompt"
	"github.com/flytrap/flytrap/store/sqltext"
)

// Campaigns are the maintained aggregates of captured prompts (ent's Campaign and
// CampaignSession): per organization and (prompt hash, operator, model), the all-time count
// of prompts and of distinct sessions, the first and last prompt; per stored session of it,
// its prompts and latest prompt. A created prompt records itself in its transaction's Delta
// (record.CreatePrompts, the writer); at commit the memberships, then the campaigns, are upserted in key order
// before the counters, so concurrent writers lock them in one order.

// CampaignID names org's campaign of (hash, operator, model). It is derived from them, so
// every writer names the same row without reading it first.
func CampaignID(org, hash, operator, model string) string {
	h := sha256.New()
	for _, s := range []string{org, hash, operator, model} {
		h.Write(binary.AppendUvarint(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	return "cmp_" + hex.EncodeToString(h.Sum(nil)[:16])
}

// CampaignRow is a campaign as stored, or as a recount finds it: a prompt campaign's key is
// the prompt's hash with its operator and model; a JA4 campaign's is the JA4 (ja4.go). Count
// is its prompts, or hits; First and Last its first and last of them by id.
type CampaignRow struct {
	Org, Key, Operator, Model string
	Sessions, Count           int64
	FirstID, LastID           string
	FirstSeen, LastSeen       time.Time
}

// MemberKey is a session's membership of a campaign.
type MemberKey struct{ Campaign, Session string }

// MemberRow is a membership as stored, or as a recount finds it: the session's prompts of the
// campaign and the latest of them (LastID); of a JA4 campaign, its first hit with the JA4
// (LastID) and no count. SourceIP is the session's (read at commit when the delta does not
// know it).
type MemberRow struct {
	Org, SourceIP string
	Count         int64
	LastID        string
}

// Prompt records a captured prompt (id, captured at at) of session in its campaign.
func (d *Delta) Prompt(org, hash, operator, model, session, id string, at time.Time) {
	cid := CampaignID(org, hash, operator, model)
	d.addCampaign(cid, &CampaignRow{Org: org, Key: hash, Operator: operator, Model: model, Count: 1,
		FirstID: id, LastID: id, FirstSeen: at, LastSeen: at})
	d.addMember(MemberKey{cid, session}, &MemberRow{Org: org, Count: 1, LastID: id})
}

// mergeCampaigns adds o's campaigns to d's.
func (d *Delta) mergeCampaigns(o *Delta) {
	for id, c := range o.campaigns {
		d.addCampaign(id, c)
	}
	for k, m := range o.members {
		d.addMember(k, m)
	}
}

// addCampaign adds c's count to d's campaign id (a copy of c when d has none yet).
func (d *Delta) addCampaign(id string, c *CampaignRow) {
	if d.campaigns == nil {
		d.campaigns = map[string]*CampaignRow{}
	}
	cur := d.campaigns[id]
	if cur == nil {
		cp := *c
		d.campaigns[id] = &cp
		return
	}
	cur.Count += c.Count
	if c.FirstID < cur.FirstID {
		cur.FirstID, cur.FirstSeen = c.FirstID, c.FirstSeen
	}
	if c.LastID > cur.LastID {
		cur.LastID, cur.LastSeen = c.LastID, c.LastSeen
	}
}

// addMember adds m's count to d's membership k (a copy of m when d has none yet).
func (d *Delta) addMember(key MemberKey, m *MemberRow) {
	if d.members == nil {
		d.members = map[MemberKey]*MemberRow{}
	}
	cur := d.members[key]
	if cur == nil {
		cp := *m
		d.members[key] = &cp
		return
	}
	cur.Count += m.Count
	if k := kindOf(key.Campaign); k != nil && k.joinOnly {
		cur.LastID = min(cur.LastID, m.LastID) // its first item
	} else {
		cur.LastID = max(cur.LastID, m.LastID)
	}
	if cur.SourceIP == "" {
		cur.SourceIP = m.SourceIP
	}
}

// Querier runs a statement that returns rows: an *ent.Client, or an *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// campaignKind is a kind of maintained campaign: its id prefix, its two tables and the
// columns the upserts write, in order (after the campaign's id and organization, its key
// columns; then its sessions, count, first and last ids, first and last times). Campaigns of
// every kind share the Delta's maps: their ids' prefixes tell them apart.
type campaignKind struct {
	what, prefix       string
	table, members     string
	keys               []string // the key columns: as many as key returns
	count, first, last string   // the campaign's count and its first and last item ids
	// A membership's count and latest item (the prompt campaigns'), or, when joinOnly, its first
	// item alone (memberCount ""): inserted once, never updated.
	memberCount, memberItem string
	joinOnly                bool
	key                     func(*CampaignRow) []any
}

var (
	promptCampaigns = campaignKind{what: "campaign", prefix: "cmp_", table: campaign.Table, members: campaignsession.Table,
		keys:  []string{campaign.FieldPromptHash, campaign.FieldOperator, campaign.FieldModel},
		count: campaign.FieldPromptCount, first: campaign.FieldFirstPromptID, last: campaign.FieldLastPromptID,
		memberCount: campaignsession.FieldPrompts, memberItem: campaignsession.FieldLastPromptID,
		key: func(c *CampaignRow) []any { return []any{c.Key, c.Operator, c.Model} }}
	// campaignKinds are the kinds in the order their rows are written (one order for every writer).
	campaignKinds = []*campaignKind{&promptCampaigns, &ja4Campaigns}
)

// kindOf is the kind of the campaign id.
func kindOf(id string) *campaignKind {
	for _, k := range campaignKinds {
		if strings.HasPrefix(id, k.prefix) {
			return k
		}
	}
	return nil
}

// campaignRows bounds the rows of one campaign upsert (11 bound values a row at most).
const campaignRows = 200

// applyCampaigns writes d's campaigns, kind by kind: the memberships first, each learning
// whether it is new, then the campaigns, a new member adding one to the campaign's sessions.
// Both in key order.
func applyCampaigns(ctx context.Context, x Execer, pg bool, d *Delta) error {
	if len(d.campaigns) == 0 {
		return nil
	}
	q, ok := x.(Querier)
	if !ok {
		return fmt.Errorf("count campaigns: %T cannot query", x)
	}
	keys := make([]MemberKey, 0, len(d.members))
	var unknown []string // sessions whose address the delta does not know
	for k, m := range d.members {
		keys = append(keys, k)
		if m.SourceIP == "" {
			unknown = append(unknown, k.Session)
		}
	}
	slices.SortFunc(keys, func(a, b MemberKey) int {
		return cmp.Or(cmp.Compare(a.Campaign, b.Campaign), cmp.Compare(a.Session, b.Session))
	})
	ids := slices.Sorted(maps.Keys(d.campaigns))
	ips, err := sourceIPs(ctx, q, pg, unknown)
	if err != nil {
		return err
	}
	for _, kind := range campaignKinds {
		own := func(id string) bool { return kindOf(id) == kind }
		members := slices.DeleteFunc(slices.Clone(keys), func(k MemberKey) bool { return !own(k.Campaign) })
		campaigns := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !own(id) })
		if len(campaigns) == 0 {
			continue
		}
		added, err := kind.applyMembers(ctx, q, x, pg, d, members, ips)
		if err != nil {
			return err
		}
		if err := kind.applyCampaigns(ctx, x, pg, d, campaigns, added); err != nil {
			return err
		}
	}
	return nil
}

// applyMembers writes the memberships keys (sorted, all of kind k) and says how many of each
// campaign's are new: a join-only kind's insert returns the rows it inserted; otherwise a row
// holding exactly the delta's count after the upsert is new.
func (k *campaignKind) applyMembers(ctx context.Context, q Querier, x Execer, pg bool, d *Delta, keys []MemberKey, ips map[string]string) (map[string]int64, error) {
	cols := []string{"org_id", "campaign_id", "session_id", "source_ip", k.memberItem}
	if !k.joinOnly {
		cols = append(cols, k.memberCount)
	}
	added := map[string]int64{}
	all, inserted := keys, map[MemberKey]bool{}
	for len(keys) > 0 {
		part := keys[:min(len(keys), upsertRows)]
		keys = keys[len(part):]
		args := make([]any, 0, len(cols)*len(part))
		for _, mk := range part {
			m := d.members[mk]
			ip := m.SourceIP
			if ip == "" {
				var ok bool
				if ip, ok = ips[mk.Session]; !ok {
					return nil, fmt.Errorf("count %ss: session %s is not stored", k.what, mk.Session)
				}
			}
			args = append(args, m.Org, mk.Campaign, mk.Session, ip, m.LastID)
			if !k.joinOnly {
				args = append(args, m.Count)
			}
		}
		var b strings.Builder
		t := k.members
		b.WriteString("INSERT INTO " + t + " (" + strings.Join(cols, ", ") + ") VALUES ")
		sqltext.Values(&b, pg, len(part), sqltext.Columns(len(cols))...)
		if k.joinOnly {
			b.WriteString(" ON CONFLICT (campaign_id, session_id) DO NOTHING RETURNING campaign_id, session_id, 0")
		} else {
			b.WriteString(" ON CONFLICT (campaign_id, session_id) DO UPDATE SET " + k.memberCount + " = " + t + "." + k.memberCount + " + excluded." + k.memberCount + ", " +
				k.memberItem + " = " + greater(t, k.memberItem) + " RETURNING campaign_id, session_id, " + k.memberCount)
		}
		rows, err := q.QueryContext(ctx, b.String(), args...)
		if err != nil {
			return nil, fmt.Errorf("count %s sessions: %w", k.what, err)
		}
		for rows.Next() {
			var mk MemberKey
			var n int64
			if err := rows.Scan(&mk.Campaign, &mk.Session, &n); err != nil {
				rows.Close()
				return nil, err
			}
			if m := d.members[mk]; m != nil && (k.joinOnly || n == m.Count) {
				added[mk.Campaign]++
				if k.joinOnly {
					inserted[mk] = true
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("count %s sessions: %w", k.what, err)
		}
	}
	if k.joinOnly {
		// A membership already stored keeps the smaller first item: hits are written about, not
		// exactly, in the order of their ids (several requests of one visitor at once).
		var older []MemberKey
		for _, mk := range all {
			if !inserted[mk] {
				older = append(older, mk)
			}
		}
		for len(older) > 0 {
			part := older[:min(len(older), upsertRows)]
			older = older[len(part):]
			args := make([]any, 0, len(cols)*len(part))
			for _, mk := range part {
				m := d.members[mk]
				args = append(args, m.Org, mk.Campaign, mk.Session, cmp.Or(m.SourceIP, ips[mk.Session]), m.LastID)
			}
			// An upsert of rows that are there, not an UPDATE … FROM: PostgreSQL takes an upsert's
			// rows in their order (key order, as every writer), a join's in the plan's.
			var b strings.Builder
			t := k.members
			b.WriteString("INSERT INTO " + t + " (" + strings.Join(cols, ", ") + ") VALUES ")
			sqltext.Values(&b, pg, len(part), sqltext.Columns(len(cols))...)
			b.WriteString(" ON CONFLICT (campaign_id, session_id) DO UPDATE SET " + k.memberItem + " = excluded." + k.memberItem +
				" WHERE excluded." + k.memberItem + " < " + t + "." + k.memberItem)
			if _, err := x.ExecContext(ctx, b.String(), args...); err != nil {
				return nil, fmt.Errorf("count %s sessions: %w", k.what, err)
			}
		}
	}
	return added, nil
}

// applyCampaigns upserts the campaigns ids (sorted, all of kind k), each adding the delta's
// count and its new members.
func (k *campaignKind) applyCampaigns(ctx context.Context, x Execer, pg bool, d *Delta, ids []string, added map[string]int64) error {
	cols := append(append([]string{"id", "org_id"}, k.keys...), "session_count", k.count, k.first, k.last, "first_seen", "last_seen")
	for len(ids) > 0 {
		part := ids[:min(len(ids), campaignRows)]
		ids = ids[len(part):]
		args := make([]any, 0, len(cols)*len(part))
		for _, id := range part {
			c := d.campaigns[id]
			args = append(args, id, c.Org)
			args = append(args, k.key(c)...)
			args = append(args, added[id], c.Count, c.FirstID, c.LastID, c.FirstSeen.UTC(), c.LastSeen.UTC())
		}
		var b strings.Builder
		t := k.table
		b.WriteString("INSERT INTO " + t + " (" + strings.Join(cols, ", ") + ") VALUES ")
		sqltext.Values(&b, pg, len(part), sqltext.Columns(len(cols))...)
		b.WriteString(" ON CONFLICT (id) DO UPDATE SET session_count = " + t + ".session_count + excluded.session_count, " +
			k.count + " = " + t + "." + k.count + " + excluded." + k.count + ", " +
			"first_seen = CASE WHEN excluded." + k.first + " < " + t + "." + k.first + " THEN excluded.first_seen ELSE " + t + ".first_seen END, " +
			k.first + " = CASE WHEN excluded." + k.first + " < " + t + "." + k.first + " THEN excluded." + k.first + " ELSE " + t + "." + k.first + " END, " +
			"last_seen = CASE WHEN excluded." + k.last + " > " + t + "." + k.last + " THEN excluded.last_seen ELSE " + t + ".last_seen END, " +
			k.last + " = " + greater(t, k.last))
		if _, err := x.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("count %ss: %w", k.what, err)
		}
	}
	return nil
}

// greater is the larger of table's col and the proposed row's (every SET expression reads
// the row as it was).
func greater(table, col string) string {
	return "CASE WHEN excluded." + col + " > " + table + "." + col + " THEN excluded." + col + " ELSE " + table + "." + col + " END"
}

// sourceIPs reads the source addresses of sessions (sorted, maybe repeated).
func sourceIPs(ctx context.Context, q Querier, pg bool, sessions []string) (map[string]string, error) {
	sessions = slices.Compact(slices.Sorted(slices.Values(sessions)))
	out := make(map[string]string, len(sessions))
	for len(sessions) > 0 {
		part := sessions[:min(len(sessions), upsertRows)]
		sessions = sessions[len(part):]
		var b strings.Builder
		b.WriteString("SELECT id, source_ip FROM sessions WHERE id IN ")
		sqltext.Values(&b, pg, 1, sqltext.Columns(len(part))...)
		args := make([]any, len(part))
		for i, s := range part {
			args[i] = s
		}
		rows, err := q.QueryContext(ctx, b.String(), args...)
		if err != nil {
			return nil, fmt.Errorf("read campaign sessions' addresses: %w", err)
		}
		for rows.Next() {
			var id, ip string
			if err := rows.Scan(&id, &ip); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = ip
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Campaigns is every campaign and membership, as stored or as recounted.
type Campaigns struct {
	Rows    map[string]CampaignRow
	Members map[MemberKey]MemberRow
}

// RecountCampaigns counts the campaigns from scratch over the stored prompts (in pages by
// id, so memory follows the campaigns, not the prompts): the upgrade's backfill and the tests'
// check, never a request. The result is as a Delta too, to write.
func RecountCampaigns(ctx context.Context, c *ent.Client) (*Campaigns, *Delta, error) {
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	var d Delta
	after := ""
	for {
		ps, err := c.Prompt.Query().Where(prompt.IDGT(after)).Order(ent.Asc(prompt.FieldID)).Limit(10000).
			Select(prompt.FieldOrgID, prompt.FieldHash, prompt.FieldOperator, prompt.FieldModel, prompt.FieldSessionID, prompt.FieldCreatedAt).
			All(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("recount campaigns: %w", err)
		}
		for _, p := range ps {
			d.Prompt(p.OrgID, p.Hash, p.Operator, p.Model, p.SessionID, p.ID, p.CreatedAt)
		}
		if len(ps) < 10000 {
			break
		}
		after = ps[len(ps)-1].ID
	}
	out, err := d.recounted(ctx, c)
	return out, &d, err
}

// recounted is d, a recount's delta, as the rows it makes: each membership with its session's
// address (read from the sessions), each campaign with its count of members.
func (d *Delta) recounted(ctx context.Context, c *ent.Client) (*Campaigns, error) {
	sessions := make([]string, 0, len(d.members))
	for k := range d.members {
		sessions = append(sessions, k.Session)
	}
	ips, err := sourceIPs(ctx, c, c.Dialect() == "postgres", sessions)
	if err != nil {
		return nil, err
	}
	out := &Campaigns{Rows: map[string]CampaignRow{}, Members: map[MemberKey]MemberRow{}}
	for k, m := range d.members {
		r := *m
		r.SourceIP = ips[k.Session]
		out.Members[k] = r
	}
	sessionsOf := map[string]int64{}
	for k := range d.members {
		sessionsOf[k.Campaign]++
	}
	for id, cr := range d.campaigns {
		r := *cr
		r.Sessions = sessionsOf[id]
		out.Rows[id] = r
	}
	return out, nil
}

// StoredCampaigns reads every campaign and membership as stored.
func StoredCampaigns(ctx context.Context, c *ent.Client) (*Campaigns, error) {
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	out := &Campaigns{Rows: map[string]CampaignRow{}, Members: map[MemberKey]MemberRow{}}
	cs, err := c.Campaign.Query().All(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range cs {
		out.Rows[r.ID] = CampaignRow{Org: r.OrgID, Key: r.PromptHash, Operator: r.Operator, Model: r.Model, Sessions: r.SessionCount,
			Count: r.PromptCount, FirstID: r.FirstPromptID, LastID: r.LastPromptID, FirstSeen: r.FirstSeen, LastSeen: r.LastSeen}
	}
	ms, err := c.CampaignSession.Query().All(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		out.Members[MemberKey{m.CampaignID, m.SessionID}] = MemberRow{Org: m.OrgID, SourceIP: m.SourceIP, Count: m.Prompts, LastID: m.LastPromptID}
	}
	return out, nil
}

// Diff describes where a and b differ ("" when they agree; times to the millisecond), for a
// test's failure message and the seed tool's check.
func (a *Campaigns) Diff(b *Campaigns) string {
	var out []string
	same := func(x, y CampaignRow) bool {
		return x.Org == y.Org && x.Key == y.Key && x.Operator == y.Operator && x.Model == y.Model && x.Sessions == y.Sessions &&
			x.Count == y.Count && x.FirstID == y.FirstID && x.LastID == y.LastID &&
			x.FirstSeen.UnixMilli() == y.FirstSeen.UnixMilli() && x.LastSeen.UnixMilli() == y.LastSeen.UnixMilli()
	}
	for id, x := range a.Rows {
		if y, ok := b.Rows[id]; !ok || !same(x, y) {
			out = append(out, fmt.Sprintf("campaign %s: %+v vs %+v", id, x, y))
		}
	}
	for id, y := range b.Rows {
		if _, ok := a.Rows[id]; !ok {
			out = append(out, fmt.Sprintf("campaign %s: none vs %+v", id, y))
		}
	}
	for k, x := range a.Members {
		if y, ok := b.Members[k]; !ok || x != y {
			out = append(out, fmt.Sprintf("member %v: %+v vs %+v", k, x, y))
		}
	}
	for k, y := range b.Members {
		if _, ok := a.Members[k]; !ok {
			out = append(out, fmt.Sprintf("member %v: none vs %+v", k, y))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}
