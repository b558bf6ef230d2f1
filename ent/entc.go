//go:build ignore

// entc generates the ent client and the GraphQL schema of the ent types.
package main

import (
	"log"

	"entgo.io/contrib/entgql"
	"entgo.io/ent/entc"
	"entgo.io/ent/entc/gen"
)

func main() {
	// Our pagination helper replaces entgql's (see the template): its templates come after entgql's.
	paginate := gen.MustParse(gen.NewTemplate("flytrap_pagination").Funcs(entgql.TemplateFuncs).
		ParseFiles("ent/template/pagination.tmpl"))
	ex, err := entgql.NewExtension(
		entgql.WithTemplates(append(entgql.AllTemplates, paginate)...),
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
