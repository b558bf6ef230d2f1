package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/flytrap/flytrap/apiclient"
)

// maxTriageIDs is how many sessions one triage request of the API takes; sessions triage
// sends longer lists in requests of this many.
const maxTriageIDs = 100

// gate asks the API whether an unresolved session at or above a severity was seen in a
// window (GET /dashboard/api/gate) and fails with exitGateFailed when one was: a
// deployment step that stops a release while a threat is open.
func gate(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	var failOn, since string
	fs.StringVar(&failOn, "fail-on", "", "critical, high, medium or low: the lowest severity that fails the gate (required)")
	fs.StringVar(&since, "since", "", "only sessions last seen in this window: a duration back from now (30m, 1h, 7d)\nor an RFC 3339 time (default: all time)")
	return func(ctx context.Context) error {
		if failOn == "" {
			return errors.New("--fail-on is required: critical, high, medium or low")
		}
		p := &apiclient.GateParams{FailOn: apiclient.GateParamsFailOn(strings.ToLower(failOn))}
		if since != "" {
			p.Since = &since
		}
		resp, err := c.api.GateWithResponse(ctx, p)
		if err := check(err, resp, http.StatusOK); err != nil {
			return err
		}
		a := resp.JSON200.Data
		window := "all time"
		if !a.Since.IsZero() {
			window = "since " + a.Since.UTC().Format(time.RFC3339)
		}
		count := fmt.Sprint(a.Count)
		if !a.CountExact {
			count = fmt.Sprintf("more than %d", a.Count-1)
		}
		if c.opts.output != "table" {
			if err := json.NewEncoder(c.stdout).Encode(a); err != nil {
				return err
			}
		} else if a.Failed {
			if err := emit(c, a.Sessions, sessionCols, sessionRow); err != nil {
				return err
			}
		}
		if !a.Failed {
			fmt.Fprintf(c.stderr, "gate passed: no unresolved session at %s or above, %s\n", strings.ToLower(failOn), window)
			return nil
		}
		return &exitError{exitGateFailed, fmt.Errorf("gate failed: %s unresolved session(s) at %s or above, %s (resolve or ignore them: flytrap sessions triage --state resolved SESSION_ID…)",
			count, strings.ToLower(failOn), window)}
	}
}

// sessionsTriage sets the triage state of the sessions named (any number: sent in requests
// of maxTriageIDs), and prints them as they are now.
func sessionsTriage(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	var state string
	fs.StringVar(&state, "state", "", "open, acknowledged, resolved or ignored (required)")
	return func(ctx context.Context) error {
		if state == "" {
			return errors.New("--state is required: open, acknowledged, resolved or ignored")
		}
		var out []apiclient.Session
		changed := 0
		for ids := range chunks(c.args, maxTriageIDs) {
			body := apiclient.TriageRequest{Ids: ids, State: apiclient.TriageRequestState(strings.ToLower(state))}
			resp, err := c.api.TriageSessionsWithResponse(ctx, nil, body)
			if err := check(err, resp, http.StatusOK); err != nil {
				if len(out) > 0 {
					fmt.Fprintf(c.stderr, "%d sessions were triaged before this error\n", len(out))
				}
				return err
			}
			out = append(out, resp.JSON200.Data.Sessions...)
			changed += resp.JSON200.Data.Changed
		}
		fmt.Fprintf(c.stderr, "%d of %d sessions changed to %s\n", changed, len(out), strings.ToLower(state))
		return emit(c, out, triageCols, triageRow)
	}
}

// chunks yields s in pieces of at most n.
func chunks(s []string, n int) func(yield func([]string) bool) {
	return func(yield func([]string) bool) {
		for len(s) > 0 {
			k := min(n, len(s))
			if !yield(s[:k]) {
				return
			}
			s = s[k:]
		}
	}
}

var triageCols = []string{"ID", "TRIAGE", "BY", "AT", "SEVERITY", "CLASS"}

func triageRow(s apiclient.Session) []string {
	at := ""
	if !s.TriagedAt.IsZero() {
		at = s.TriagedAt.UTC().Format(time.RFC3339)
	}
	return []string{s.Id, string(s.TriageState), s.TriagedByName, at, string(s.Severity), string(s.Classification)}
}
