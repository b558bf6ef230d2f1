package rest

import (
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/graph/scalar"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/internal/clip"
	"github.com/flytrap/flytrap/wire"
)

// Page sizes of the REST lists: the document leaves them open.
const (
	defaultLimit = 50
	maxLimit     = 100
)

// query checks the query string against the parameters a route accepts, so a typo is an error, not a silent no-op.
func query(r *http.Request, allowed ...string) (url.Values, error) {
	q := r.URL.Query() // complete: serve has refused a query string that does not decode
	for name, vals := range q {
		if name == "" {
			return nil, apperr.Invalid("query string", "has a parameter with no name")
		}
		name := clip.Mark(name, maxEcho)
		known := false
		for _, a := range allowed {
			known = known || a == name
		}
		if !known {
			if len(allowed) == 0 {
				return nil, apperr.Invalid(name, "is not a parameter of this route (it takes none)")
			}
			return nil, apperr.Invalid(name, "is not a parameter of this route (allowed: %s)", strings.Join(allowed, ", "))
		}
		if len(vals) > 1 {
			return nil, apperr.Invalid(name, "is given more than once")
		}
	}
	return q, nil
}

func limitParam(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, apperr.Invalid("limit", "must be an integer from 1 to %d", maxLimit)
	}
	return n, nil
}

func timeParam(q url.Values, name string) (*time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, apperr.Invalid(name, "must be an ISO 8601 timestamp such as 2026-11-22T09:00:00Z")
	}
	return &t, nil
}

func (a *API) listSessions(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "classification", "severity", "trap_id", "source_ip", "since", "until", "limit", "cursor")
	if err != nil {
		return err
	}
	limit, err := limitParam(q)
	if err != nil {
		return err
	}
	where := &ent.SessionWhereInput{}
	if v := q.Get("classification"); v != "" {
		c, err := enumValue("classification", "Classification", v, true, nil)
		if err != nil {
			return err
		}
		where.Classification = ptr(session.Classification(c))
	}
	if v := q.Get("severity"); v != "" {
		s, err := enumValue("severity", "Severity", v, true, nil)
		if err != nil {
			return err
		}
		where.Severity = ptr(session.Severity(s))
	}
	if v := q.Get("source_ip"); v != "" {
		addr, err := netip.ParseAddr(v)
		if err != nil {
			return apperr.Invalid("source_ip", "must be an IPv4 or IPv6 address")
		}
		ip := addr.String()
		where.SourceIP = &ip
	}
	if v := q.Get("trap_id"); v != "" {
		if ids.Prefix(v) != ids.Trap {
			return apperr.Invalid("trap_id", "must be a trap id (trp_…)")
		}
		where.HasHitsWith = []*ent.HitWhereInput{{TrapID: &v}}
	}
	if where.LastSeenGTE, err = timeParam(q, "since"); err != nil {
		return err
	}
	if where.FirstSeenLT, err = timeParam(q, "until"); err != nil {
		return err
	}
	// The same limits as a GraphQL filter (its fixed shape stays well within them).
	if err := graph.CheckWhere(a.res.Where, "SessionWhereInput", where); err != nil {
		return apperr.Invalid("query string", "%s", err.Error())
	}
	order := &ent.SessionOrder{Field: ent.SessionOrderFieldLastSeen, Direction: entgql.OrderDirectionDesc}
	after, err := cursorParam(q, ids.Session, order.Field.String())
	if err != nil {
		return err
	}
	conn, err := a.res.Query().Sessions(r.Context(), after, &limit, nil, nil, order, where)
	if err != nil {
		return err
	}
	data := make([]wire.Session, 0, len(conn.Edges))
	for _, e := range conn.Edges {
		data = append(data, wire.SessionOf(e.Node))
	}
	return page(w, data, conn.PageInfo)
}

// cursorParam reads the cursor parameter of a list of nodes with id prefix ordered by
// order (see graph.CheckCursor).
func cursorParam(q url.Values, prefix, order string) (*entgql.Cursor[string], error) {
	v := q.Get("cursor")
	if v == "" {
		return nil, nil
	}
	after, err := scalar.DecodeCursor(urlToStd.Replace(v))
	if err != nil {
		return nil, apperr.Invalid("cursor", "is not a cursor this API issued")
	}
	if err := graph.CheckCursor("cursor", &after, prefix, order); err != nil {
		return nil, err
	}
	return &after, nil
}

// page writes a paginated list: the dashboard wrapper plus {"pagination": {has_more, next_cursor}}.
func page[T any](w http.ResponseWriter, data []T, info entgql.PageInfo[string]) error {
	next := ""
	if info.EndCursor != nil {
		next = cursorString(info.EndCursor)
	}
	writeJSON(w, http.StatusOK, wire.Page[T]{Data: data, Pagination: wire.Pagination{HasMore: info.HasNextPage, NextCursor: next}, Success: true})
	return nil
}

// Session cursors are entgql's (base64 of msgpack) in the URL-safe alphabet, so a
// client may paste next_cursor into a query string as it is.
var (
	stdToURL = strings.NewReplacer("+", "-", "/", "_")
	urlToStd = strings.NewReplacer("-", "+", "_", "/")
)

func cursorString(c *entgql.Cursor[string]) string {
	var b strings.Builder
	c.MarshalGQL(&b)
	return stdToURL.Replace(strings.Trim(b.String(), `"`))
}

func (a *API) getSession(w http.ResponseWriter, r *http.Request) error {
	d, err := a.res.Query().SessionDetail(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := wire.SessionDetail{Session: wire.SessionOf(d.Session), Callbacks: []wire.Hit{}, Hits: make([]wire.Hit, len(d.Hits)),
		Extracted: wire.Extracted{Model: d.Session.ExtractedModel, Operator: d.Session.ExtractedOperator, Prompts: make([]string, len(d.Prompts))},
		Signals:   make([]wire.Signal, len(d.Signals)), HitsTruncated: d.HitsTruncated, PromptsTruncated: d.PromptsTruncated,
		SignalsTruncated: d.SignalsTruncated}
	for i, h := range d.Hits {
		out.Hits[i] = wire.HitOf(h)
		if h.Kind == hit.KindCallback {
			out.Callbacks = append(out.Callbacks, out.Hits[i])
		}
	}
	for i, p := range d.Prompts {
		out.Extracted.Prompts[i] = p.Text
	}
	for i, sg := range d.Signals {
		out.Signals[i] = wire.SignalOf(sg)
	}
	return ok(w, http.StatusOK, out)
}

func ptr[T any](v T) *T { return &v }
