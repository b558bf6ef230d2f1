package server

import (
	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/graph"
)

// complexity prices each connection by the rows it may return, so nested pages
// (sessions × hits × …) multiply, and the complexity limit bounds the rows an
// operation can make the database read.
func complexity() graph.ComplexityRoot {
	var c graph.ComplexityRoot
	type cursor = *entgql.Cursor[string]
	c.Query.Traps = func(child int, _ cursor, first *int, _ cursor, last *int, _ *ent.TrapOrder, _ *ent.TrapWhereInput) int {
		return pageCost(child, first, last)
	}
	c.Query.Sessions = func(child int, _ cursor, first *int, _ cursor, last *int, _ *ent.SessionOrder, _ *ent.SessionWhereInput) int {
		return pageCost(child, first, last)
	}
	c.Query.Events = func(child int, _ cursor, first *int, _ cursor, last *int, _ *ent.EventOrder, _ *ent.EventWhereInput) int {
		return pageCost(child, first, last)
	}
	c.Query.APIKeys = func(child int, _ cursor, first *int, _ cursor, last *int, _ *ent.ApiKeyOrder, _ *ent.ApiKeyWhereInput) int {
		return pageCost(child, first, last)
	}
	c.Query.Sites = func(child int, _ cursor, first *int, _ cursor, last *int, _ *ent.SiteOrder, _ *ent.SiteWhereInput) int {
		return pageCost(child, first, last)
	}
	c.Session.Hits = func(child int, _ cursor, first *int, _ cursor, last *int, _ *ent.HitOrder, _ *ent.HitWhereInput) int {
		return pageCost(child, first, last)
	}
	c.Query.Nodes = func(child int, ids []string) int { return 1 + child*max(1, len(ids)) }
	return c
}

// pageCost is the cost of a connection page: its rows times the cost of one.
func pageCost(child int, first, last *int) int {
	n := DefaultPageSize
	switch {
	case first != nil:
		n = *first
	case last != nil:
		n = *last
	}
	// A size over the maximum is refused by pageLimits with a clear message; price it at the maximum.
	return 1 + child*min(max(1, n), MaxPageSize)
}
