// Command gqlpatch rewrites graph/generated.go after gqlgen generate:
//   - lists of objects are marshalled by graph.marshalSlice (graph/marshal.go) instead of
//     gqlgen's graphql.MarshalSliceConcurrently, which starts a goroutine per element;
//   - a scalar field's context comes from graph.scalarFieldContext (graph/marshal.go), given
//     its "no child fields" message as a constant: gqlgen's graphql.NewScalarFieldContext is
//     handed errors.New(…) and builds a closure over it for every field of every row, two
//     allocations per value that are used only if something asks a scalar for child fields;
//   - a scalar field that reads a struct field of its object, with no directive, is resolved
//     by graph.resolvePlain instead of graphql.ResolveField: the same steps without the field
//     middleware chain (the server registers no field middleware), the closures around the
//     value and the value boxed as an interface, four allocations per value;
//   - an object's deferred fields are handed to gqlgen only when it has some: gqlgen built the
//     object's path for them first (graphql.GetPath, a slice per object) and then did nothing,
//     and it made the deferred field set and its map of views for every object; they are made
//     when the first deferred field comes;
//   - an object is written by graph.marshalObject, which writes what graphql.FieldSet does
//     without copying each field into an allocation and without a map per object.
//
// It is part of go generate (generate.go), so CI's regeneration check covers it.
package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
)

// plainField is gqlgen's resolution of a field that reads a struct field of its object
// without directives (no middleware chain), recovering from panics.
var plainField = regexp.MustCompile(`(?m)^\treturn graphql\.ResolveField\(
\t\tctx,
\t\tec\.OperationContext,
\t\tfield,
\t\tfunc\(ctx context\.Context, field graphql\.CollectedField\) \(\*graphql\.FieldContext, error\) \{
\t\t\treturn ec\.(fieldContext_\w+)\(ctx, field\)
\t\t\},
\t\tfunc\(ctx context\.Context\) \(any, error\) \{
\t\t\treturn obj\.(\w+), nil
\t\t\},
\t\tnil,
\t\tfunc\(ctx context\.Context, selections ast\.SelectionSet, v ([^)\n]+)\) graphql\.Marshaler \{
\t\t\treturn ec\.(marshal[^(\s]+)\(ctx, selections, v\)
\t\t\},
\t\ttrue,
\t\t(true|false),
\t\)
`)

// scalarContext is the start of a scalar field's context function, after the rewrite below.
var scalarContext = regexp.MustCompile(`func \(ec \*executionContext\) (fieldContext_\w+)\(_ context\.Context, field graphql\.CollectedField\) \(fc \*graphql\.FieldContext, err error\) \{\n\treturn scalarFieldContext\(`)

// deferredGroup is how an object's marshaller hands its deferred fields to gqlgen.
const deferredGroup = `
	atomic.AddInt32(&ec.Deferred, int32(min(len(deferLabelToView), math.MaxInt32)))

	ec.ProcessDeferredGroup(graphql.DeferredGroup{
		Defers:   deferLabelToView,
		Path:     graphql.GetPath(ctx),
		FieldSet: deferredFieldSet,
		Context:  ctx,
	})
`

const deferredGroupIfAny = `
	if len(deferLabelToView) > 0 { // gqlpatch: GetPath is a slice per object, and nothing is deferred
		atomic.AddInt32(&ec.Deferred, int32(min(len(deferLabelToView), math.MaxInt32)))
		ec.ProcessDeferredGroup(graphql.DeferredGroup{
			Defers:   deferLabelToView,
			Path:     graphql.GetPath(ctx),
			FieldSet: deferredFieldSet,
			Context:  ctx,
		})
	}
`

// scalarCall is gqlgen's call for a scalar field's context, with its message.
var scalarCall = regexp.MustCompile(`graphql\.NewScalarFieldContext\((.*), errors\.New\(("[^"\\]*")\)\)`)

