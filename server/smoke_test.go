package server_test

import (
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
)

func TestCreateTrapWritesEvent(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		d := env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"Docs", type: page, path:"/internal/docs"}) { id path } }`, nil)
		id := ft.Dig(d, "createTrap", "id")
		ev := env.MustGraphQL(a.ReadOnly, `{ events { edges { node { type data } } } }`, nil)
		if got := ft.Dig(ev, "events", "edges", 0, "node", "data", "id"); got != id {
			t.Fatalf("event data id = %v, want %v", got, id)
		}
	})
}
