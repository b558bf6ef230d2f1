package graph

import (
	"context"
	"fmt"
	"slices"

	entsql "entgo.io/ent/dialect/sql"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/ent/signal"
	"github.com/flytrap/flytrap/ent/trap"
	"github.com/flytrap/flytrap/graph/model"
)

// What the session views show of a session beyond its stored fields: how the verdict was
// reached (detect.Explain), its signals grouped with placements in words (decoy's labels),
// and its traps by name. The tables stay in detect/ and decoy/; nothing is copied here.

const (
	// evidenceRows bounds the distinct evidence rows read to pick samples from.
	evidenceRows = 300
	// evidenceSamples is how many pieces of evidence a signal group shows.
	evidenceSamples = 3
	// signalGroupRows bounds the firings a session's signal groups are counted over: its
	// newest, read along (session_id, created_at, id). A visitor decides how many firings its
	// session holds (one a request), and grouping them all cost in proportion (issue 22);
	// 250 joined rows keep the dashboard's session page within its read budget.
	signalGroupRows = 250
)

// newestSignals is a FROM of a session's newest signalGroupRows signals, named signals, so
// the predicates ent writes for the table apply to it.
func newestSignals(q *entsql.Selector, sessionID string) *entsql.Selector {
	return entsql.Dialect(q.Dialect()).
		Select(signal.FieldOrgID, signal.FieldSessionID, signal.FieldName, signal.FieldPlacement, signal.FieldSourceHitID, signal.FieldDelayMs, signal.FieldDetail).
		From(entsql.Table(signal.Table)).Where(entsql.EQ(signal.FieldSessionID, sessionID)).
		OrderBy(entsql.Desc(signal.FieldCreatedAt), entsql.Desc(signal.FieldID)).Limit(signalGroupRows).As(signal.Table)
}

var signalMeaning = func() map[string]string {
	m := map[string]string{}
	for _, s := range detect.Signals() {
		m[s.Name] = s.Meaning
	}
	return m
}()

// explainSession runs detect.Explain on the evidence the engine judged the session on.
func explainSession(s *ent.Session) *model.VerdictExplanation {
	x := detect.Explain(detect.Evidence{Signals: s.State.Signals, Agent: detect.LookupUA(s.UserAgent), Hits: s.HitCount, Sent: s.State.Sent})
	v := x.Verdict
	out := &model.VerdictExplanation{
		Classification: session.Classification(v.Classification), Score: v.Score, Confidence: v.Confidence,
		Severity: session.Severity(v.Severity), RawScore: x.Raw, Floor: x.Floor, Ceiling: x.Ceil,
		Rule: x.Rule, RuleText: x.RuleText, DetectionThreshold: detect.DetectionThreshold,
		Parts: make([]*model.ScorePart, 0, len(x.Parts)),
	}
	out.MatchesStored = string(s.Classification) == v.Classification && s.Score == v.Score &&
		s.Confidence == v.Confidence && string(s.Severity) == v.Severity
	for _, p := range x.Parts {
		out.Parts = append(out.Parts, &model.ScorePart{
			Signal: p.Name, Meaning: signalMeaning[p.Name], Tripwire: p.Tripwire, Weight: p.Weight, Count: p.Count,
			Points: p.Points, CountsOnce: p.CountsOnce, FromUserAgent: p.FromUserAgent,
		})
	}
	return out
}

