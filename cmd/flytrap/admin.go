package main

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	entkey "github.com/flytrap/flytrap/ent/apikey"
	"github.com/flytrap/flytrap/ent/organization"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/sequence"
	entsite "github.com/flytrap/flytrap/ent/site"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/viewer"
)

// The command line acts for the operator of the machine, not for a tenant: it
// bypasses the tenant policy explicitly.
func system(ctx context.Context) context.Context { return privacy.DecisionContext(ctx, privacy.Allow) }

type bootstrapped struct {
	OrgID, SiteID, KeyID, Key string
}

// bootstrap creates the first organization, its default site and an admin key on an
// empty database. Instances starting together on one database agree on who does it:
// the counter row is locked until the transaction ends.
func bootstrap(ctx context.Context, client *ent.Client) (*bootstrapped, error) {
	ctx = system(ctx)
	tx, err := client.Tx(ctx)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	defer tx.Rollback()
	err = tx.Sequence.Create().SetID("bootstrap").SetValue(1).
		OnConflictColumns(sequence.FieldID).AddValue(1).Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	n, err := tx.Organization.Query().Count(ctx)
	if err != nil || n > 0 {
		return nil, err
	}
	org, err := tx.Organization.Create().SetName("Default organization").Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("bootstrap organization: %w", err)
	}
	site, err := tx.Site.Create().SetOrgID(org.ID).SetName("default").Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("bootstrap site: %w", err)
	}
	key, k, err := createKey(ctx, tx.Client(), org.ID, "bootstrap admin key", viewer.Admin)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	return &bootstrapped{OrgID: org.ID, SiteID: site.ID, KeyID: k.ID, Key: key}, nil
}

// createOrg makes an organization with its default site.
func createOrg(ctx context.Context, client *ent.Client, name string) (*ent.Organization, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, apperr.Invalid("--name", "must not be empty")
	}
	ctx = system(ctx)
	tx, err := client.Tx(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	org, err := tx.Organization.Create().SetName(name).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("create organization: %w", err)
	}
	if _, err := tx.Site.Create().SetOrgID(org.ID).SetName("default").Save(ctx); err != nil {
		return nil, fmt.Errorf("create default site: %w", err)
	}
	return org, tx.Commit()
}

// createKey makes an API key and returns it in full, the only time it is ever available.
func createKey(ctx context.Context, client *ent.Client, org, name string, scope viewer.Scope) (string, *ent.APIKey, error) {
	ctx = system(ctx)
	if err := orgExists(ctx, client, org); err != nil {
		return "", nil, err
	}
	if strings.TrimSpace(name) == "" {
		return "", nil, apperr.Invalid("--name", "must not be empty")
	}
	key, k, err := app.CreateAPIKey(ctx, client, org, name, scope)
	if err != nil {
		return "", nil, fmt.Errorf("create key: %w", err)
	}
	return key, k, nil
}

func listKeys(ctx context.Context, client *ent.Client, org string) ([]*ent.APIKey, error) {
	ctx = system(ctx)
	if err := orgExists(ctx, client, org); err != nil {
		return nil, err
	}
	return client.APIKey.Query().Where(entkey.OrgID(org)).Order(entkey.ByCreatedAt(), entkey.ByID()).All(ctx)
}

func revokeKey(ctx context.Context, client *ent.Client, id string) error {
	ctx = system(ctx)
	if ids.Prefix(id) != ids.APIKey {
		return apperr.Invalid("KEY_ID", "%q is not an API key id (key_…)", id)
	}
	_, err := app.RevokeAPIKey(ctx, client, id, time.Now())
	if ent.IsNotFound(err) {
		return apperr.NotFound("API key " + id)
	}
	return err
}

func orgExists(ctx context.Context, client *ent.Client, org string) error {
	if org == "" {
		return apperr.Invalid("--org", "must be given")
	}
	ok, err := client.Organization.Query().Where(organization.ID(org)).Exist(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return apperr.NotFound("organization " + org)
	}
	return nil
}

func listOrgs(ctx context.Context, client *ent.Client) ([]*ent.Organization, error) {
	return client.Organization.Query().Order(organization.ByCreatedAt(), organization.ByID()).All(system(ctx))
}

// webhookNetwork is a change to an organization's webhook network; nil fields stay as they are.
type webhookNetwork struct {
	AllowCIDRs           *[]string
	AllowPrivate         *bool
	ShowPrivateResponses *bool
}

func setWebhookNetwork(ctx context.Context, client *ent.Client, org string, n webhookNetwork) (*ent.Organization, error) {
	ctx = system(ctx)
	if err := orgExists(ctx, client, org); err != nil {
		return nil, err
	}
	u := client.Organization.UpdateOneID(org)
	if n.AllowCIDRs != nil {
		u.SetWebhookAllowCidrs(*n.AllowCIDRs)
	}
	if n.AllowPrivate != nil {
		u.SetWebhookAllowPrivate(*n.AllowPrivate)
	}
	if n.ShowPrivateResponses != nil {
		u.SetWebhookShowPrivateResponses(*n.ShowPrivateResponses)
	}
	return u.Save(ctx)
}

// parseCIDRs reads a comma-separated list of CIDRs (a bare address is its /32 or /128), canonical.
func parseCIDRs(v string) ([]string, error) {
	out := []string{}
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			a, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return nil, apperr.Invalid("--allow-cidrs", "%q is not a CIDR", p)
			}
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, pfx.Masked().String())
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func listSites(ctx context.Context, client *ent.Client, org string) ([]*ent.Site, error) {
	ctx = system(ctx)
	q := client.Site.Query()
	if org != "" {
		if err := orgExists(ctx, client, org); err != nil {
			return nil, err
		}
		q.Where(entsite.OrgID(org))
	}
	return q.Order(entsite.ByOrgID(), entsite.ByCreatedAt(), entsite.ByID()).All(ctx)
}

// verifySite marks (or unmarks) a site's host as the operator's checked assignment: the trap
// listener routes that host to this site only. One verified site per host.
func verifySite(ctx context.Context, client *ent.Client, id string, verified bool) (*ent.Site, error) {
	ctx = system(ctx)
	if ids.Prefix(id) != ids.Site {
		return nil, apperr.Invalid("SITE_ID", "%q is not a site id (site_…)", id)
	}
	tx, err := client.Tx(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	s, err := tx.Site.Get(ctx, id)
	if ent.IsNotFound(err) {
		return nil, apperr.NotFound("site " + id)
	}
	if err != nil {
		return nil, err
	}
	if verified {
		if s.Host == nil {
			return nil, apperr.Conflict("site %s has no host to verify", id)
		}
		other, err := tx.Site.Query().
			Where(entsite.Host(*s.Host), entsite.HostVerified(true), entsite.IDNEQ(id)).First(ctx)
		if err == nil {
			return nil, apperr.Conflict("host %s is already verified for site %s of organization %s; run flytrap admin sites unverify %s first",
				*s.Host, other.ID, other.OrgID, other.ID)
		}
		if !ent.IsNotFound(err) {
			return nil, err
		}
	}
	s, err = tx.Site.UpdateOneID(id).SetHostVerified(verified).Save(ctx)
	if err != nil {
		return nil, err
	}
	return s, tx.Commit()
}
