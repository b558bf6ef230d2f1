package graph

import (
	"context"
	"fmt"
	"time"

	"github.com/flytrap/flytrap/detect"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/ent/trap"
	"github.com/flytrap/flytrap/graph/model"
)

// agentClasses are the classifications the overview counts as detected agents.
var agentClasses = func() []session.Classification {
	var out []session.Classification
	for _, c := range detect.Classes() {
		if c.Agent {
			out = append(out, session.Classification(c.Name))
		}
	}
	return out
}()

func (r *Resolver) overview(ctx context.Context) (*model.Overview, error) {
	c := r.ent(ctx)
	var o model.Overview
	var err error
	since := r.now().Add(-24 * time.Hour)
	if o.TotalHits24h, err = c.Hit.Query().Where(hit.ReceivedAtGTE(since)).Count(ctx); err != nil {
		return nil, fmt.Errorf("count hits: %w", err)
	}
	if o.AgentsDetected, err = c.Session.Query().Where(session.ClassificationIn(agentClasses...)).Count(ctx); err != nil {
		return nil, fmt.Errorf("count agents: %w", err)
	}
	var sums []struct {
		Tripwires *int `json:"tripwires"`
		Prompts   *int `json:"prompts"`
	}
	err = c.Session.Query().Aggregate(
		ent.As(ent.Sum(session.FieldTripwiresFired), "tripwires"),
		ent.As(ent.Sum(session.FieldPromptsCaptured), "prompts"),
	).Scan(ctx, &sums)
	if err != nil {
		return nil, fmt.Errorf("sum tripwires: %w", err)
	}
	if len(sums) == 1 {
		o.TripwiresFired, o.PromptsCaptured = deref(sums[0].Tripwires), deref(sums[0].Prompts)
	}
	if o.ActiveTraps, err = c.Trap.Query().Where(trap.Active(true)).Count(ctx); err != nil {
		return nil, fmt.Errorf("count traps: %w", err)
	}
	return &o, nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func (r *Resolver) severityCounts(ctx context.Context) (*model.SeverityCounts, error) {
	var rows []struct {
		Severity session.Severity `json:"severity"`
		Count    int              `json:"count"`
	}
	err := r.ent(ctx).Session.Query().GroupBy(session.FieldSeverity).Aggregate(ent.Count()).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("count sessions by severity: %w", err)
	}
	var out model.SeverityCounts
	for _, row := range rows {
		switch row.Severity {
		case session.SeverityCritical:
			out.Critical = row.Count
		case session.SeverityHigh:
			out.High = row.Count
		case session.SeverityMedium:
			out.Medium = row.Count
		case session.SeverityLow:
			out.Low = row.Count
		}
	}
	return &out, nil
}

// HourOf is the Unix hour a hit is bucketed in for the timeline.
func HourOf(t time.Time) int64 { return t.Unix() / 3600 }

func (r *Resolver) timeline(ctx context.Context) ([]*model.TimelineBucket, error) {
	last := HourOf(r.now())
	first := last - 23
	var rows []struct {
		Hour  int64 `json:"received_hour"`
		Count int   `json:"count"`
	}
	err := r.ent(ctx).Hit.Query().Where(hit.ReceivedHourGTE(first), hit.ReceivedHourLTE(last)).
		GroupBy(hit.FieldReceivedHour).Aggregate(ent.Count()).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("count hits by hour: %w", err)
	}
	out := make([]*model.TimelineBucket, 24)
	for i := range out {
		out[i] = &model.TimelineBucket{Hour: time.Unix((first+int64(i))*3600, 0).UTC()}
	}
	for _, row := range rows {
		if i := row.Hour - first; i >= 0 && i < 24 {
			out[i].Hits = row.Count
		}
	}
	return out, nil
}
