package record

import (
	"context"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/tally"
)

// insertSignals inserts the signals the hits fired (n in all), one multi-row INSERT.
func insertSignals(ctx context.Context, c *ent.Client, hits []*Hit, n int) error {
	signals := make([]*ent.SignalCreate, 0, n)
	for _, h := range hits {
		for _, f := range h.Outcome.Firings {
			sc := c.Signal.Create().SetOrgID(h.Org).SetSessionID(h.Session.ID).SetHitID(h.ID).SetName(f.Name).
				SetTripwire(detect.IsTripwire(f.Name)).SetPlacement(f.Placement).SetSourceHitID(f.Source).
				SetDetail(Bound(f.Detail, 2048)).SetCreatedAt(h.At)
			if f.Delay != nil {
				sc.SetDelayMs(*f.Delay)
			}
			signals = append(signals, sc)
		}
	}
	if err := c.Signal.CreateBulk(signals...).Exec(ctx); err != nil {
		return errf("insert signals", err)
	}
	return nil
}

// insertPrompts inserts the prompts the hits captured (n in all), one multi-row INSERT,
// and records each in its campaign (d).
func insertPrompts(ctx context.Context, c *ent.Client, d *tally.Delta, hits []*Hit, n int) error {
	prompts := make([]*ent.PromptCreate, 0, n)
	for _, h := range hits {
		for _, p := range h.Outcome.Prompts {
			id, model, operator := ids.New(ids.Prompt), Bound(p.Prompt.Model, 100), Bound(p.Prompt.Operator, 200)
			prompts = append(prompts, c.Prompt.Create().SetID(id).SetOrgID(h.Org).SetSessionID(h.Session.ID).SetHitID(h.ID).
				SetText(p.Prompt.Text).SetHash(p.Prompt.Hash).SetModel(model).SetOperator(operator).
				SetSource(p.Source).SetCreatedAt(h.At))
			d.Prompt(h.Org, p.Prompt.Hash, operator, model, h.Session.ID, id, h.At)
		}
	}
	if err := c.Prompt.CreateBulk(prompts...).Exec(ctx); err != nil {
		return errf("insert prompts", err)
	}
	return nil
}
