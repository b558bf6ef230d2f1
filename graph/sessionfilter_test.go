package graph

import (
	"testing"
	"time"

	"github.com/flytrap/flytrap/app"
)

// The sessions filter app.ListSessions builds from every REST parameter at once stays within
// the smallest where limits the server accepts (--where-max-nodes 10, --where-max-width 2,
// --where-max-scans 0, server/config.go): REST's fixed filter needs no price check of its own.
// With one node fewer allowed than it has, the same check refuses it, so the check can fail.
func TestSessionFilterWithinWhereLimits(t *testing.T) {
	now := time.Now()
	f := app.SessionFilter{Classification: "AI_AGENT", Severity: "HIGH", TrapID: "trp_01", SourceIP: "192.0.2.1", Since: &now, Until: &now}
	if err := CheckWhere(WhereLimits{MaxNodes: 10, MaxWidth: 2, MaxScans: 0}, "SessionWhereInput", f.Where()); err != nil {
		t.Fatalf("the REST filter at the smallest limits: %v", err)
	}
	if err := CheckWhere(WhereLimits{MaxNodes: 6, MaxWidth: 2, MaxScans: 0}, "SessionWhereInput", f.Where()); err == nil {
		t.Fatal("7 nodes passed a limit of 6: the check prices nothing")
	}
}
