package gcfloor

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live, floor uint64
		want        int
	}{
		{8 * mib, 64 * mib, 700},  // goal 8 × 8 = 64 MiB
		{10 * mib, 64 * mib, 500}, // 64/10 rounds down to 6: goal 60 MiB, under the floor
		{32 * mib, 64 * mib, 100}, // twice the live heap is the floor: Go's own rule
		{200 * mib, 64 * mib, 100},
		{0, 64 * mib, 100}, // nothing measured yet
		{1, 1 << 40, 100_000},
	} {
		if got := Percent(tc.live, tc.floor); got != tc.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", tc.live, tc.floor, got, tc.want)
		}
		if got := Percent(tc.live, tc.floor); tc.live > 0 && got < 100_000 && tc.live*uint64(100+got)/100 > max(tc.floor, 2*tc.live) {
			t.Errorf("Percent(%d, %d) = %d sets a goal above max(floor, 2 × live)", tc.live, tc.floor, got)
		}
	}
}

// waitPercent collects until the tuner has set GOGC to a value ok accepts.
func waitPercent(t *testing.T, ok func(int) bool) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC() // the sentinel's finalizer runs after a collection
		time.Sleep(10 * time.Millisecond)
		if p := gogc(); ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC stayed at %d", gogc())
		}
	}
}

// TestStartFollowsTheLiveHeap: with a small live heap GOGC rises so the goal is the
// floor; with a live heap past half the floor it is back at 100; stop restores it.
func TestStartFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	stop, started := Start(1 << 30)
	if !started {
		t.Fatal("the tuner did not start without GOGC set")
	}
	p := waitPercent(t, func(p int) bool { return p > 1000 })
	t.Logf("a small heap under a 1 GiB floor: GOGC=%d", p)

	live := make([][]byte, 0, 64) // 640 MiB live: more than half the floor
	for range 64 {
		live = append(live, make([]byte, 10<<20))
	}
	waitPercent(t, func(p int) bool { return p == 100 })
	runtime.KeepAlive(live)
	live = nil

	stop()
	if p := gogc(); p != 100 {
		t.Fatalf("GOGC after stop: %d, want the 100 it was", p)
	}
	runtime.GC()
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if p := gogc(); p != 100 {
		t.Fatalf("the tuner changed GOGC after stop: %d", p)
	}
}

// TestStartLeavesAnOperatorsGOGC: GOGC in the environment wins, and a zero floor is off.
func TestStartLeavesAnOperatorsGOGC(t *testing.T) {
	t.Setenv("GOGC", "150")
	if _, started := Start(1 << 30); started {
		t.Fatal("the tuner started although GOGC was set")
	}
	t.Setenv("GOGC", "")
	if _, started := Start(0); started {
		t.Fatal("the tuner started with a zero floor")
	}
}
