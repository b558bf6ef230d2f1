package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/flytrap/flytrap/apiclient"
	"github.com/flytrap/flytrap/ecs"
)

// clientCommands are the API client's commands (FLYTRAP_URL, FLYTRAP_API_KEY or a profile).
var clientCommands = []*command{
	apiCommand("traps list", "traps list [--site SITE_ID] [--path PATH] [--type TYPE] [--active true|false]",
		[]string{"list the organization's traps (API)"}, 0, trapsList),
	apiCommand("traps get", "traps get TRAP_ID", []string{"show one trap (API)"}, 1, trapsGet),
	apiCommand("traps create", "traps create --name NAME --type TYPE [--path PATH] [--site SITE_ID]\n[--description TEXT] [--idempotency-key KEY]",
		[]string{"create a trap (API)"}, 0, trapsCreate),
	apiCommand("traps update", "traps update TRAP_ID [--name NAME] [--description TEXT] [--active true|false]",
		[]string{"change a trap (API)"}, 1, trapsUpdate),
	apiCommand("traps delete", "traps delete TRAP_ID", []string{"delete a trap; its sessions are kept (API)"}, 1, trapsDelete),
	apiCommand("sessions list", "sessions list [--severity S] [--classification C] [--trap TRAP_ID]\n[--source-ip IP] [--since TIME] [--until TIME] [--limit N] [--all]",
		[]string{"list sessions, newest first (API)"}, 0, sessionsList),
	apiCommand("sessions show", "sessions show SESSION_ID", []string{"one session with its evidence (API)"}, 1, sessionsShow),
	apiCommand("sessions triage", "sessions triage --state open|acknowledged|resolved|ignored SESSION_ID…",
		[]string{"set the triage state of sessions (API)"}, -1, sessionsTriage),
	apiCommand("gate", "gate --fail-on critical|high|medium|low [--since 1h]",
		[]string{"exit 8 with a summary when an unresolved session at or above", "a severity was seen (API): a deployment gate"}, 0, gate),
	apiCommand("events list", "events list [--type TYPE] [--cursor CURSOR] [--limit N]", []string{"the event log, oldest first (API)"}, 0, eventsList),
	apiCommand("events tail", "events tail [--type TYPE] [--cursor CURSOR]",
		[]string{"follow the event stream; resumes after a drop (API)"}, 0, eventsTail),
}

var trapCols = []string{"ID", "NAME", "TYPE", "PATH", "SITE", "ACTIVE"}

func trapRow(t apiclient.Trap) []string {
	return []string{t.Id, t.Name, string(t.Type), t.Path, t.SiteId, strconv.FormatBool(t.Active == 1)}
}

// boolFlag is an optional true/false flag.
type boolFlag struct{ v *bool }

func (b *boolFlag) String() string {
	if b.v == nil {
		return ""
	}
	return strconv.FormatBool(*b.v)
}

func (b *boolFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	b.v = &v
	return nil
}

// strFlag is an optional string flag: set or not.
type strFlag struct{ v *string }

func (s *strFlag) String() string {
	if s.v == nil {
		return ""
	}
	return *s.v
}

func (s *strFlag) Set(v string) error { s.v = &v; return nil }

// listTraps is the traps matching p.
func listTraps(ctx context.Context, c *apiCall, p *apiclient.ListTrapsParams) ([]apiclient.Trap, error) {
	resp, err := c.api.ListTrapsWithResponse(ctx, p)
	if err := check(err, resp, http.StatusOK); err != nil {
		return nil, err
	}
	return resp.JSON200.Data, nil
}

// statusBody is a generated response's status and body: every response type oapi-codegen
// makes has a StatusCode method and a Body field, so a new route needs nothing here.
func statusBody(r any) (int, []byte) {
	sc, ok := r.(interface{ StatusCode() int })
	v := reflect.ValueOf(r)
	if ok && v.Kind() == reflect.Pointer && !v.IsNil() {
		if b := v.Elem().FieldByName("Body"); b.IsValid() && b.Type() == reflect.TypeFor[[]byte]() {
			return sc.StatusCode(), b.Bytes()
		}
	}
	panic(fmt.Sprintf("statusBody: %T is not a generated response", r))
}

