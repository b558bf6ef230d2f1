package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/viewer"
)

// The commands on organizations, their sites and their keys (rows of commands).

func orgsCreate(fs *flag.FlagSet) action {
	name := fs.String("name", "", "organization name")
	return action{
		check: func() error {
			if strings.TrimSpace(*name) == "" {
				return errors.New("--name: must not be empty")
			}
			return nil
		},
		run: func(ctx context.Context, c *call) error {
			org, err := createOrg(ctx, c.db.Client, *name)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.stdout, org.ID)
			return nil
		},
	}
}

func orgsList(*flag.FlagSet) action {
	return action{run: func(ctx context.Context, c *call) error {
		list, err := listOrgs(ctx, c.db.Client)
		if err != nil {
			return err
		}
		printOrgs(c.stdout, list)
		return nil
	}}
}

func orgsSetWebhookNetwork(fs *flag.FlagSet) action {
	org := fs.String("org", "", "organization id")
	cidrs := fs.String("allow-cidrs", "", "comma-separated private networks this organization's webhooks may reach; empty clears the list")
	private := fs.Bool("allow-private", false, "let this organization's webhooks reach every private, loopback and link-local address")
	show := fs.Bool("show-private-responses", false, "store and show receivers' answers from addresses that needed an allow-list")
	var change webhookNetwork
	return action{
		check: func() error {
			if err := checkOrg(*org); err != nil {
				return err
			}
			// Only the flags given change; the others keep their stored value.
			fs.Visit(func(f *flag.Flag) {
				switch f.Name {
				case "allow-private":
					change.AllowPrivate = private
				case "show-private-responses":
					change.ShowPrivateResponses = show
				}
			})
			if set(fs, "allow-cidrs") {
				list, err := parseCIDRs(*cidrs)
				if err != nil {
					return err
				}
				change.AllowCIDRs = &list
			}
			if change == (webhookNetwork{}) {
				return errors.New("give at least one of --allow-cidrs, --allow-private, --show-private-responses")
			}
			return nil
		},
		run: func(ctx context.Context, c *call) error {
			o, err := setWebhookNetwork(ctx, c.db.Client, *org, change)
			if err != nil {
				return err
			}
			printOrgs(c.stdout, []*ent.Organization{o})
			return nil
		},
	}
}

// checkOrg refuses what is not an organization id, before the database is opened.
func checkOrg(org string) error {
	if ids.Prefix(org) != ids.Org {
		return fmt.Errorf("--org: %q is not an organization id (org_…)", org)
	}
	return nil
}

func sitesList(fs *flag.FlagSet) action {
	org := fs.String("org", "", "only this organization's sites")
	return action{
		check: func() error {
			if *org != "" {
				return checkOrg(*org)
			}
			return nil
		},
		run: func(ctx context.Context, c *call) error {
			list, err := listSites(ctx, c.db.Client, *org)
			if err != nil {
				return err
			}
			printSites(c.stdout, list)
			return nil
		},
	}
}

// sitesVerify is flytrap sites verify (verified) and sites unverify.
func sitesVerify(verified bool) func(*flag.FlagSet) action {
	return func(*flag.FlagSet) action {
		return action{run: func(ctx context.Context, c *call) error {
			s, err := verifySite(ctx, c.db.Client, c.id, verified)
			if err != nil {
				return err
			}
			printSites(c.stdout, []*ent.Site{s})
			return nil
		}}
	}
}

func keysCreate(fs *flag.FlagSet) action {
	org := fs.String("org", "", "organization id")
	name := fs.String("name", "", "a name saying what the key is for")
	scope := fs.String("scope", "", "read-only, read-write or admin")
	var sc viewer.Scope
	return action{
		check: func() error {
			var err error
			if sc, err = viewer.ParseScope(*scope); err != nil {
				return fmt.Errorf("--scope: %w", err)
			}
			if err := checkOrg(*org); err != nil {
				return err
			}
			if strings.TrimSpace(*name) == "" {
				return errors.New("--name: must not be empty")
			}
			return nil
		},
		run: func(ctx context.Context, c *call) error {
			key, _, err := createKey(ctx, c.db.Client, *org, *name, sc)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.stdout, key)
			return nil
		},
	}
}

func keysList(fs *flag.FlagSet) action {
	org := fs.String("org", "", "organization id")
	return action{
		check: func() error { return checkOrg(*org) },
		run: func(ctx context.Context, c *call) error {
			list, err := listKeys(ctx, c.db.Client, *org)
			if err != nil {
				return err
			}
			printKeys(c.stdout, list)
			return nil
		},
	}
}

func keysRevoke(*flag.FlagSet) action {
	return action{run: func(ctx context.Context, c *call) error {
		if err := revokeKey(ctx, c.db.Client, c.id); err != nil {
			return err
		}
		if c.db.Dialect == dialect.Postgres { // end the key's open streams on running instances now
			if err := event.NotifyRevoked(ctx, c.db.SQL, c.id); err != nil {
				fmt.Fprintln(c.stderr, "flytrap: the key is revoked; telling running instances failed:", err)
			}
		}
		fmt.Fprintln(c.stdout, "revoked", c.id)
		return nil
	}}
}

// set reports whether the flag name was given (on the command line or in the environment).
func set(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func printOrgs(w io.Writer, list []*ent.Organization) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tCREATED\tWEBHOOK ALLOW-PRIVATE\tWEBHOOK ALLOW-CIDRS\tSHOW PRIVATE RESPONSES")
	for _, o := range list {
		cidrs := strings.Join(o.WebhookAllowCidrs, ",")
		if cidrs == "" {
			cidrs = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%t\n", o.ID, oneLine(o.Name), o.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"),
			o.WebhookAllowPrivate, cidrs, o.WebhookShowPrivateResponses)
	}
	tw.Flush()
}

// oneLine keeps a tenant-chosen name from breaking the table (or the terminal).
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func printSites(w io.Writer, list []*ent.Site) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tORG\tNAME\tHOST\tVERIFIED\tLURES")
	for _, s := range list {
		host := "-"
		if s.Host != nil {
			host = *s.Host
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%s\n", s.ID, s.OrgID, oneLine(s.Name), host, s.HostVerified, lureSummary(s.Lures))
	}
	tw.Flush()
}

func printKeys(w io.Writer, list []*ent.APIKey) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSCOPE\tPREFIX\tCREATED\tLAST USED\tSTATUS")
	for _, k := range list {
		used, status := "never", "active"
		if k.LastUsedAt != nil {
			used = k.LastUsedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		if k.RevokedAt != nil {
			status = "revoked " + k.RevokedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Name, k.Scope.Human(), k.Prefix,
			k.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), used, status)
	}
	tw.Flush()
}
