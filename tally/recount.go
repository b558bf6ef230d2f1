package tally

import (
	"context"
	"fmt"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/store/upgrade"
)

// Recount counts from scratch what the counters hold, over the raw rows: every stored
// hit in its hour, every stored session. It scans the hits and sessions tables: the
// upgrade's backfill and the tests' check, never a request.
func Recount(ctx context.Context, c *ent.Client) (*Delta, error) {
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	var d Delta
	var hours []struct {
		Org   string  `json:"org_id"`
		Trap  *string `json:"trap_id"`
		Hour  *int64  `json:"received_hour"`
		Count int64   `json:"count"`
	}
	err := c.Hit.Query().GroupBy(hit.FieldOrgID, hit.FieldTrapID, hit.FieldReceivedHour).Aggregate(ent.Count()).Scan(ctx, &hours)
	if err != nil {
		return nil, fmt.Errorf("recount hits: %w", err)
	}
	for _, h := range hours {
		if h.Hour == nil {
			continue // no hit is stored without its hour (ent's hook and the writer set it)
		}
		d.hits(h.Org, AllTraps, *h.Hour, h.Count)
		if h.Trap != nil && *h.Trap != "" {
			d.hits(h.Org, *h.Trap, *h.Hour, h.Count)
		}
	}
	var sessions []struct {
		Org       string `json:"org_id"`
		Severity  string `json:"severity"`
		Class     string `json:"classification"`
		Count     int64  `json:"count"`
		Tripwires int64  `json:"tripwires"`
		Prompts   int64  `json:"prompts"`
	}
	err = c.Session.Query().GroupBy(session.FieldOrgID, session.FieldSeverity, session.FieldClassification).
		Aggregate(ent.Count(), ent.As(ent.Sum(session.FieldTripwiresFired), "tripwires"),
			ent.As(ent.Sum(session.FieldPromptsCaptured), "prompts")).Scan(ctx, &sessions)
	if err != nil {
		return nil, fmt.Errorf("recount sessions: %w", err)
	}
	for _, s := range sessions {
		d.Add(s.Org, SessionsName(s.Severity, s.Class), s.Count)
		d.Add(s.Org, Tripwires, s.Tripwires)
		d.Add(s.Org, Prompts, s.Prompts)
	}
	return &d, nil
}

// Stored reads every counter as stored.
func Stored(ctx context.Context, c *ent.Client) (*Delta, error) {
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	var d Delta
	hours, err := c.HitHour.Query().All(ctx)
	if err != nil {
		return nil, err
	}
	for _, h := range hours {
		d.hits(h.OrgID, h.TrapID, h.Hour, h.Hits)
	}
	names, err := c.Counter.Query().All(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		d.Add(n.OrgID, n.Name, n.Value)
	}
	return &d, nil
}

// upgradeName names the backfill in the flytrap_upgrades table (store/upgrade).
const upgradeName = "tally-backfill-1"

// Backfill fills the counters of a database stored before they existed, once (upgrade.Once):
// in one transaction it recounts the raw rows into them.
func Backfill(ctx context.Context, c *ent.Client) (done bool, err error) {
	return upgrade.Once(ctx, c, upgradeName, func(ctx context.Context, tx *ent.Tx) error {
		sys := privacy.DecisionContext(ctx, privacy.Allow)
		// Counters written before the note (none, unless a previous attempt failed) start over.
		if _, err := tx.HitHour.Delete().Exec(sys); err != nil {
			return err
		}
		if _, err := tx.Counter.Delete().Exec(sys); err != nil {
			return err
		}
		d, err := Recount(ctx, tx.Client())
		if err != nil {
			return err
		}
		return Apply(ctx, tx.Client(), d)
	})
}

// campaignsUpgrade names the campaigns' backfill in flytrap_upgrades.
const campaignsUpgrade = "campaigns-backfill-1"

// BackfillCampaigns fills the campaigns of a database that captured prompts before they were
// maintained, once, as Backfill does the counters: it groups the stored prompts (a purged
// prompt cannot be counted any more) in one transaction.
func BackfillCampaigns(ctx context.Context, c *ent.Client) (done bool, err error) {
	return upgrade.Once(ctx, c, campaignsUpgrade, func(ctx context.Context, tx *ent.Tx) error {
		sys := privacy.DecisionContext(ctx, privacy.Allow)
		if _, err := tx.CampaignSession.Delete().Exec(sys); err != nil {
			return err
		}
		if _, err := tx.Campaign.Delete().Exec(sys); err != nil {
			return err
		}
		_, d, err := RecountCampaigns(ctx, tx.Client())
		if err != nil {
			return err
		}
		return Apply(ctx, tx.Client(), d)
	})
}
