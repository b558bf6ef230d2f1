package server_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// TestPostgresRestartLosesNothing restarts the PostgreSQL server under two instances while
// a subscription and an SSE stream on B follow events written on A: every event written
// before, during (once writes work again) and after the restart arrives on B, in order,
// once. It disturbs every other user of the server, so it runs only when asked
// (FLYTRAP_TEST_PG_RESTART=1; .ci/run does, on its own).
func TestPostgresRestartLosesNothing(t *testing.T) {
	if os.Getenv("FLYTRAP_TEST_PG_RESTART") != "1" {
		ft.Skip(t, "PostgreSQL restart", "set FLYTRAP_TEST_PG_RESTART=1 with FLYTRAP_TEST_POSTGRES_URL (it restarts the server, disturbing its other users; .ci/run does it on its own)", "FLYTRAP_TEST_PG_RESTART is not 1")
	}
	restart := os.Getenv("FLYTRAP_TEST_PG_RESTART_CMD")
	if restart == "" {
		restart = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main restart"
	}
	envA, envB := twoInstances(t)
	tn := envA.Tenant("acme")
	c := subscribeWS(t, envB, tn.ReadOnly, eventsSub, nil)
	waitSubscribers(t, envB, 1)
	sse := openSSE(t, envB, tn.ReadOnly)
	waitSubscribers(t, envB, 2)

	var want []string
	create := func(name string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			r := envA.GraphQL(tn.ReadWrite, fmt.Sprintf(`mutation { createTrap(input:{name:%q, type: api}) { id } }`, name), nil)
			if r.Status == 200 && len(r.Errors) == 0 {
				want = append(want, ft.Dig(r.Data, "createTrap", "id").(string))
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("A could not write for 60 s after the restart: %s", r.Raw)
			}
			time.Sleep(200 * time.Millisecond) // the database is coming back
		}
	}
	create("before-1")
	create("before-2")
	if out, err := exec.Command("bash", "-c", restart).CombinedOutput(); err != nil {
		t.Fatalf("restart PostgreSQL: %v\n%s", err, out)
	}
	create("after-1")
	create("after-2")

	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	for i, id := range want {
		if got := ft.Dig(nextData(t, c), "events", "data", "id"); got != id {
			t.Fatalf("subscription event %d is %v, want %s", i, got, id)
		}
		if got := nextSSE(t, sse); !strings.Contains(got, id) {
			t.Fatalf("stream event %d is %s, want %s", i, got, id)
		}
	}
}
