package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/flytrap/flytrap/apiclient"
	"github.com/flytrap/flytrap/apiclient/gql"
	_ "github.com/flytrap/flytrap/ent/runtime" // the field validators flytrap validate applies
	"github.com/flytrap/flytrap/ent/schema"
	"github.com/flytrap/flytrap/ent/trap"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/server"
)

// Traps as code (docs/traps-as-code.md): a file of traps per site, checked offline
// (validate), compared with the service (plan) and made so (apply).

// fileCommands are the trap file's commands (client.go's init lists them).
var fileCommands = []*command{
	{name: "validate", synopsis: "validate -f traps.yaml", summary: []string{"check a trap file offline, by the API's rules"},
		client: true, own: validateCmd},
	apiCommand("plan", "plan -f traps.yaml [--prune]", []string{"show what apply would change (API)"}, 0, planCmd(false)),
	apiCommand("apply", "apply -f traps.yaml [--prune]",
		[]string{"make the traps what the file says, showing the diff", "first; --prune deletes the others of its sites (API)"}, 0, planCmd(true)),
}

// trapFile is a trap file.
type trapFile struct {
	Sites []fileSite `yaml:"sites"`
}

// fileSite is the traps of one site.
type fileSite struct {
	// Site is a site id (site_…), a site's host (shop.example.com), or "default": the
	// organization's first site, where traps go when no site is named.
	Site  string     `yaml:"site"`
	Traps []fileTrap `yaml:"traps"`
}

// fileTrap is one trap: with its site, its path is its identity.
type fileTrap struct {
	Path        string `yaml:"path"`
	Name        string `yaml:"name"`
	Type        string `yaml:"type"`
	Description string `yaml:"description"`
	PublicTitle string `yaml:"public_title"`
	Active      *bool  `yaml:"active"`
}

func (t fileTrap) active() bool { return t.Active == nil || *t.Active }

// maxFileTraps bounds a trap file (the API lists at most 10,000 traps).
const maxFileTraps = 10000

// readTrapFile reads and validates a trap file ("-": standard input). Its errors are
// exitInvalid, each naming where in the file it is.
func readTrapFile(path string, stdin io.Reader) (*trapFile, error) {
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(io.LimitReader(stdin, 16<<20))
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	var f trapFile
	if err := yaml.UnmarshalWithOptions(raw, &f, yaml.Strict()); err != nil {
		return nil, &exitError{exitInvalid, fmt.Errorf("%s:\n%s", path, yaml.FormatError(err, false, true))}
	}
	if errs := f.validate(); len(errs) > 0 {
		return nil, &exitError{exitInvalid, fmt.Errorf("%s: %d problem(s):\n  %s", path, len(errs), strings.Join(errs, "\n  "))}
	}
	return &f, nil
}

// validate checks the file with the API's own rules (the generated field validators and
// the path rule of ent/schema): what it accepts, the API accepts.
func (f *trapFile) validate() []string {
	var errs []string
	bad := func(where, format string, a ...any) { errs = append(errs, where+": "+fmt.Sprintf(format, a...)) }
	if len(f.Sites) == 0 {
		bad("sites", "the file lists no site (a file that means \"no traps\" says so: sites: [{site: default, traps: []}])")
	}
	seenSite := map[string]bool{}
	n := 0
	for i, s := range f.Sites {
		where := fmt.Sprintf("sites[%d]", i)
		switch {
		case s.Site == "":
			bad(where+".site", "is required: a site id (site_…), a host, or default")
		case strings.HasPrefix(s.Site, ids.Site+"_") && !validID(s.Site):
			bad(where+".site", "%q is not a valid site id", clipText(s.Site))
		case len(s.Site) > 253:
			bad(where+".site", "is longer than 253 characters")
		}
		if seenSite[s.Site] {
			bad(where+".site", "%q is listed twice: put its traps in one list", clipText(s.Site))
		}
		seenSite[s.Site] = true
		seenPath := map[string]int{}
		for j, t := range s.Traps {
			n++
			tw := fmt.Sprintf("%s.traps[%d]", where, j)
			if t.Path != "" {
				tw += " (" + clipText(t.Path) + ")"
			}
			if t.Path == "" {
				bad(tw+".path", "is required: with the site, it is the trap's identity")
			} else if err := trap.PathValidator(t.Path); err != nil || !schema.ValidPath(t.Path) {
				bad(tw+".path", "must start with /, contain no spaces, control characters, ?, # or \\, and have at most 512 bytes")
			} else if k, dup := seenPath[t.Path]; dup {
				bad(tw+".path", "is also the path of traps[%d] of this site", k)
			} else {
				seenPath[t.Path] = j
			}
			if err := trap.NameValidator(t.Name); err != nil {
				bad(tw+".name", "%s", fieldReason(err, "must be 1 to 200 characters of text"))
			}
			if err := trap.TypeValidator(trap.Type(t.Type)); err != nil {
				bad(tw+".type", "%q is not a trap type (want %s)", clipText(t.Type), strings.Join(trapTypes(), ", "))
			}
			if err := trap.DescriptionValidator(t.Description); err != nil {
				bad(tw+".description", "%s", fieldReason(err, "must be at most 2,000 characters of text"))
			}
			if err := trap.PublicTitleValidator(t.PublicTitle); err != nil {
				bad(tw+".public_title", "%s", fieldReason(err, "must be one line of at most 120 characters"))
			}
		}
	}
	if n > maxFileTraps {
		bad("sites", "%d traps: at most %d", n, maxFileTraps)
	}
	return errs
}

