package tally

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/ja4campaign"
	"github.com/flytrap/flytrap/ent/ja4campaignsession"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/store/upgrade"
)

// JA4 campaigns (ent's Ja4Campaign and Ja4CampaignSession) group an organization's sessions
// by the TLS client of their hits: per organization and JA4, the all-time count of hits and of
// distinct sessions, the first and last hit; per stored session, its first hit with the JA4
// (a membership is inserted once: a returning visitor's hits update the campaign's row alone).
// The writer notes each stored hit that has a JA4 (record.Writer); they are written at commit
// with the prompt campaigns, by the same upserts (campaign.go).

var ja4Campaigns = campaignKind{what: "JA4 campaign", prefix: "j4c_", table: ja4campaign.Table, members: ja4campaignsession.Table,
	keys:  []string{ja4campaign.FieldJa4},
	count: ja4campaign.FieldHitCount, first: ja4campaign.FieldFirstHitID, last: ja4campaign.FieldLastHitID,
	memberItem: ja4campaignsession.FieldFirstHitID, joinOnly: true,
	key: func(c *CampaignRow) []any { return []any{c.Key} }}

// Ja4CampaignID names org's campaign of the JA4 ja4, derived from them as CampaignID is.
func Ja4CampaignID(org, ja4 string) string {
	h := sha256.Sum256([]byte(org + "\x00" + ja4))
	return ja4Campaigns.prefix + hex.EncodeToString(h[:16])
}

// Ja4Hit records a stored hit (id, received at at) with the JA4 ja4 of session, whose source
// address is ip ("": read at commit). member false says the session is known to be a member
// already (the writer remembers the JA4s it stored of a session): only the campaign's row is
// written.
func (d *Delta) Ja4Hit(org, ja4, session, ip, id string, at time.Time, member bool) {
	cid := Ja4CampaignID(org, ja4)
	d.addCampaign(cid, &CampaignRow{Org: org, Key: ja4, Count: 1, FirstID: id, LastID: id, FirstSeen: at, LastSeen: at})
	if member {
		d.addMember(MemberKey{cid, session}, &MemberRow{Org: org, SourceIP: ip, LastID: id})
	}
}

// RecountJa4Campaigns counts the JA4 campaigns from scratch over the stored hits that have a
// JA4 (in pages by id): the upgrade's backfill and the tests' check, never a
// request. The result is as a Delta too, to write.
func RecountJa4Campaigns(ctx context.Context, c *ent.Client) (*Campaigns, *Delta, error) {
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	var d Delta
	after := ""
	for {
		hs, err := c.Hit.Query().Where(hit.IDGT(after), hit.Ja4NotNil()).Order(ent.Asc(hit.FieldID)).Limit(10000).
			Select(hit.FieldOrgID, hit.FieldJa4, hit.FieldSessionID, hit.FieldReceivedAt).All(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("recount JA4 campaigns: %w", err)
		}
		for _, h := range hs {
			if h.Ja4 != nil && *h.Ja4 != "" {
				d.Ja4Hit(h.OrgID, *h.Ja4, h.SessionID, "", h.ID, h.ReceivedAt, true)
			}
		}
		if len(hs) < 10000 {
			break
		}
		after = hs[len(hs)-1].ID
	}
	out, err := d.recounted(ctx, c)
	return out, &d, err
}

// StoredJa4Campaigns reads every JA4 campaign and membership as stored.
func StoredJa4Campaigns(ctx context.Context, c *ent.Client) (*Campaigns, error) {
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	out := &Campaigns{Rows: map[string]CampaignRow{}, Members: map[MemberKey]MemberRow{}}
	cs, err := c.Ja4Campaign.Query().All(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range cs {
		out.Rows[r.ID] = CampaignRow{Org: r.OrgID, Key: r.Ja4, Sessions: r.SessionCount, Count: r.HitCount,
			FirstID: r.FirstHitID, LastID: r.LastHitID, FirstSeen: r.FirstSeen, LastSeen: r.LastSeen}
	}
	ms, err := c.Ja4CampaignSession.Query().All(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		out.Members[MemberKey{m.CampaignID, m.SessionID}] = MemberRow{Org: m.OrgID, SourceIP: m.SourceIP, LastID: m.FirstHitID}
	}
	return out, nil
}

// ja4Upgrade names the JA4 campaigns' backfill in flytrap_upgrades.
const ja4Upgrade = "ja4-campaigns-backfill-1"

// BackfillJa4Campaigns fills the JA4 campaigns of a database that stored hits with a JA4
// before they were maintained, once: it groups the stored hits (a purged hit cannot be
// counted any more) in one transaction.
func BackfillJa4Campaigns(ctx context.Context, c *ent.Client) (done bool, err error) {
	return upgrade.Once(ctx, c, ja4Upgrade, func(ctx context.Context, tx *ent.Tx) error {
		sys := privacy.DecisionContext(ctx, privacy.Allow)
		if _, err := tx.Ja4CampaignSession.Delete().Exec(sys); err != nil {
			return err
		}
		if _, err := tx.Ja4Campaign.Delete().Exec(sys); err != nil {
			return err
		}
		_, d, err := RecountJa4Campaigns(ctx, tx.Client())
		if err != nil {
			return err
		}
		return Apply(ctx, tx.Client(), d)
	})
}
