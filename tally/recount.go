package tally

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/session"
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

// upgrade names the backfill in the flytrap_upgrades table, where each one-time upgrade
// step notes that it ran.
const upgrade = "tally-backfill-1"

// Backfill fills the counters of a database stored before they existed, once: in one
// transaction it recounts the raw rows into them and notes that it did. Open runs it at
// every start, under PostgreSQL's migration lock, so of several instances one does it; a
// database created with the counters gets the note on its first start, with nothing to count.
func Backfill(ctx context.Context, c *ent.Client) (done bool, err error) {
	return once(ctx, c, upgrade, func(ctx context.Context, tx *ent.Tx) error {
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
	return once(ctx, c, campaignsUpgrade, func(ctx context.Context, tx *ent.Tx) error {
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

// once runs step in a transaction unless flytrap_upgrades notes name, and notes it in that
// transaction.
func once(ctx context.Context, c *ent.Client, name string, step func(context.Context, *ent.Tx) error) (done bool, err error) {
	if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS flytrap_upgrades (name VARCHAR(64) PRIMARY KEY, done_at BIGINT NOT NULL)`); err != nil {
		return false, fmt.Errorf("create the upgrades table: %w", err)
	}
	tx, err := c.Tx(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	q := "SELECT COUNT(*) FROM flytrap_upgrades WHERE name = $1"
	if c.Dialect() != "postgres" {
		q = strings.ReplaceAll(q, "$1", "?")
	}
	rows, err := tx.QueryContext(ctx, q, name)
	if err != nil {
		return false, fmt.Errorf("read the upgrades table: %w", err)
	}
	var n int
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return false, err
		}
	}
	rows.Close()
	if n > 0 {
		return false, nil
	}
	if err := step(ctx, tx); err != nil {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	ins := "INSERT INTO flytrap_upgrades (name, done_at) VALUES ($1, $2)"
	if c.Dialect() != "postgres" {
		ins = strings.NewReplacer("$1", "?", "$2", "?").Replace(ins)
	}
	if _, err := tx.ExecContext(ctx, ins, name, time.Now().UnixMilli()); err != nil {
		return false, fmt.Errorf("note the %s upgrade: %w", name, err)
	}
	return true, tx.Commit()
}
