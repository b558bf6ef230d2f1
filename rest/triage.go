package rest

import (
	"net/http"
	"strings"
	"time"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/internal/clip"
	"github.com/flytrap/flytrap/wire"
)

type triageBody struct {
	IDs   []string `json:"ids"`
	State *string  `json:"state"`
}

// triageSessions is POST /dashboard/api/triage: {"ids": [...], "state": "resolved"}.
func (a *API) triageSessions(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	var body triageBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	if body.State == nil {
		return apperr.Invalid("state", "is required (open, acknowledged, resolved or ignored)")
	}
	st, err := app.ParseTriageState("state", *body.State)
	if err != nil {
		return err
	}
	res, err := a.app.TriageSessions(r.Context(), app.TriageInput{IDs: body.IDs, State: st})
	if err != nil {
		return err
	}
	out := wire.TriageResult{Changed: res.Changed, Sessions: make([]wire.Session, len(res.Sessions))}
	for i, s := range res.Sessions {
		out.Sessions[i] = wire.SessionOf(s)
	}
	return ok(w, http.StatusOK, out)
}

// maxGateWindow bounds a relative since: a year.
const maxGateWindow = 366 * 24 * time.Hour

// sinceParam reads a gate's since: an RFC 3339 time, or a duration back from now such as
// 30m, 1h or 7d.
func (a *API) sinceParam(v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return &t, nil
	}
	d, err := parseWindow(v)
	if err != nil || d <= 0 || d > maxGateWindow {
		return nil, apperr.Invalid("since", "%q must be an ISO 8601 time such as 2026-11-22T09:00:00Z or a duration back from now such as 30m, 1h or 7d (at most 366d)", clip.Mark(v, maxEcho))
	}
	t := time.Now().Add(-d).UTC()
	return &t, nil
}

// parseWindow is time.ParseDuration with days (7d, 1d12h).
func parseWindow(v string) (time.Duration, error) {
	if days, rest, ok := strings.Cut(v, "d"); ok {
		n, err := time.ParseDuration(days + "h")
		if err != nil {
			return 0, err
		}
		d := 24 * n
		if rest != "" {
			r, err := time.ParseDuration(rest)
			if err != nil {
				return 0, err
			}
			d += r
		}
		return d, nil
	}
	return time.ParseDuration(v)
}

// gate is GET /dashboard/api/gate?fail_on=high&since=1h: is there an unresolved session at
// that severity or above since then?
func (a *API) gate(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "fail_on", "since")
	if err != nil {
		return err
	}
	v := q.Get("fail_on")
	if v == "" {
		return apperr.Invalid("fail_on", "is required (critical, high, medium or low)")
	}
	sev, err := enumValue("fail_on", "Severity", v, true, nil)
	if err != nil {
		return err
	}
	since, err := a.sinceParam(q.Get("since"))
	if err != nil {
		return err
	}
	g, err := a.app.Gate(r.Context(), session.Severity(sev), since)
	if err != nil {
		return err
	}
	out := wire.Gate{Count: g.Count, CountExact: g.CountExact, Failed: g.Failed, Sessions: make([]wire.Session, len(g.Sessions)),
		Severities: make([]string, len(g.Severities))}
	for i, s := range g.Sessions {
		out.Sessions[i] = wire.SessionOf(s)
	}
	for i, s := range g.Severities {
		out.Severities[i] = string(s)
	}
	if since != nil {
		s := wire.Millis(*since)
		out.Since = &s
	}
	return ok(w, http.StatusOK, out)
}
