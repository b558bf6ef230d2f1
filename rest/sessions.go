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
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/ids"
)

// Page sizes of the REST lists: the document leaves them open.
const (
	defaultLimit = 50
	maxLimit     = 100
)

// query checks the query string against the parameters a route accepts, so a typo is an error, not a silent no-op.
func query(r *http.Request, allowed ...string) (url.Values, error) {
	q := r.URL.Query()
	for name, vals := range q {
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
	after, err := cursorParam(q)
	if err != nil {
		return err
	}
	order := &ent.SessionOrder{Field: ent.SessionOrderFieldLastSeen, Direction: entgql.OrderDirectionDesc}
	conn, err := a.res.Query().Sessions(r.Context(), after, &limit, nil, nil, order, where)
	if err != nil {
		return err
	}
	data := make([]map[string]any, 0, len(conn.Edges))
	for _, e := range conn.Edges {
		data = append(data, sessionData(e.Node))
	}
	return page(w, data, conn.PageInfo)
}

// cursorParam reads the cursor parameter of a paginated list.
func cursorParam(q url.Values) (*entgql.Cursor[string], error) {
	v := q.Get("cursor")
	if v == "" {
		return nil, nil
	}
	after := &entgql.Cursor[string]{}
	if err := after.UnmarshalGQL(urlToStd.Replace(v)); err != nil {
		return nil, apperr.Invalid("cursor", "is not a cursor this API issued")
	}
	return after, nil
}

// page writes a paginated list: the dashboard wrapper plus {"pagination": {has_more, next_cursor}}.
func page(w http.ResponseWriter, data []map[string]any, info entgql.PageInfo[string]) error {
	next := ""
	if info.EndCursor != nil {
		next = cursorString(info.EndCursor)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"success":    true,
		"data":       data,
		"pagination": map[string]any{"has_more": info.HasNextPage, "next_cursor": next},
	})
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
	data := sessionData(d.Session)
	hs := make([]map[string]any, len(d.Hits))
	callbacks := []map[string]any{}
	for i, h := range d.Hits {
		hs[i] = hitData(h)
		if h.Kind == hit.KindCallback {
			callbacks = append(callbacks, hs[i])
		}
	}
	data["hits"] = hs
	texts := make([]string, len(d.Prompts))
	for i, p := range d.Prompts {
		texts[i] = p.Text
	}
	data["extracted"] = map[string]any{
		"model":    d.Session.ExtractedModel,
		"operator": d.Session.ExtractedOperator,
		"prompts":  texts,
	}
	data["callbacks"] = callbacks
	sigs := make([]map[string]any, len(d.Signals))
	for i, sg := range d.Signals {
		sigs[i] = signalData(sg)
	}
	data["signals"] = sigs
	return ok(w, http.StatusOK, data)
}

// sessionData is a session as the document shows it, with the extracted model and operator and the traps it triggered.
func sessionData(s *ent.Session) map[string]any {
	return map[string]any{
		"id":                 s.ID,
		"source_ip":          s.SourceIP,
		"user_agent":         s.UserAgent,
		"classification":     string(s.Classification),
		"score":              s.Score,
		"confidence":         s.Confidence,
		"severity":           string(s.Severity),
		"signals_fired":      nonNil(s.SignalsFired),
		"first_seen":         event.Millis(s.FirstSeen),
		"last_seen":          event.Millis(s.LastSeen),
		"hit_count":          s.HitCount,
		"extracted_model":    s.ExtractedModel,
		"extracted_operator": s.ExtractedOperator,
		"traps_triggered":    nonNil(s.TrapsTriggered),
	}
}

func hitData(h *ent.Hit) map[string]any {
	headers := h.Headers
	if headers == nil {
		headers = map[string][]string{}
	}
	return map[string]any{
		"id":             h.ID,
		"trap_id":        h.TrapID,
		"method":         h.Method,
		"path":           h.Path,
		"query":          h.Query,
		"headers":        headers,
		"body":           h.Body,
		"body_truncated": h.BodyTruncated,
		"source_ip":      h.SourceIP,
		"user_agent":     h.UserAgent,
		"received_at":    event.Millis(h.ReceivedAt),
		"kind":           string(h.Kind),
		"status":         h.Status,
		"signals":        nonNil(h.Signals),
	}
}

// signalData is one signal firing with its evidence.
func signalData(s *ent.Signal) map[string]any {
	var delay any
	if s.DelayMs != nil {
		delay = *s.DelayMs
	}
	return map[string]any{
		"name":          s.Name,
		"tripwire":      s.Tripwire,
		"hit_id":        s.HitID,
		"placement":     s.Placement,
		"source_hit_id": s.SourceHitID,
		"delay_ms":      delay,
		"detail":        s.Detail,
		"created_at":    event.Millis(s.CreatedAt),
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func ptr[T any](v T) *T { return &v }
