package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/schematype"
)

// Bounds of a site's lure configuration.
const (
	maxLurePaths   = 64
	maxLurePathLen = 200
)

// siteLures is flytrap sites lures: how the lure proxy (serve --upstream) puts lures
// into one site's pages. Flags left out keep their current values.
func siteLures(fs *flag.FlagSet) action {
	off := fs.Bool("off", false, "no lures in this site's pages (--off=false: lures again)")
	paths := fs.String("paths", "", "comma-separated path prefixes whose pages get lures; \"*\": every page")
	rate := fs.Float64("rate", 1, "share of those pages that get lures, 0 to 1")
	count := fs.Int("count", 2, "lures per page, 1 to "+strconv.Itoa(decoy.MaxLures))
	reset := fs.Bool("reset", false, "back to the default: two lures in every HTML page")
	return action{run: func(ctx context.Context, call *call) error {
		id, db := call.id, call.db
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		ctx = system(ctx)
		s, err := db.Client.Site.Get(ctx, id)
		if ent.IsNotFound(err) {
			return apperr.NotFound("site " + id)
		}
		if err != nil {
			return err
		}
		c := schematype.DefaultLures
		if s.Lures != nil && !*reset {
			c = *s.Lures
		}
		if set["off"] {
			c.Off = *off
		}
		if set["rate"] {
			if !(*rate >= 0 && *rate <= 1) {
				return fmt.Errorf("--rate: %v is not between 0 and 1", *rate)
			}
			c.Rate = *rate
		}
		if set["count"] {
			if *count < 1 || *count > decoy.MaxLures {
				return fmt.Errorf("--count: %d is not between 1 and %d", *count, decoy.MaxLures)
			}
			c.Count = *count
		}
		if set["paths"] {
			c.Paths, err = lurePaths(*paths)
			if err != nil {
				return err
			}
		}
		upd := db.Client.Site.UpdateOneID(id).SetLures(&c)
		if *reset && len(set) == 1 {
			upd = db.Client.Site.UpdateOneID(id).ClearLures()
		}
		if s, err = upd.Save(ctx); err != nil {
			return err
		}
		printSites(call.stdout, []*ent.Site{s})
		return nil
	}}
}

func lurePaths(v string) ([]string, error) {
	if strings.TrimSpace(v) == "*" || strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if p[0] != '/' || len(p) > maxLurePathLen || strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return nil, fmt.Errorf("--paths: %q is not a path prefix (it starts with /, has no spaces, at most %d bytes)", p, maxLurePathLen)
		}
		out = append(out, p)
	}
	if len(out) > maxLurePaths {
		return nil, fmt.Errorf("--paths: %d prefixes, at most %d", len(out), maxLurePaths)
	}
	return out, nil
}

// lureSummary is a site's lure configuration in one column of flytrap sites list.
func lureSummary(c *schematype.LureConfig) string {
	if c == nil {
		d := schematype.DefaultLures
		c = &d
	}
	if c.Off {
		return "off"
	}
	where := "all"
	if len(c.Paths) > 0 {
		where = strings.Join(c.Paths, ",")
	}
	return fmt.Sprintf("%s %s%% x%d", where, strconv.FormatFloat(c.Rate*100, 'f', -1, 64), c.Count)
}
