// Command gqlpatch rewrites graph/generated.go after gqlgen generate:
//   - lists of objects are marshalled by graph.marshalSlice (graph/marshal.go) instead of
//     gqlgen's graphql.MarshalSliceConcurrently, which starts a goroutine per element;
//   - a scalar field's context comes from graph.scalarFieldContext (graph/marshal.go), given
//     its "no child fields" message as a constant: gqlgen's graphql.NewScalarFieldContext is
//     handed errors.New(…) and builds a closure over it for every field of every row, two
//     allocations per value that are used only if something asks a scalar for child fields;
//   - an object's deferred fields are handed to gqlgen only when it has some: gqlgen built the
//     object's path for them first (graphql.GetPath, a slice per object) and then did nothing.
//
// It is part of go generate (generate.go), so CI's regeneration check covers it.
package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
)

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

	if !bytes.Contains(src, []byte(deferredGroup)) && !bytes.Contains(src, []byte(deferredGroupIfAny)) {
		fmt.Fprintln(os.Stderr, "gqlpatch: generated.go hands deferred fields to gqlgen in a new way: gqlgen changed, look again")
		os.Exit(1)
	}
	src = bytes.ReplaceAll(src, []byte(deferredGroup), []byte(deferredGroupIfAny))
	if err := os.WriteFile(path, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gqlpatch:", err)
		os.Exit(1)
	}
}
