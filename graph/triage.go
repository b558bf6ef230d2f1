package graph

import (
	"context"
	"time"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ent/session"
)

// TriageSessions sets the triage state of some of the caller's sessions.
func (r *mutationResolver) TriageSessions(ctx context.Context, input app.TriageInput) (*app.TriageResult, error) {
	return r.app.TriageSessions(ctx, input)
}

// Gate answers a deployment gate.
func (r *queryResolver) Gate(ctx context.Context, failOn session.Severity, since *time.Time) (*app.GateResult, error) {
	return r.app.Gate(ctx, failOn, since)
}
