// Package skipdemo is run by TestSummaryWhenPiped: one test skipped through testdb.Skip.
package skipdemo

import (
	"testing"

	"github.com/flytrap/flytrap/flytraptest/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

func TestNeedsSomething(t *testing.T) {
	testdb.Skip(t, "demo group", "install the demo", "the demo is missing")
}
