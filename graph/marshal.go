package graph

import (
	"context"
	"errors"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// marshalSlice marshals a list of objects, each element in the caller's goroutine or, when
// one is idle, in one of a fixed set of long-lived workers. generated.go calls it where
// gqlgen writes graphql.MarshalSliceConcurrently (internal/gqlpatch rewrites the call after
// gqlgen generate), which starts a goroutine per element: each such goroutine grew its stack
// through gqlgen's deep resolver frames, and copying those stacks was ~10 % of a sessions
// page's whole CPU (runtime.newstack, BenchmarkSessionsPage). Workers keep their grown
// stacks. Elements whose fields wait on the database still overlap while workers are idle;
// when none is, the caller marshals the element itself, so a nested list never waits for a
// worker. The signature is gqlgen's; its worker limit is the pool's size here.
func marshalSlice(ctx context.Context, length int, _ int64, omitPanicHandler bool,
	marshalElement func(ctx context.Context, i int) graphql.Marshaler) graphql.Array {
	ret := make(graphql.Array, length)
	// The elements' field contexts and indexes, one allocation each for the whole list.
	contexts, indexes := make([]graphql.FieldContext, length), make([]int, length)
	var wg sync.WaitGroup
	var failed atomic.Bool
	for i := range length {
		indexes[i] = i
		contexts[i].Index = &indexes[i]
		childCtx := graphql.WithFieldContext(ctx, &contexts[i])
		run := func() {
			if !omitPanicHandler {
				defer func() {
					if r := recover(); r != nil {
						graphql.AddError(childCtx, graphql.Recover(childCtx, r))
						failed.Store(true)
					}
				}()
			}
			ret[i] = marshalElement(childCtx, i)
		}
		if i == length-1 { // the caller would only wait: it takes the last one itself
			run()
			break
		}
		wg.Add(1)
		task := func() {
			defer wg.Done()
			run()
		}
		select {
		case marshalWorkers <- task: // an idle worker took it
		default:
			task()
		}
	}
	wg.Wait()
	if failed.Load() {
		return nil
	}
	return ret
}

// marshalWorkers hands an element to an idle worker; unbuffered, so a send succeeds only
// when one waits.
var marshalWorkers = make(chan func())

func init() {
	for range 4 * runtime.GOMAXPROCS(0) {
		go func() {
			for task := range marshalWorkers {
				task()
			}
		}()
	}
}

// noChildren holds one Child function per message, shared by every field context made with it.
var noChildren sync.Map // message → func(context.Context, graphql.CollectedField) (*graphql.FieldContext, error)

// scalarFieldContext is graphql.NewScalarFieldContext with its error made only when asked for:
// generated.go calls it (internal/gqlpatch) for each scalar value it marshals, and gqlgen's
// version allocates the error and a closure over it every time.
func scalarFieldContext(object string, field graphql.CollectedField, isMethod, isResolver bool, noChild string) (*graphql.FieldContext, error) {
	child, ok := noChildren.Load(noChild)
	if !ok {
		err := errors.New(noChild)
		child, _ = noChildren.LoadOrStore(noChild, func(context.Context, graphql.CollectedField) (*graphql.FieldContext, error) {
			return nil, err
		})
	}
	return &graphql.FieldContext{
		Object:     object,
		Field:      field,
		IsMethod:   isMethod,
		IsResolver: isResolver,
		Child:      child.(func(context.Context, graphql.CollectedField) (*graphql.FieldContext, error)),
	}, nil
}

// resolvePlain is graphql.ResolveField for a scalar field that reads a struct field of its
// object and has no directive: generated.go calls it (internal/gqlpatch) for every such value.
// It takes ResolveField's steps — the field's context, a recovered panic nulls the value with
// an error, the value marshalled in the field's context — except the field middleware chain,
// which the server leaves empty (a limit on some fields is a directive, see @pageLimits): the
// chain cost each value a closure, its context and the value boxed as an interface.
func resolvePlain[T any](ctx context.Context, oc *graphql.OperationContext, field graphql.CollectedField,
	fieldContext func(context.Context, graphql.CollectedField) (*graphql.FieldContext, error),
	v T, marshal func(context.Context, ast.SelectionSet, T) graphql.Marshaler) (ret graphql.Marshaler) {
	fc, err := fieldContext(ctx, field)
	if err != nil {
		return graphql.Null
	}
	ctx = graphql.WithFieldContext(ctx, fc)
	defer func() {
		if r := recover(); r != nil {
			oc.Error(ctx, oc.Recover(ctx, r))
			ret = graphql.Null
		}
	}()
	return marshal(ctx, field.Selections, v) // a value of T is never nil: ResolveField's "must not be null" cannot apply
}

// object writes an object's fields as graphql.FieldSet's MarshalGQL does, byte for byte:
// generated.go returns it (internal/gqlpatch) where gqlgen returns the field set itself.
// gqlgen's walk copies every field into a new allocation and keeps a map per object of the
// aliases written, to skip a repeated one; here the aliases are compared in place.
type object struct {
	fields []graphql.CollectedField
	set    *graphql.FieldSet
}

func marshalObject(fields []graphql.CollectedField, set *graphql.FieldSet) graphql.Marshaler {
	return &object{fields: fields, set: set}
}

func (o *object) MarshalGQL(w io.Writer) {
	io.WriteString(w, "{")
	written := 0
	for i := range o.fields {
		alias := o.fields[i].Alias
		if o.repeated(i, alias) {
			continue
		}
		if written > 0 {
			io.WriteString(w, ",")
		}
		written++
		writeName(w, alias)
		io.WriteString(w, ":")
		o.set.Values[i].MarshalGQL(w)
	}
	io.WriteString(w, "}")
}

// repeated says whether a field before i has the same alias.
func (o *object) repeated(i int, alias string) bool {
	for j := range i {
		if o.fields[j].Alias == alias {
			return true
		}
	}
	return false
}

// writeName writes a field's alias as a JSON string. GraphQL names need no escaping, which
// gqlgen's writer would apply; anything else goes through it.
func writeName(w io.Writer, name string) {
	for i := range len(name) {
		if c := name[i]; c < 0x20 || c == '\\' || c == '"' || c >= 0x80 {
			graphql.MarshalString(name).MarshalGQL(w)
			return
		}
	}
	io.WriteString(w, `"`)
	io.WriteString(w, name)
	io.WriteString(w, `"`)
}