func validID(id string) bool {
	_, ok := ids.Parse(id, ids.Site)
	return ok
}

// fieldReason is a validator's reason without ent's prefix, or def.
func fieldReason(err error, def string) string {
	if _, r, ok := strings.Cut(err.Error(), ": "); ok && r != "" {
		return def + " (" + r + ")"
	}
	return def
}

func trapTypes() []string {
	return graph.EnumValues("TrapType")
}

// clipText is attacker- or user-supplied text fit for an error line.
func clipText(s string) string {
	s = strconv.Quote(s)
	s = s[1 : len(s)-1]
	if len(s) > 80 {
		s = s[:79] + "…"
	}
	return s
}

func validateCmd(ctx context.Context, args []string, stdout, stderr io.Writer, env server.Env) error {
	fs := flag.NewFlagSet("flytrap validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "the trap file (- for standard input)")
	c := commandNamed("validate")
	fs.Usage = func() { c.writeHelp(fs) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" || fs.NArg() > 0 {
		return errors.New("usage: flytrap validate -f traps.yaml")
	}
	f, err := readTrapFile(*file, os.Stdin)
	if err != nil {
		return err
	}
	n := 0
	for _, s := range f.Sites {
		n += len(s.Traps)
	}
	fmt.Fprintf(stdout, "%s: valid, %d trap(s) on %d site(s)\n", *file, n, len(f.Sites))
	return nil
}

// change is one step of a plan.
type change struct {
	Action string `json:"action"` // create, update, replace, delete
	SiteID string `json:"site_id"`
	Path   string `json:"path"`
	TrapID string `json:"trap_id,omitempty"` // the existing trap (update, replace, delete)
	// Changes are the fields an update or replace changes: [from, to].
	Changes map[string][2]any `json:"changes,omitempty"`
	want    *fileTrap
	result  string // the trap made (create, replace)
}

// plan is what apply does.
type plan struct {
	Changes   []change `json:"changes"`
	Unchanged int      `json:"unchanged"`
}

func (p *plan) count(action string) int {
	n := 0
	for _, c := range p.Changes {
		if c.Action == action {
			n++
		}
	}
	return n
}

func (p *plan) summary() string {
	return fmt.Sprintf("%d to create, %d to update, %d to replace, %d to delete; %d unchanged",
		p.count("create"), p.count("update"), p.count("replace"), p.count("delete"), p.Unchanged)
}

// resolveSites is the site id of each site of the file.
func resolveSites(ctx context.Context, c *apiCall, f *trapFile) (map[string]string, error) {
	all, err := sites(ctx, c)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, &exitError{exitNotFound, errors.New("the organization has no site")}
	}
	first := slices.MinFunc(all, func(a, b gql.SiteFields) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.Id, b.Id))
	})
	out := map[string]string{}
	for _, s := range f.Sites {
		if s.Site == "default" {
			out[s.Site] = first.Id
			continue
		}
		i := slices.IndexFunc(all, func(x gql.SiteFields) bool {
			return x.Id == s.Site || (x.Host != nil && strings.EqualFold(*x.Host, s.Site))
		})
		if i < 0 {
			return nil, &exitError{exitNotFound, fmt.Errorf("site %q: the organization has no such site (an id or a host)", clipText(s.Site))}
		}
		out[s.Site] = all[i].Id
	}
	return out, nil
}

