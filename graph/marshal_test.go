package graph

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/99designs/gqlgen/graphql"
)

// responseContext is a context gqlgen's AddError and Recover work in.
func responseContext() context.Context {
	ctx := graphql.WithResponseContext(context.Background(), graphql.DefaultErrorPresenter,
		func(ctx context.Context, p any) error { return errors.New("internal error") })
	return graphql.WithFieldContext(ctx, &graphql.FieldContext{})
}

// marshalSlice gives each element its index and its own field context, keeps the order,
// and marshals elements concurrently while workers are idle.
func TestMarshalSliceOrderAndContexts(t *testing.T) {
	ctx := responseContext()
	var concurrent, peak atomic.Int32
	got := marshalSlice(ctx, 200, 0, false, func(ctx context.Context, i int) graphql.Marshaler {
		if n := concurrent.Add(1); n > peak.Load() {
			peak.Store(n)
		}
		defer concurrent.Add(-1)
		fc := graphql.GetFieldContext(ctx)
		if fc.Index == nil || *fc.Index != i {
			t.Errorf("element %d has index %v", i, fc.Index)
		}
		time.Sleep(time.Millisecond) // a field waiting on the database
		return graphql.MarshalInt(i)
	})
	if len(got) != 200 {
		t.Fatalf("%d elements", len(got))
	}
	for i, m := range got {
		var b strings.Builder
		m.MarshalGQL(&b)
		if want := graphql.MarshalInt(i); b.String() != marshalled(want) {
			t.Fatalf("element %d is %s", i, b.String())
		}
	}
	if peak.Load() < 2 {
		t.Errorf("elements waiting on I/O never overlapped (peak %d)", peak.Load())
	}
	if empty := marshalSlice(ctx, 0, 0, false, nil); empty == nil || len(empty) != 0 {
		t.Fatalf("an empty list is %#v, want an empty array", empty)
	}
}

func marshalled(m graphql.Marshaler) string {
	var b strings.Builder
	m.MarshalGQL(&b)
	return b.String()
}

// A panicking element makes the list null with an error, as gqlgen's own does, and the
// other elements still finish.
func TestMarshalSlicePanics(t *testing.T) {
	ctx := responseContext()
	var done atomic.Int32
	got := marshalSlice(ctx, 50, 0, false, func(ctx context.Context, i int) graphql.Marshaler {
		if i == 17 {
			panic("boom")
		}
		done.Add(1)
		return graphql.MarshalInt(i)
	})
	if got != nil {
		t.Fatalf("a list with a panicking element is %v, want null", got)
	}
	if done.Load() != 49 {
		t.Fatalf("%d other elements finished, want 49", done.Load())
	}
	if errs := graphql.GetErrors(ctx); len(errs) != 1 || errs[0].Message != "internal error" {
		t.Fatalf("errors %v", errs)
	}
}

// Lists inside lists, with every worker busy, finish: an element never waits for a worker.
func TestMarshalSliceNested(t *testing.T) {
	ctx := responseContext()
	var wg sync.WaitGroup
	for range 8 { // more concurrent requests than workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			outer := marshalSlice(ctx, 30, 0, false, func(ctx context.Context, i int) graphql.Marshaler {
				inner := marshalSlice(ctx, 30, 0, false, func(ctx context.Context, j int) graphql.Marshaler {
					return graphql.MarshalInt(i*30 + j)
				})
				return inner
			})
			if len(outer) != 30 || marshalled(outer[29]) != "[870,871,872,873,874,875,876,877,878,879,880,881,882,883,884,885,886,887,888,889,890,891,892,893,894,895,896,897,898,899]" {
				t.Errorf("nested lists: %d, %s", len(outer), marshalled(outer[29]))
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(time.Minute):
		t.Fatal("nested lists did not finish")
	}
}

// go generate rewrote every gqlgen list marshaller to marshalSlice (internal/gqlpatch).
func TestGeneratedUsesMarshalSlice(t *testing.T) {
	src, err := os.ReadFile("generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(src), "graphql.MarshalSliceConcurrently(") || !strings.Contains(string(src), "marshalSlice(ctx") {
		t.Fatal("generated.go still calls graphql.MarshalSliceConcurrently: run go generate ./...")
	}
	if strings.Contains(string(src), "graphql.NewScalarFieldContext(") || !strings.Contains(string(src), "scalarFieldContext(") {
		t.Fatal("generated.go still calls graphql.NewScalarFieldContext: run go generate ./...")
	}
}

// A scalar's field context says, when asked for child fields, that it has none (gqlgen's
// message), with one shared function per message.
func TestScalarFieldContext(t *testing.T) {
	f := graphql.CollectedField{Field: &ast.Field{Name: "id"}}
	a, _ := scalarFieldContext("Session", f, false, false, "field of type ID does not have child fields")
	b, _ := scalarFieldContext("Trap", f, true, false, "field of type ID does not have child fields")
	if a.Object != "Session" || b.Object != "Trap" || a.IsMethod || !b.IsMethod || a.Field.Name != "id" {
		t.Fatalf("contexts %+v, %+v", a, b)
	}
	_, err := a.Child(t.Context(), f)
	if err == nil || err.Error() != "field of type ID does not have child fields" {
		t.Fatalf("Child: %v", err)
	}
	if _, err2 := b.Child(t.Context(), f); err2 != err {
		t.Fatal("two contexts of one message do not share its error")
	}
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = scalarFieldContext("Session", f, false, false, "field of type ID does not have child fields")
	})
	if allocs > 1 {
		t.Fatalf("%v allocations per context, want 1 (the context itself)", allocs)
	}
}