// signalGroups groups a session's signals by name and placement in words, counted in the
// database (a session may hold thousands of firings); the source hit's trap type says
// where a placement stood. Only the newest signalGroupRows (250) firings are grouped; a signal
// the session fired more often than they show, in one group, is counted from the session's
// own tally (State.Signals, every firing).
func (r *Resolver) signalGroups(ctx context.Context, s *ent.Session) ([]*model.SignalGroup, error) {
	var rows []struct {
		Name      string            `json:"name"`
		Placement string            `json:"placement"`
		TrapType  entsql.NullString `json:"trap_type"`
		N         int               `json:"n"`
		MinDelay  entsql.NullInt64  `json:"min_delay"`
		MaxDelay  entsql.NullInt64  `json:"max_delay"`
	}
	c := r.ent(ctx)
	err := c.Signal.Query().Where(signal.SessionID(s.ID)).Modify(func(q *entsql.Selector) {
		q.From(newestSignals(q, s.ID))
		h := entsql.Table(hit.Table).As("src")
		t := entsql.Table(trap.Table).As("srct")
		q.LeftJoin(h).On(q.C(signal.FieldSourceHitID), h.C(hit.FieldID)).
			LeftJoin(t).On(h.C(hit.FieldTrapID), t.C(trap.FieldID))
		q.Select(q.C(signal.FieldName), q.C(signal.FieldPlacement), entsql.As(t.C(trap.FieldType), "trap_type"),
			entsql.As(entsql.Count("*"), "n"),
			entsql.As(entsql.Min(q.C(signal.FieldDelayMs)), "min_delay"), entsql.As(entsql.Max(q.C(signal.FieldDelayMs)), "max_delay")).
			GroupBy(q.C(signal.FieldName), q.C(signal.FieldPlacement), t.C(trap.FieldType))
	}).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("group signals: %w", err)
	}
	sampled, groupsOf := 0, map[string]int{}
	for _, row := range rows {
		sampled += row.N
		groupsOf[row.Name]++
	}
	type key struct{ name, label string }
	groups := map[key]*model.SignalGroup{}
	labelOf := map[[2]string]string{} // (name, placement) → label, for the evidence
	var order []key
	for _, row := range rows {
		where := ""
		if p, idx, ok := decoy.ParsePlacement(row.Placement); ok && row.TrapType.Valid {
			where = decoy.PlacementWhere(row.TrapType.String, p, idx)
		}
		label := decoy.PlacementLabel(row.Placement, where)
		labelOf[[2]string{row.Name, row.Placement}] = label
		k := key{row.Name, label}
		g := groups[k]
		if g == nil {
			g = &model.SignalGroup{Signal: row.Name, Placement: row.Placement, PlacementLabel: label, Evidence: []string{}}
			groups[k] = g
			order = append(order, k)
		} else if g.Placement != row.Placement {
			g.Placement = placementName(row.Placement) // several indices of one kind
		}
		g.Tripwire = detect.IsTripwire(row.Name)
		g.Count += row.N
		if row.MinDelay.Valid {
			d := int(row.MinDelay.Int64)
			if g.MinDelayMs == nil || d < *g.MinDelayMs {
				g.MinDelayMs = &d
			}
		}
		if row.MaxDelay.Valid {
			d := int(row.MaxDelay.Int64)
			if g.MaxDelayMs == nil || d > *g.MaxDelayMs {
				g.MaxDelayMs = &d
			}
		}
	}
	var ev []struct {
		Name      string `json:"name"`
		Placement string `json:"placement"`
		Detail    string `json:"detail"`
	}
	err = c.Signal.Query().Where(signal.SessionID(s.ID), signal.DetailNEQ("")).Modify(func(q *entsql.Selector) {
		q.From(newestSignals(q, s.ID)).Distinct().Select(q.C(signal.FieldName), q.C(signal.FieldPlacement), q.C(signal.FieldDetail)).
			Limit(evidenceRows)
	}).Scan(ctx, &ev)
	if err != nil {
		return nil, fmt.Errorf("signal evidence: %w", err)
	}
	for _, e := range ev {
		g := groups[key{e.Name, labelOf[[2]string{e.Name, e.Placement}]}]
		if g != nil && len(g.Evidence) < evidenceSamples && !slices.Contains(g.Evidence, e.Detail) {
			g.Evidence = append(g.Evidence, e.Detail)
		}
	}
	out := make([]*model.SignalGroup, 0, len(order))
	for _, k := range order {
		g := groups[k]
		if sampled >= signalGroupRows && groupsOf[g.Signal] == 1 {
			g.Count = max(g.Count, s.State.Signals[g.Signal]) // the session's tally counts every firing
		}
		out = append(out, g)
	}
	slices.SortStableFunc(out, func(a, b *model.SignalGroup) int {
		switch {
		case a.Tripwire != b.Tripwire && a.Tripwire:
			return -1
		case a.Tripwire != b.Tripwire:
			return 1
		case a.Count != b.Count:
			return b.Count - a.Count
		case a.Signal != b.Signal:
			if a.Signal < b.Signal {
				return -1
			}
			return 1
		case a.PlacementLabel < b.PlacementLabel:
			return -1
		case a.PlacementLabel > b.PlacementLabel:
			return 1
		}
		return 0
	})
	return out, nil
}

// placementName is a recorded placement without its index ("callback#3" → "callback").
func placementName(p string) string {
	for i := 0; i < len(p); i++ {
		if p[i] == '#' {
			return p[:i]
		}
	}
	return p
}

// Explanation is the resolver for the explanation field.
func (r *sessionResolver) Explanation(ctx context.Context, obj *ent.Session) (*model.VerdictExplanation, error) {
	return explainSession(obj), nil
}

// SignalGroups is the resolver for the signalGroups field.
func (r *sessionResolver) SignalGroups(ctx context.Context, obj *ent.Session) ([]*model.SignalGroup, error) {
	return r.signalGroups(ctx, obj)
}

// ClientStacks is the resolver for the clientStacks field.
func (r *sessionResolver) ClientStacks(ctx context.Context, obj *ent.Session) ([]*app.ClientStack, error) {
	return r.app.ClientStacks(ctx, obj)
}

// ClientStack is the resolver for the clientStack field.
func (r *hitResolver) ClientStack(ctx context.Context, obj *ent.Hit) (*string, error) {
	return app.HitStack(obj), nil
}

// Signature is the resolver for the signature field.
func (r *sessionResolver) Signature(ctx context.Context, obj *ent.Session) (*string, error) {
	return r.app.SessionSignature(ctx, obj)
}

// Traps is the resolver for the traps field.
func (r *sessionResolver) Traps(ctx context.Context, obj *ent.Session) ([]*app.TrapRef, error) {
	return r.app.TrapRefs(ctx, obj.TrapsTriggered)
}

// Session returns SessionResolver implementation.
func (r *Resolver) Session() SessionResolver { return &sessionResolver{r} }

type sessionResolver struct{ *Resolver }
