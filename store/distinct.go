package store

import (
	"context"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/intercept"
)

// Undistinct makes c read hits, signals and prompts without SELECT DISTINCT. ent reads an
// edge (session.QueryHits(), the GraphQL Session.hits connection) with DISTINCT over every
// column, and PostgreSQL then sorts every hit of the session before its LIMIT: 11.7 s for
// the first 50 hits of a session of a million (issue 22). Each of these rows belongs to one
// session, and no query of them joins a table that could repeat one, so DISTINCT removes
// nothing. Open applies it to both of its clients.
func Undistinct(c *ent.Client) {
	c.Hit.Intercept(intercept.TraverseHit(func(_ context.Context, q *ent.HitQuery) error {
		q.Unique(false)
		return nil
	}))
	c.Signal.Intercept(intercept.TraverseSignal(func(_ context.Context, q *ent.SignalQuery) error {
		q.Unique(false)
		return nil
	}))
	c.Prompt.Intercept(intercept.TraversePrompt(func(_ context.Context, q *ent.PromptQuery) error {
		q.Unique(false)
		return nil
	}))
}
