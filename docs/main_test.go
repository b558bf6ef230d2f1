package docs

import (
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// TestMain says which tests were skipped, and how to enable them.
func TestMain(m *testing.M) { ft.Main(m) }
