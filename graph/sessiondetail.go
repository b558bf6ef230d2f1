package graph

import (
	"context"
	"slices"
	"time"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/prompt"
	"github.com/flytrap/flytrap/ent/signal"
	"github.com/flytrap/flytrap/graph/model"
	"github.com/flytrap/flytrap/ids"
)

// DefaultDetailLimit bounds each list of a session's detail (hits, signals, prompts).
const DefaultDetailLimit = 1000

// detailSlack widens a session's span when its hits are read: the writer sets first and last
// seen from its hits' received_at, in the order it writes them, which may differ from the
// order they were received by the time a request's body took to read (seconds).
const detailSlack = 24 * time.Hour

// MaxDetailLimit is the largest DetailLimit: sessionDetail's @cost assumes it.
const MaxDetailLimit = 1000

// sessionDetail is one session with its evidence, the one definition both the GraphQL
// sessionDetail query and REST's GET /dashboard/api/sessions/{id} serve: each list holds
// the newest DetailLimit items, oldest first, ties broken by id. An id of another kind
// of object is a missing session, as REST has always answered.
func (r *Resolver) sessionDetail(ctx context.Context, id string) (*model.SessionDetail, error) {
	s, err := r.detailSession(ctx, id)
	if err != nil {
		return nil, err
	}
	limit := r.DetailLimit
	if limit < 1 || limit > MaxDetailLimit {
		limit = DefaultDetailLimit
	}
	// A session's hits were received between its first and last seen (the hit writer sets both
	// from them): naming that span, widened by detailSlack, lets PostgreSQL search only the
	// days' partitions it covers when hits is partitioned by day (docs/operations.md).
	hq := s.QueryHits()
	if !s.FirstSeen.IsZero() && !s.LastSeen.Before(s.FirstSeen) {
		hq = hq.Where(hit.ReceivedAtGTE(s.FirstSeen.Add(-detailSlack)), hit.ReceivedAtLTE(s.LastSeen.Add(detailSlack)))
	}
	// Unique(false): ent reads an edge with SELECT DISTINCT, which made PostgreSQL sort every hit
	// of the session to take the newest (issue 22); a session's hits, signals and prompts are
	// distinct rows already, read along (session_id, received_at|created_at, id) in order.
	hits, err := hq.Unique(false).Order(ent.Desc(hit.FieldReceivedAt), ent.Desc(hit.FieldID)).Limit(limit + 1).All(ctx)
	if err != nil {
		return nil, err
	}
	truncated := len(hits) > limit
	hits = hits[:min(len(hits), limit)]
	signals, err := s.QuerySignals().Unique(false).Order(ent.Desc(signal.FieldCreatedAt), ent.Desc(signal.FieldID)).Limit(limit).All(ctx)
	if err != nil {
		return nil, err
	}
	prompts, err := s.QueryPrompts().Unique(false).Order(ent.Desc(prompt.FieldCreatedAt), ent.Desc(prompt.FieldID)).Limit(limit).All(ctx)
	if err != nil {
		return nil, err
	}
	// Read newest first to keep the newest; shown oldest first.
	slices.Reverse(hits)
	slices.Reverse(signals)
	slices.Reverse(prompts)
	return &model.SessionDetail{Session: s, Hits: hits, HitsTruncated: truncated, Signals: signals, Prompts: prompts}, nil
}

// detailSession is the session a detail names. A session id is read without collecting the
// GraphQL fields: Node would take the detail's own hits, signals and prompts selections for
// the session's edges and load every one of them (100,000 signals of a giant session, 250 ms,
// issue 22). Any other id goes through Node, which says what it is.
func (r *Resolver) detailSession(ctx context.Context, id string) (*ent.Session, error) {
	if ids.Prefix(id) == ids.Session {
		return r.ent(ctx).Session.Get(ctx, id)
	}
	n, err := r.Query().Node(ctx, id)
	if err != nil {
		return nil, err
	}
	s, isSession := n.(*ent.Session)
	if !isSession {
		return nil, apperr.NotFound("session")
	}
	return s, nil
}
