package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	gqlclient "github.com/Khan/genqlient/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/flytrap/flytrap/apiclient/gql"
)

// The API client's GraphQL side: what REST does not offer (API keys, sites), through the
// genqlient client of package apiclient/gql.

// keyCommands are the API client's key commands (client.go's init lists them).
var keyCommands = []*command{
	apiCommand("keys list", "keys list [--all]", []string{"the organization's API keys (API, admin scope)"}, 0, keysListAPI),
	apiCommand("keys create", "keys create --name NAME --scope read-only|read-write|admin\n[--site SITE_ID] [--expires 30d|TIME]",
		[]string{"create an API key, at most your key's scope (a deploy key", "of one site with --site); prints the key once (API)"}, 0, keysCreateAPI),
	apiCommand("keys revoke", "keys revoke KEY_ID", []string{"revoke a key at once (API)"}, 1, keysRevokeAPI),
}

// graphQL is the generated GraphQL client on the service's /graphql.
func (c *apiCall) graphQL() gqlclient.Client {
	return gqlclient.NewClient(strings.TrimRight(c.opts.url, "/")+"/graphql", patient{c.opts.key, c.stderr})
}

// gqlFailure is err with the exit code its GraphQL error code (extensions.code) or HTTP
// status says.
func gqlFailure(err error) error {
	var he *gqlclient.HTTPError
	if errors.As(err, &he) {
		return apiFailure(he.StatusCode, []byte(he.Error()))
	}
	var list gqlerror.List
	if errors.As(err, &list) && len(list) > 0 {
		code := exitFailure
		c, _ := list[0].Extensions["code"].(string)
		switch c {
		case "UNAUTHENTICATED", "FORBIDDEN":
			code = exitAuth
		case "NOT_FOUND":
			code = exitNotFound
		case "CONFLICT":
			code = exitConflict
		case "BAD_USER_INPUT", "GRAPHQL_VALIDATION_FAILED":
			code = exitInvalid
		case "TOO_MANY_REQUESTS", "RATE_LIMITED":
			code = exitRateLimit
		}
		return &exitError{code, fmt.Errorf("API: %s (%s)", list[0].Message, c)}
	}
	return unreachable(err)
}

var keyCols = []string{"ID", "NAME", "SCOPE", "SITE", "PREFIX", "CREATED", "LAST USED", "EXPIRES", "REVOKED"}

func keyRow(k gql.KeyFields) []string {
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	site := ""
	if k.SiteID != nil {
		site = *k.SiteID
	}
	return []string{k.Id, k.Name, scopeName(k.Scope), site, k.Prefix, k.CreatedAt.UTC().Format(time.RFC3339), at(k.LastUsedAt), at(k.ExpiresAt), at(k.RevokedAt)}
}

// scopeName is the CLI's (and REST's) spelling of a scope: read-only, read-write, admin.
func scopeName(s gql.ApiKeyScope) string {
	return strings.ReplaceAll(strings.ToLower(string(s)), "_", "-")
}

func keysListAPI(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	all := fs.Bool("all", false, "revoked keys too")
	return func(ctx context.Context) error {
		var keys []gql.KeyFields
		var after *string
		for {
			resp, err := gql.ApiKeys(ctx, c.graphQL(), after)
			if err != nil {
				return gqlFailure(err)
			}
			for _, e := range resp.ApiKeys.Edges {
				if e != nil && e.Node != nil && (*all || e.Node.RevokedAt == nil) {
					keys = append(keys, e.Node.KeyFields)
				}
			}
			pi := resp.ApiKeys.PageInfo
			if !pi.HasNextPage || pi.EndCursor == nil {
				break
			}
			after = pi.EndCursor
		}
		return emit(c, keys, keyCols, keyRow)
	}
}

func keysCreateAPI(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	name := fs.String("name", "", "the key's name (required)")
	scope := fs.String("scope", "", "read-only, read-write or admin (required)")
	site := fs.String("site", "", "a deploy key: it may only read and write the traps of this site")
	var expires expiryFlag
	fs.Var(&expires, "expires", "the key stops working after this duration (12h, 30d) or at this RFC 3339 time")
	return func(ctx context.Context) error {
		s := gql.ApiKeyScope(strings.ReplaceAll(strings.ToUpper(*scope), "-", "_"))
		switch {
		case *name == "":
			return errors.New("--name is required")
		case s != gql.ApiKeyScopeReadOnly && s != gql.ApiKeyScopeReadWrite && s != gql.ApiKeyScopeAdmin:
			return fmt.Errorf("--scope: %q is not read-only, read-write or admin", *scope)
		}
		in := gql.CreateApiKeyInput{Name: *name, Scope: s, ExpiresAt: expires.t}
		if *site != "" {
			in.SiteID = site
		}
		resp, err := gql.CreateApiKey(ctx, c.graphQL(), in)
		if err != nil {
			return gqlFailure(err)
		}
		k := resp.CreateApiKey
		if c.opts.output != "table" {
			type created struct {
				Key string `json:"key"`
				gql.KeyFields
			}
			return emitOne(c, created{k.Key, k.ApiKey.KeyFields}, nil, nil)
		}
		fmt.Fprintf(c.stderr, "created key %s (%s); it is shown this once:\n", k.ApiKey.Id, scopeName(k.ApiKey.Scope))
		_, err = fmt.Fprintln(c.stdout, k.Key)
		return err
	}
}

func keysRevokeAPI(fs *flag.FlagSet, c *apiCall) func(context.Context) error {
	return func(ctx context.Context) error {
		resp, err := gql.RevokeApiKey(ctx, c.graphQL(), c.args[0])
		if err != nil {
			return gqlFailure(err)
		}
		return emitOne(c, resp.RevokeApiKey.KeyFields, keyCols, keyRow)
	}
}

// sites is the organization's sites.
func sites(ctx context.Context, c *apiCall) ([]gql.SiteFields, error) {
	var out []gql.SiteFields
	var after *string
	for {
		resp, err := gql.Sites(ctx, c.graphQL(), after)
		if err != nil {
			return nil, gqlFailure(err)
		}
		for _, e := range resp.Sites.Edges {
			if e != nil && e.Node != nil {
				out = append(out, e.Node.SiteFields)
			}
		}
		pi := resp.Sites.PageInfo
		if !pi.HasNextPage || pi.EndCursor == nil {
			return out, nil
		}
		after = pi.EndCursor
	}
}

// expiryFlag is a key's optional expiry: a duration ahead of now (12h, 30d: d is 24 h) or an
// RFC 3339 time.
type expiryFlag struct{ t *time.Time }

func (f *expiryFlag) String() string {
	if f.t == nil {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

func (f *expiryFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok && err != nil {
		var n int
		if _, e := fmt.Sscanf(days, "%d", &n); e == nil && n > 0 && n <= 3660 && fmt.Sprint(n) == days {
			d, err = time.Duration(n)*24*time.Hour, nil
		}
	}
	if err == nil && d > 0 {
		t := time.Now().Add(d).UTC().Truncate(time.Second)
		f.t = &t
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return errors.New("want a duration ahead of now (12h, 30d) or an RFC 3339 time (2027-01-02T15:04:05Z)")
	}
	f.t = &t
	return nil
}