func trapsList(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	var site, path, typ string
	var active boolFlag
	fs.StringVar(&site, "site", "", "only this site's traps")
	fs.StringVar(&path, "path", "", "only traps at this path")
	fs.StringVar(&typ, "type", "", "only traps of this kind (page, api, llms_txt, robots, credential, mcp)")
	fs.Var(&active, "active", "only active (true) or inactive (false) traps")
	return func(ctx context.Context) error {
		p := &apiclient.ListTrapsParams{}
		if site != "" {
			p.SiteId = &site
		}
		if path != "" {
			p.Path = &path
		}
		if typ != "" {
			t := apiclient.ListTrapsParamsType(typ)
			p.Type = &t
		}
		if active.v != nil {
			a := apiclient.ListTrapsParamsActive(strconv.FormatBool(*active.v))
			p.Active = &a
		}
		ts, err := listTraps(ctx, c, p)
		if err != nil {
			return err
		}
		return emit(c, ts, trapCols, trapRow)
	}
}

func trapsGet(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	return func(ctx context.Context) error {
		ts, err := listTraps(ctx, c, &apiclient.ListTrapsParams{})
		if err != nil {
			return err
		}
		for _, t := range ts {
			if t.Id == c.args[0] {
				return emitOne(c, t, trapCols, trapRow)
			}
		}
		return &exitError{exitNotFound, fmt.Errorf("trap %s not found", c.args[0])}
	}
}

func trapsCreate(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	var name, typ string
	var path, site, desc, public, idem strFlag
	fs.Var(&idem, "idempotency-key", "makes a retry safe: the same key and request answer the first trap again (24 h)")
	fs.StringVar(&name, "name", "", "the trap's name (required)")
	fs.StringVar(&typ, "type", "", "its kind: page, api, llms_txt, robots, credential or mcp (required)")
	fs.Var(&path, "path", "its path (default: a plausible one for its kind)")
	fs.Var(&site, "site", "its site (default: the organization's first)")
	fs.Var(&desc, "description", "a description")
	fs.Var(&public, "public-title", "the title visitors read (default: one generated for its kind and site)")
	return func(ctx context.Context) error {
		if name == "" || typ == "" {
			return errors.New("--name and --type are required")
		}
		body := apiclient.TrapCreate{Name: name, Type: apiclient.TrapCreateType(typ), Path: path.v, SiteId: site.v, Description: desc.v, PublicTitle: public.v}
		resp, err := c.api.CreateTrapWithResponse(ctx, &apiclient.CreateTrapParams{IdempotencyKey: idem.v}, body)
		if err := check(err, resp, http.StatusCreated); err != nil {
			return err
		}
		if resp.HTTPResponse.Header.Get("Idempotent-Replayed") == "true" {
			fmt.Fprintf(c.stderr, "replayed: the Idempotency-Key made trap %s before; nothing was created\n", resp.JSON201.Data.Id)
		}
		return emitOne(c, resp.JSON201.Data, trapCols, trapRow)
	}
}

func trapsUpdate(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	var name, desc, public strFlag
	var active boolFlag
	fs.Var(&name, "name", "a new name")
	fs.Var(&desc, "description", "a new description")
	fs.Var(&public, "public-title", "a new public title (\"\": the generated one)")
	fs.Var(&active, "active", "true or false")
	return func(ctx context.Context) error {
		if name.v == nil && desc.v == nil && public.v == nil && active.v == nil {
			return errors.New("give at least one of --name, --description, --public-title, --active")
		}
		t, err := updateTrap(ctx, c, c.args[0], apiclient.TrapUpdate{Name: name.v, Description: desc.v, PublicTitle: public.v}, active.v)
		if err != nil {
			return err
		}
		return emitOne(c, t, trapCols, trapRow)
	}
}

// updateTrap changes the fields given of trap id.
func updateTrap(ctx context.Context, c *apiCall, id string, body apiclient.TrapUpdate, active *bool) (apiclient.Trap, error) {
	if active != nil {
		body.Active = &apiclient.TrapUpdate_Active{}
		if err := body.Active.FromTrapUpdateActive1(*active); err != nil {
			return apiclient.Trap{}, err
		}
	}
	resp, err := c.api.UpdateTrapWithResponse(ctx, id, nil, body)
	if err := check(err, resp, http.StatusOK); err != nil {
		return apiclient.Trap{}, err
	}
	return resp.JSON200.Data, nil
}

func trapsDelete(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	return func(ctx context.Context) error {
		resp, err := c.api.DeleteTrapWithResponse(ctx, c.args[0], nil)
		if err := check(err, resp, http.StatusOK); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "deleted trap %s\n", c.args[0])
		if c.opts.output != "table" {
			return json.NewEncoder(c.stdout).Encode(resp.JSON200.Data)
		}
		return nil
	}
}

