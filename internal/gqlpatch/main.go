// Command gqlpatch rewrites graph/generated.go after gqlgen generate: lists of objects are
// marshalled by graph.marshalSlice (graph/marshal.go) instead of gqlgen's
// graphql.MarshalSliceConcurrently, which starts a goroutine per element. It is part of
// go generate (generate.go), so CI's regeneration check covers it.
package main

import (
	"bytes"
	"fmt"
	"os"
)

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
	if err := os.WriteFile(path, bytes.ReplaceAll(src, from, to), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gqlpatch:", err)
		os.Exit(1)
	}
}