// resolvePlain answers as graphql.ResolveField does with no field middleware: the value, a
// marshaller's error on the field's path, a panic as a null with an error on that path.
func TestResolvePlainAsResolveField(t *testing.T) {
	oc := &graphql.OperationContext{
		RecoverFunc:        func(ctx context.Context, p any) error { return errors.New("internal error") },
		ResolverMiddleware: func(ctx context.Context, next graphql.Resolver) (any, error) { return next(ctx) },
	}
	field := graphql.CollectedField{Field: &ast.Field{Name: "sourceIP", Alias: "ip"}}
	fieldContext := func(_ context.Context, field graphql.CollectedField) (*graphql.FieldContext, error) {
		return scalarFieldContext("Session", field, false, false, "field of type String does not have child fields")
	}
	for name, marshal := range map[string]func(context.Context, ast.SelectionSet, string) graphql.Marshaler{
		"value": func(_ context.Context, _ ast.SelectionSet, v string) graphql.Marshaler {
			return graphql.MarshalString(v)
		},
		"error": func(ctx context.Context, _ ast.SelectionSet, v string) graphql.Marshaler {
			graphql.AddErrorf(ctx, "bad %s", v)
			return graphql.Null
		},
		"panic": func(context.Context, ast.SelectionSet, string) graphql.Marshaler { panic("boom") },
	} {
		t.Run(name, func(t *testing.T) {
			run := func(resolve func(ctx context.Context) graphql.Marshaler) (string, string) {
				ctx := responseContext()
				out := marshalled(resolve(ctx))
				return out, fmt.Sprint(graphql.GetErrors(ctx))
			}
			plainOut, plainErrs := run(func(ctx context.Context) graphql.Marshaler {
				return resolvePlain(ctx, oc, field, fieldContext, "198.51.100.7", marshal)
			})
			gqlgenOut, gqlgenErrs := run(func(ctx context.Context) graphql.Marshaler {
				return graphql.ResolveField(ctx, oc, field, fieldContext,
					func(context.Context) (any, error) { return "198.51.100.7", nil }, nil, marshal, true, true)
			})
			if plainOut != gqlgenOut || plainErrs != gqlgenErrs {
				t.Fatalf("resolvePlain %s %s, ResolveField %s %s", plainOut, plainErrs, gqlgenOut, gqlgenErrs)
			}
		})
	}
}

// go generate resolves plain scalar fields with resolvePlain (internal/gqlpatch).
func TestGeneratedUsesResolvePlain(t *testing.T) {
	src, err := os.ReadFile("generated.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"resolvePlain(ctx, ec.OperationContext, field, ec.fieldContext_Session_sourceIP, obj.SourceIP, ec.marshalNString2string)",
		"resolvePlain(ctx, ec.OperationContext, field, ec.fieldContext_Session_lastSeen, obj.LastSeen, ec.marshalNTime2timeᚐTime)",
	} {
		if !strings.Contains(string(src), want) {
			t.Fatalf("generated.go lacks %s: run go generate ./...", want)
		}
	}
}

// go generate hands an object's deferred fields to gqlgen only when it has some
// (internal/gqlpatch): gqlgen built the object's path for nothing.
func TestGeneratedDefersOnlyWhenDeferred(t *testing.T) {
	src, err := os.ReadFile("generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "if len(deferLabelToView) > 0 {") || strings.Contains(string(src), "\n\tatomic.AddInt32(&ec.Deferred") ||
		strings.Contains(string(src), "deferredFieldSet := graphql.NewFieldSet(nil)") {
		t.Fatal("generated.go hands deferred fields to gqlgen unconditionally: run go generate ./...")
	}
}

// An object is written as graphql.FieldSet writes it: in order, a repeated alias once (its
// first value), names escaped as JSON strings.
func TestMarshalObjectAsFieldSet(t *testing.T) {
	for name, aliases := range map[string][]string{
		"none":     {},
		"one":      {"id"},
		"several":  {"id", "sourceIP", "lastSeen", "__typename"},
		"repeated": {"id", "name", "id", "name", "other"},
		"escaped":  {"a\"b", "tab\there", "é", "back\\slash"},
	} {
		fields := make([]graphql.CollectedField, len(aliases))
		for i, a := range aliases {
			fields[i] = graphql.CollectedField{Field: &ast.Field{Alias: a, Name: "f"}}
		}
		set := graphql.NewFieldSet(fields)
		for i := range fields {
			set.Values[i] = graphql.MarshalInt(i)
		}
		if got, want := marshalled(marshalObject(fields, set)), marshalled(set); got != want {
			t.Errorf("%s: %s, gqlgen %s", name, got, want)
		}
	}
}

// go generate writes objects with marshalObject (internal/gqlpatch).
func TestGeneratedUsesMarshalObject(t *testing.T) {
	src, err := os.ReadFile("generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(src), "\n\treturn out\n}") || !strings.Contains(string(src), "return marshalObject(fields, out)") {
		t.Fatal("generated.go returns gqlgen's field sets: run go generate ./...")
	}
}