var sessionCols = []string{"ID", "LAST SEEN", "SEVERITY", "CLASS", "SCORE", "HITS", "SOURCE IP", "USER AGENT"}

func sessionRow(s apiclient.Session) []string {
	return []string{s.Id, s.LastSeen.UTC().Format(time.RFC3339), string(s.Severity), string(s.Classification),
		strconv.Itoa(s.Score), strconv.Itoa(s.HitCount), s.SourceIp, s.UserAgent}
}

// timeFlag is an optional time: RFC 3339, or a duration back from now (1h, 30m).
type timeFlag struct{ t *time.Time }

func (f *timeFlag) String() string {
	if f.t == nil {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

func (f *timeFlag) Set(s string) error {
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		t := time.Now().Add(-d).UTC().Truncate(time.Second)
		f.t = &t
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return errors.New("want an RFC 3339 time (2026-01-02T15:04:05Z) or a duration back from now (1h)")
	}
	f.t = &t
	return nil
}

func sessionsList(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	var severity, class, trap, ip, cursor string
	var since, until timeFlag
	var limit int
	var all bool
	fs.StringVar(&severity, "severity", "", "critical, high, medium or low")
	fs.StringVar(&class, "classification", "", "e.g. AI_AGENT_MALICIOUS")
	fs.StringVar(&trap, "trap", "", "only sessions that hit this trap")
	fs.StringVar(&ip, "source-ip", "", "only sessions from this address")
	fs.Var(&since, "since", "last seen at or after: RFC 3339 or a duration back from now (1h)")
	fs.Var(&until, "until", "last seen before: RFC 3339 or a duration back from now")
	fs.IntVar(&limit, "limit", 50, "page size, 1-100")
	fs.StringVar(&cursor, "cursor", "", "the next_cursor of a previous page")
	fs.BoolVar(&all, "all", false, "follow the pages to the end (the table then holds them all)")
	return func(ctx context.Context) error {
		p := &apiclient.ListSessionsParams{Since: since.t, Until: until.t, Limit: &limit}
		if severity != "" {
			v := apiclient.ListSessionsParamsSeverity(severity)
			p.Severity = &v
		}
		if class != "" {
			v := apiclient.ListSessionsParamsClassification(class)
			p.Classification = &v
		}
		if trap != "" {
			p.TrapId = &trap
		}
		if ip != "" {
			p.SourceIp = &ip
		}
		if cursor != "" {
			p.Cursor = &cursor
		}
		var out []apiclient.Session
		for {
			resp, err := c.api.ListSessionsWithResponse(ctx, p)
			if err := check(err, resp, http.StatusOK); err != nil {
				return err
			}
			out = append(out, resp.JSON200.Data...)
			pg := resp.JSON200.Pagination
			if !pg.HasMore {
				break
			}
			if !all {
				fmt.Fprintf(c.stderr, "more sessions: --cursor %s (or --all)\n", pg.NextCursor)
				break
			}
			next := pg.NextCursor
			p.Cursor = &next
		}
		return emit(c, out, sessionCols, sessionRow)
	}
}

func sessionsShow(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	return func(ctx context.Context) error {
		resp, err := c.api.GetSessionWithResponse(ctx, c.args[0], nil)
		if err := check(err, resp, http.StatusOK); err != nil {
			return err
		}
		if c.opts.output != "table" {
			return json.NewEncoder(c.stdout).Encode(resp.JSON200.Data)
		}
		// The table view: the session's figures, one per line.
		var m map[string]any
		if err := json.Unmarshal(resp.Body, &struct {
			Data *map[string]any `json:"data"`
		}{&m}); err != nil {
			return err
		}
		type kv struct{ k, v string }
		var rows []kv
		for _, k := range []string{"id", "classification", "severity", "score", "confidence", "source_ip", "user_agent", "first_seen", "last_seen", "hit_count"} {
			if v, ok := m[k]; ok {
				rows = append(rows, kv{k, fmt.Sprint(v)})
			}
		}
		for _, k := range []string{"signals", "hits", "callbacks"} {
			if l, ok := m[k].([]any); ok {
				rows = append(rows, kv{k, strconv.Itoa(len(l))})
			}
		}
		return emit(c, rows, []string{"FIELD", "VALUE"}, func(r kv) []string { return []string{r.k, r.v} })
	}
}

var eventCols = []string{"ID", "CREATED", "TYPE", "DATA"}

func eventRow(e apiclient.Event) []string {
	data, _ := json.Marshal(e.Data)
	return []string{e.Id, e.CreatedAt.UTC().Format(time.RFC3339), string(e.Type), string(data)}
}

func eventsList(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	var typ, cursor string
	var limit int
	fs.StringVar(&typ, "type", "", "only events of these types, comma-separated (threat.detected,trap.created)")
	fs.StringVar(&cursor, "cursor", "", "start after this cursor (a previous page's next_cursor)")
	fs.IntVar(&limit, "limit", 50, "page size, 1-100")
	return func(ctx context.Context) error {
		p := &apiclient.ListEventsParams{Limit: &limit}
		if typ != "" {
			t := apiclient.EventTypeFilter(strings.Split(typ, ","))
			p.EventTypeFilter = &t
		}
		if cursor != "" {
			p.Cursor = &cursor
		}
		resp, err := c.api.ListEventsWithResponse(ctx, p)
		if err := check(err, resp, http.StatusOK); err != nil {
			return err
		}
		if resp.JSON200.HasMore {
			fmt.Fprintf(c.stderr, "more events: --cursor %s\n", resp.JSON200.NextCursor)
		}
		return emit(c, resp.JSON200.Events, eventCols, eventRow)
	}
}

// eventsTail follows the SSE stream, one event a line as it comes (table: a row; json and
// ndjson: one JSON object a line). When the connection drops it reconnects, with a growing
// pause, sending the last id received as Last-Event-ID: the stream continues right after
// it, with no gap and no repeat. An answer that is an error (a revoked key) ends it.
func eventsTail(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	var typ, cursor string
	fs.StringVar(&typ, "type", "", "only events of these types, comma-separated")
	fs.StringVar(&cursor, "cursor", "", "start right after this event (an id of the stream or a cursor of events list)")
	return func(ctx context.Context) error {
		last := cursor
		pause := 500 * time.Millisecond
		for {
			p := &apiclient.StreamEventsParams{}
			if typ != "" {
				t := apiclient.EventTypeFilter(strings.Split(typ, ","))
				p.EventTypeFilter = &t
			}
			if last != "" {
				l := last
				p.LastEventID = &l
			}
			got, err := tailOnce(ctx, c, p, &last)
			if ctx.Err() != nil {
				return nil
			}
			var ee *exitError
			if errors.As(err, &ee) {
				return err
			}
			if got {
				pause = 500 * time.Millisecond
			}
			fmt.Fprintf(c.stderr, "stream dropped (%v); reconnecting in %s after %q\n", err, pause, last)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(pause):
			}
			pause = min(2*pause, 30*time.Second)
		}
	}
}

