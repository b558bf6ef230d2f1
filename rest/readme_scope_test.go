package rest_test

import (
	"os"
	"strings"
	"testing"

	"github.com/flytrap/flytrap/rest"
)

// The README's scope table names every webhook route in the read-write row: they are GETs
// too, and a read-only key is refused them.
func TestReadmeScopeTableListsWebhookRoutes(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "| `read-write` | `READ_WRITE` |") {
			row = l
		}
	}
	if row == "" {
		t.Fatal("no read-write row in the README's scope table")
	}
	var api rest.API
	n := 0
	for _, rt := range api.Routes() {
		if !strings.Contains(rt.Pattern, "/webhooks") {
			continue
		}
		n++
		if !strings.Contains(row, "`"+rt.Pattern+"`") {
			t.Errorf("the README's read-write row does not list %s", rt.Pattern)
		}
	}
	if n < 9 {
		t.Fatalf("found %d webhook routes", n)
	}
}
