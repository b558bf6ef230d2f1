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
	apiCommand("keys create", "keys create --name NAME --scope read-only|read-write|admin",
		[]string{"create an API key, at most your key's scope;", "prints the key once (API)"}, 0, keysCreateAPI),
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

var keyCols = []string{"ID", "NAME", "SCOPE", "PREFIX", "CREATED", "LAST USED", "REVOKED"}

func keyRow(k gql.KeyFields) []string {
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	return []string{k.Id, k.Name, scopeName(k.Scope), k.Prefix, k.CreatedAt.UTC().Format(time.RFC3339), at(k.LastUsedAt), at(k.RevokedAt)}
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
	return func(ctx context.Context) error {
		s := gql.ApiKeyScope(strings.ReplaceAll(strings.ToUpper(*scope), "-", "_"))
		switch {
		case *name == "":
			return errors.New("--name is required")
		case s != gql.ApiKeyScopeReadOnly && s != gql.ApiKeyScopeReadWrite && s != gql.ApiKeyScopeAdmin:
			return fmt.Errorf("--scope: %q is not read-only, read-write or admin", *scope)
		}
		resp, err := gql.CreateApiKey(ctx, c.graphQL(), gql.CreateApiKeyInput{Name: *name, Scope: s})
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