// makePlan compares the file with the service's traps. A trap of the file is the service's
// trap of the same site and path (the active one, else the newest); an update changes its
// name, description, public title and active flag in place, a different type replaces it (delete, then
// create). With prune, every other trap of the file's sites is deleted.
func makePlan(f *trapFile, siteIDs map[string]string, existing []apiclient.Trap, prune bool) *plan {
	p := &plan{Changes: []change{}}
	type key struct{ site, path string }
	byKey := map[key][]apiclient.Trap{}
	for _, t := range existing {
		k := key{t.SiteId, t.Path}
		byKey[k] = append(byKey[k], t)
	}
	matched := map[string]bool{}
	for _, s := range f.Sites {
		site := siteIDs[s.Site]
		for i := range s.Traps {
			want := &s.Traps[i]
			cands := byKey[key{site, want.Path}]
			if len(cands) == 0 {
				p.Changes = append(p.Changes, change{Action: "create", SiteID: site, Path: want.Path, want: want})
				continue
			}
			have := slices.MaxFunc(cands, func(a, b apiclient.Trap) int {
				return cmp.Or(cmp.Compare(a.Active, b.Active), a.CreatedAt.Compare(b.CreatedAt))
			})
			matched[have.Id] = true
			diff := map[string][2]any{}
			if have.Name != want.Name {
				diff["name"] = [2]any{have.Name, want.Name}
			}
			if have.Description != want.Description {
				diff["description"] = [2]any{have.Description, want.Description}
			}
			if have.PublicTitle != want.PublicTitle {
				diff["public_title"] = [2]any{have.PublicTitle, want.PublicTitle}
			}
			if (have.Active == 1) != want.active() {
				diff["active"] = [2]any{have.Active == 1, want.active()}
			}
			switch {
			case string(have.Type) != want.Type:
				diff["type"] = [2]any{string(have.Type), want.Type}
				p.Changes = append(p.Changes, change{Action: "replace", SiteID: site, Path: want.Path, TrapID: have.Id, Changes: diff, want: want})
			case len(diff) > 0:
				p.Changes = append(p.Changes, change{Action: "update", SiteID: site, Path: want.Path, TrapID: have.Id, Changes: diff, want: want})
			default:
				p.Unchanged++
			}
		}
	}
	if prune {
		inFile := map[string]bool{}
		for _, id := range siteIDs {
			inFile[id] = true
		}
		for _, t := range existing {
			if inFile[t.SiteId] && !matched[t.Id] {
				p.Changes = append(p.Changes, change{Action: "delete", SiteID: t.SiteId, Path: t.Path, TrapID: t.Id})
			}
		}
	}
	return p
}

var actionMark = map[string]string{"create": "+", "update": "~", "replace": "-/+", "delete": "-"}

// write shows p as a diff: one line a change, its fields' old and new values after it.
func (p *plan) write(w io.Writer) {
	for _, c := range p.Changes {
		id := c.TrapID
		if id == "" {
			id = "(new)"
		}
		fmt.Fprintf(w, "%-3s %-7s %s %s  %s\n", actionMark[c.Action], c.Action, c.SiteID, clipText(c.Path), id)
		if c.Action == "create" {
			fmt.Fprintf(w, "        name: %q, type: %s, active: %t\n", c.want.Name, c.want.Type, c.want.active())
		}
		for _, f := range slices.Sorted(mapsKeys(c.Changes)) {
			fmt.Fprintf(w, "        %s: %s → %s\n", f, show(c.Changes[f][0]), show(c.Changes[f][1]))
		}
	}
}

func mapsKeys(m map[string][2]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(clipText(s))
	}
	return fmt.Sprint(v)
}

func planCmd(apply bool) func(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	return func(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
		file := fs.String("f", "", "the trap file (- for standard input)")
		prune := fs.Bool("prune", false, "delete the traps of the file's sites that the file does not list")
		return func(ctx context.Context) error {
			if *file == "" {
				return errors.New("-f is required: the trap file")
			}
			f, err := readTrapFile(*file, os.Stdin)
			if err != nil {
				return err
			}
			siteIDs, err := resolveSites(ctx, c, f)
			if err != nil {
				return err
			}
			existing, err := listTraps(ctx, c, &apiclient.ListTrapsParams{})
			if err != nil {
				return err
			}
			p := makePlan(f, siteIDs, existing, *prune)
			if !apply {
				if c.opts.output != "table" {
					return json.NewEncoder(c.stdout).Encode(p)
				}
				p.write(c.stdout)
				if len(p.Changes) == 0 {
					fmt.Fprintf(c.stdout, "No changes: the service's traps match the file (%d).\n", p.Unchanged)
				} else {
					fmt.Fprintf(c.stdout, "Plan: %s.\n", p.summary())
				}
				return nil
			}
			if c.opts.output == "table" {
				p.write(c.stdout)
			}
			if len(p.Changes) == 0 {
				if c.opts.output != "table" {
					return json.NewEncoder(c.stdout).Encode(p)
				}
				fmt.Fprintf(c.stdout, "No changes: the service's traps match the file (%d).\n", p.Unchanged)
				return nil
			}
			if err := p.apply(ctx, c); err != nil {
				return err
			}
			if c.opts.output != "table" {
				return json.NewEncoder(c.stdout).Encode(p)
			}
			fmt.Fprintf(c.stdout, "Applied: %s.\n", p.summary())
			return nil
		}
	}
}

