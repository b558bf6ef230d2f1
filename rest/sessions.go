package rest

import (
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/fingerprint"
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
	q, err := query(r, "classification", "severity", "trap_id", "ja4", "source_ip", "since", "until", "limit", "cursor", "triage_state")
	if err != nil {
		return err
	}
	limit, err := limitParam(q)
	if err != nil {
		return err
	}
	var f app.SessionFilter
	if v := q.Get("classification"); v != "" {
		if f.Classification, err = enumValue("classification", "Classification", v, true, nil); err != nil {
			return err
		}
	}
	if v := q.Get("severity"); v != "" {
		if f.Severity, err = enumValue("severity", "Severity", v, true, nil); err != nil {
			return err
		}
	}
	if v := q.Get("source_ip"); v != "" {
		addr, err := netip.ParseAddr(v)
		if err != nil {
			return apperr.Invalid("source_ip", "must be an IPv4 or IPv6 address")
		}
		f.SourceIP = addr.String()
	}
	if v := q.Get("trap_id"); v != "" {
		if ids.Prefix(v) != ids.Trap {
			return apperr.Invalid("trap_id", "must be a trap id (trp_…)")
		}
		f.TrapID = v
	}
	if v := q.Get("ja4"); v != "" {
		if !fingerprint.ValidJA4(v) {
			return apperr.Invalid("ja4", "must be a JA4 fingerprint such as t13d1516h2_8daaf6152771_e5627efa2ab1")
		}
		f.JA4 = v
	}
	if f.Since, err = timeParam(q, "since"); err != nil {
		return err
	}
	if f.Until, err = timeParam(q, "until"); err != nil {
		return err
	}
	if v := q.Get("triage_state"); v != "" {
		for _, s := range strings.Split(v, ",") {
			st, err := app.ParseTriageState("triage_state", s)
			if err != nil {
				return err
			}
			if !slices.Contains(f.TriageStates, st) {
				f.TriageStates = append(f.TriageStates, st)
			}
		}
	}
	p, err := a.app.ListSessions(r.Context(), f, app.Page{Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		return err
	}
	return page(w, p, wire.SessionOf)
}

// page writes a paginated list: the dashboard wrapper plus {"pagination": {has_more, next_cursor}}.
func page[T, W any](w http.ResponseWriter, p *app.Paged[T], shape func(T) W) error {
	data := make([]W, len(p.Items))
	for i, it := range p.Items {
		data[i] = shape(it)
	}
	writeJSON(w, http.StatusOK, wire.Page[W]{Data: data, Pagination: wire.Pagination{HasMore: p.HasMore, NextCursor: p.NextCursor}, Success: true})
	return nil
}

func (a *API) getSession(w http.ResponseWriter, r *http.Request) error {
	d, err := a.app.SessionDetail(r.Context(), r.PathValue("id"))
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
	stacks, err := a.app.ClientStacks(r.Context(), d.Session)
	if err != nil {
		return err
	}
	out.ClientStacks = make([]wire.ClientStack, len(stacks))
	for i, cs := range stacks {
		out.ClientStacks[i] = wire.ClientStack{Family: cs.Family, H2Fingerprint: cs.H2Fingerprint, HeaderOrder: cs.HeaderOrder, Hits: cs.Hits, JA4: cs.JA4}
	}
	for i, sg := range d.Signals {
		out.Signals[i] = wire.SignalOf(sg)
	}
	if out.Signature, err = a.app.SessionSignature(r.Context(), d.Session); err != nil {
		return err
	}
	return ok(w, http.StatusOK, out)
}

func ptr[T any](v T) *T { return &v }
