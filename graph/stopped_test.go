package graph

import (
	"context"
	"errors"
	"testing"
)

// A subscription whose start failed because its operation was stopped (the client's
// complete cancels it) ends without a message; any other failure is the client's error.
func TestStoppedSubscription(t *testing.T) {
	boom := errors.New("interrupted (9)") // SQLite's answer to a cancelled statement
	if ch, err := stopped[int](context.Background(), boom); ch != nil || !errors.Is(err, boom) {
		t.Fatalf("live operation: %v, %v; want the error", ch, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ch, err := stopped[int](ctx, boom)
	if err != nil || ch == nil {
		t.Fatalf("stopped operation: %v, %v; want a closed channel", ch, err)
	}
	if _, open := <-ch; open {
		t.Fatal("the channel of a stopped operation is open")
	}
}