// apply makes p's changes: replaced traps are deleted first (their new trap takes the same
// path), then updates, creates and deletes. It stops at the first error, saying what was
// done; applying the file again completes it.
func (p *plan) apply(ctx context.Context, c *apiCall) error {
	done := 0
	fail := func(ch change, err error) error {
		fmt.Fprintf(c.stderr, "stopped after %d of %d changes: %s %s %s failed\n", done, len(p.Changes), ch.Action, ch.SiteID, clipText(ch.Path))
		return err
	}
	order := map[string]int{"replace": 0, "update": 1, "create": 2, "delete": 3}
	idx := make([]int, len(p.Changes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return order[p.Changes[a].Action] - order[p.Changes[b].Action] })
	for _, i := range idx {
		ch := &p.Changes[i]
		switch ch.Action {
		case "replace":
			if err := deleteTrap(ctx, c, ch.TrapID); err != nil {
				return fail(*ch, err)
			}
			fallthrough
		case "create":
			t, err := createTrap(ctx, c, ch.SiteID, ch.want)
			if err != nil {
				return fail(*ch, err)
			}
			ch.result = t.Id
			fmt.Fprintf(c.stderr, "%sd %s %s\n", ch.Action, t.Id, clipText(ch.Path))
		case "update":
			w := ch.want
			var body apiclient.TrapUpdate
			var active *bool
			if _, ok := ch.Changes["name"]; ok {
				body.Name = &w.Name
			}
			if _, ok := ch.Changes["description"]; ok {
				body.Description = &w.Description
			}
			if _, ok := ch.Changes["public_title"]; ok {
				body.PublicTitle = &w.PublicTitle
			}
			if _, ok := ch.Changes["active"]; ok {
				a := w.active()
				active = &a
			}
			if _, err := updateTrap(ctx, c, ch.TrapID, body, active); err != nil {
				return fail(*ch, err)
			}
			fmt.Fprintf(c.stderr, "updated %s %s\n", ch.TrapID, clipText(ch.Path))
		case "delete":
			if err := deleteTrap(ctx, c, ch.TrapID); err != nil {
				return fail(*ch, err)
			}
			fmt.Fprintf(c.stderr, "deleted %s %s\n", ch.TrapID, clipText(ch.Path))
		}
		done++
	}
	return nil
}

func deleteTrap(ctx context.Context, c *apiCall, id string) error {
	resp, err := c.api.DeleteTrapWithResponse(ctx, id, nil)
	return check(err, resp, 200)
}

// createTrap makes the file's trap w on site; an inactive one is made, then deactivated
// (the API creates traps active). The create carries an Idempotency-Key of its own, so
// that when no answer comes (a dropped connection) it is sent once more without the risk
// of a second trap: the service answers the first trap again.
func createTrap(ctx context.Context, c *apiCall, site string, w *fileTrap) (apiclient.Trap, error) {
	body := apiclient.TrapCreate{Name: w.Name, Type: apiclient.TrapCreateType(w.Type), Path: &w.Path, SiteId: &site, Description: &w.Description, PublicTitle: &w.PublicTitle}
	key := "flytrap-apply-" + ids.NewFunc("idem")()
	params := &apiclient.CreateTrapParams{IdempotencyKey: &key}
	resp, err := c.api.CreateTrapWithResponse(ctx, params, body)
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(c.stderr, "no answer to the create of %s (%v); sending it again with its Idempotency-Key\n", clipText(w.Path), err)
		resp, err = c.api.CreateTrapWithResponse(ctx, params, body)
	}
	if err := check(err, resp, 201); err != nil {
		return apiclient.Trap{}, err
	}
	t := resp.JSON201.Data
	if !w.active() {
		off := false
		return updateTrap(ctx, c, t.Id, apiclient.TrapUpdate{}, &off)
	}
	return t, nil
}
