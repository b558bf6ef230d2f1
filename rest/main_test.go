package rest_test

import (
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// TestMain says which tests were skipped or ran on SQLite only, and how to enable them.
func TestMain(m *testing.M) { ft.Main(m) }
