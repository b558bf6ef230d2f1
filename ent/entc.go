//go:build ignore

// entc generates the ent client and the GraphQL schema of the ent types.
package main

import (
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"entgo.io/contrib/entgql"
	"entgo.io/ent/entc"
	"entgo.io/ent/entc/gen"
)

func main() {
	// Our pagination helper replaces entgql's (see the template): its templates come after entgql's.
	paginate := gen.MustParse(gen.NewTemplate("flytrap_pagination").Funcs(entgql.TemplateFuncs).
		ParseFiles("ent/template/pagination.tmpl"))
	ex, err := entgql.NewExtension(
		entgql.WithTemplates(append(entgql.AllTemplates, paginate, collection())...),
		entgql.WithConfigPath("gqlgen.yml"),
		entgql.WithSchemaGenerator(),
		entgql.WithSchemaPath("graph/ent.graphqls"),
		entgql.WithWhereInputs(true),
	)
	if err != nil {
		log.Fatalf("creating entgql extension: %v", err)
	}
	err = entc.Generate("./ent/schema", &gen.Config{
		Features: []gen.Feature{
			gen.FeaturePrivacy,
			gen.FeatureEntQL,
			gen.FeatureIntercept,
			gen.FeatureExecQuery,
			gen.FeatureModifier,
			gen.FeatureUpsert,
		},
	}, entc.Extensions(ex))
	if err != nil {
		log.Fatalf("running ent codegen: %v", err)
	}
}

// collection is entgql's field collection ("gql_collection", entgo.io/contrib's
// entgql/template/collection.tmpl) with one condition changed, as the pagination template
// changes the paginate helper's: an edge's connection (a session's hits) is counted only
// when totalCount is selected, or pageInfo without edges. entgql counts whenever pageInfo is
// selected, a GROUP BY over every hit of the session (700 ms for a million hits on
// PostgreSQL), though hasNextPage comes from the page's one extra row. The template is read
// from the module in go.mod and the change applied to its exact text: an entgql whose text
// differs stops the generation rather than generating entgql's counting collection.
func collection() *gen.Template {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "entgo.io/contrib").Output()
	if err != nil {
		log.Fatalf("locating entgo.io/contrib: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "entgql", "template", "collection.tmpl"))
	if err != nil {
		log.Fatalf("reading entgql's collection template: %v", err)
	}
	const (
		counts = `if hasCollectedField(ctx, append(path, totalCountField)...) || hasCollectedField(ctx, append(path, pageInfoField)...) {`
		ours   = `if hasCollectedField(ctx, append(path, totalCountField)...) || (ignoredEdges && hasCollectedField(ctx, append(path, pageInfoField)...)) {`
	)
	if n := strings.Count(string(src), counts); n != 1 {
		log.Fatalf("entgql's collection template has %d copies of the count condition, want 1: review ent/entc.go's collection against the new entgql", n)
	}
	return gen.MustParse(gen.NewTemplate("flytrap_collection").Funcs(entgql.TemplateFuncs).
		Parse(strings.Replace(string(src), counts, ours, 1)))
}