func main() {
	const path = "graph/generated.go"
	src, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gqlpatch:", err)
		os.Exit(1)
	}
	from, to := []byte("graphql.MarshalSliceConcurrently("), []byte("marshalSlice(")
	n := bytes.Count(src, from)
	if n == 0 && !bytes.Contains(src, to) {
		fmt.Fprintln(os.Stderr, "gqlpatch: generated.go calls neither graphql.MarshalSliceConcurrently nor marshalSlice: gqlgen changed, look again")
		os.Exit(1)
	}
	src = bytes.ReplaceAll(src, from, to)
	if !scalarCall.Match(src) && !bytes.Contains(src, []byte("scalarFieldContext(")) {
		fmt.Fprintln(os.Stderr, "gqlpatch: generated.go calls neither graphql.NewScalarFieldContext(…, errors.New(…)) nor scalarFieldContext: gqlgen changed, look again")
		os.Exit(1)
	}
	src = scalarCall.ReplaceAll(src, []byte("scalarFieldContext($1, $2)"))

	scalars := map[string]bool{}
	for _, m := range scalarContext.FindAllSubmatch(src, -1) {
		scalars[string(m[1])] = true
	}
	plain := 0
	src = plainField.ReplaceAllFunc(src, func(call []byte) []byte {
		m := plainField.FindSubmatch(call)
		if !scalars[string(m[1])] || string(m[3]) == "any" {
			return call // objects and interfaces keep gqlgen's resolution
		}
		plain++
		return fmt.Appendf(nil, "\treturn resolvePlain(ctx, ec.OperationContext, field, ec.%s, obj.%s, ec.%s)\n", m[1], m[2], m[4])
	})
	if plain == 0 && !bytes.Contains(src, []byte("resolvePlain(")) {
		fmt.Fprintln(os.Stderr, "gqlpatch: no plain scalar field matched gqlgen's graphql.ResolveField call: gqlgen changed, look again")
		os.Exit(1)
	}

	if !bytes.Contains(src, []byte(deferredGroup)) && !bytes.Contains(src, []byte(deferredGroupIfAny)) {
		fmt.Fprintln(os.Stderr, "gqlpatch: generated.go hands deferred fields to gqlgen in a new way: gqlgen changed, look again")
		os.Exit(1)
	}
	src = bytes.ReplaceAll(src, []byte(deferredGroup), []byte(deferredGroupIfAny))

	// Every object's marshaller makes a deferred field set and a map of views, used only by
	// deferred fields.
	for _, r := range [][2]string{
		{"\tdeferredFieldSet := graphql.NewFieldSet(nil)\n", "\tvar deferredFieldSet *graphql.FieldSet // gqlpatch: made for the first deferred field\n"},
		{"\tdeferLabelToView := make(map[string]*graphql.FieldSetView)\n", "\tvar deferLabelToView map[string]*graphql.FieldSetView\n"},
		{"\t\t\t\tdeferredFieldSet.AddField(field)\n", "\t\t\t\tif deferredFieldSet == nil {\n\t\t\t\t\tdeferredFieldSet, deferLabelToView = graphql.NewFieldSet(nil), map[string]*graphql.FieldSetView{}\n\t\t\t\t}\n\t\t\t\tdeferredFieldSet.AddField(field)\n"},
	} {
		if !bytes.Contains(src, []byte(r[0])) && !bytes.Contains(src, []byte(r[1])) {
			fmt.Fprintf(os.Stderr, "gqlpatch: generated.go has neither %q nor %q: gqlgen changed, look again\n", r[0], r[1])
			os.Exit(1)
		}
		if r[0] == "\t\t\t\tdeferredFieldSet.AddField(field)\n" && bytes.Contains(src, []byte("if deferredFieldSet == nil {")) {
			continue // already patched: the call stays, after the check
		}
		src = bytes.ReplaceAll(src, []byte(r[0]), []byte(r[1]))
	}

	// Every object's marshaller ends with the deferred group, then returns its field set.
	fromReturn, toReturn := []byte(deferredGroupIfAny+"\n\treturn out\n}\n"), []byte(deferredGroupIfAny+"\n\treturn marshalObject(fields, out)\n}\n")
	if !bytes.Contains(src, fromReturn) && !bytes.Contains(src, toReturn) {
		fmt.Fprintln(os.Stderr, "gqlpatch: generated.go's objects no longer return their field set after the deferred group: gqlgen changed, look again")
		os.Exit(1)
	}
	src = bytes.ReplaceAll(src, fromReturn, toReturn)
	if err := os.WriteFile(path, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gqlpatch:", err)
		os.Exit(1)
	}
}