// tailOnce reads one connection of the stream, writing its events and keeping the last id.
// got says whether any message came; an API error answer is an *exitError.
func tailOnce(ctx context.Context, c *apiCall, p *apiclient.StreamEventsParams, last *string) (got bool, err error) {
	resp, err := c.api.StreamEvents(ctx, p)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body := make([]byte, 4096)
		n, _ := resp.Body.Read(body)
		return false, apiFailure(resp.StatusCode, body[:n])
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var id string
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 {
				var e apiclient.Event
				if err := json.Unmarshal([]byte(data.String()), &e); err != nil {
					return got, fmt.Errorf("a message that is not an event: %w", err)
				}
				if err := writeEvent(c, e); err != nil {
					return got, &exitError{exitFailure, err}
				}
				got = true
				if id != "" {
					*last = id
				}
			}
			id = ""
			data.Reset()
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil {
		return got, err
	}
	return got, errors.New("the server closed the stream")
}

func writeEvent(c *apiCall, e apiclient.Event) error {
	if c.opts.output == "ecs" {
		return writeECS(c, e)
	}
	if c.opts.output != "table" {
		return json.NewEncoder(c.stdout).Encode(e)
	}
	row := eventRow(e)
	for i := range row {
		row[i] = cell(row[i])
	}
	_, err := fmt.Fprintln(c.stdout, strings.Join(row, "  "))
	return err
}

// writeECS writes e as one line of ECS-named NDJSON, the document the webhook format "ecs"
// sends (package ecs maps both), for a SIEM's file or stdin input.
func writeECS(c *apiCall, e apiclient.Event) error {
	raw, err := json.Marshal(e)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	line, err := ecs.Line(m)
	if err != nil {
		return err
	}
	_, err = c.stdout.Write(line)
	return err
}
