package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live, roots, floor uint64
		want               int
	}{
		{8 * mib, 0, 64 * mib, 700},        // goal 8 + 8 × 7 = 64 MiB
		{8 * mib, 1 * mib, 64 * mib, 622},  // stacks and globals count in the goal: 8 + 9 × 6.22 ≈ 64
		{10 * mib, 0, 64 * mib, 540},       // 10 + 10 × 5.4 = 64
		{1 * mib, 0, 64 * mib, 1600},       // the minimum heap, 4 MiB × 16, is the floor (not 6,300 %)
		{30 * mib, 4 * mib, 64 * mib, 100}, // Go's default goal, 2 × 30 + 4, reaches the floor
		{200 * mib, 0, 64 * mib, 100},      // Go's own rule
		{0, 0, 64 * mib, 100},              // nothing measured yet
		{1 * mib, 0, 2 * mib, 100},         // a floor under the runtime's minimum heap changes nothing
		{1, 0, 1 << 40, 26_214_400},        // 1 TiB: the minimum heap bounds it
	} {
		got := Percent(tc.live, tc.roots, tc.floor)
		if got != tc.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", tc.live, tc.roots, tc.floor, got, tc.want)
		}
		// The runtime's goal (mgcpacer.go): live + (live + roots) × GOGC/100, at least 4 MiB × GOGC/100.
		goal := max(tc.live+(tc.live+tc.roots)*uint64(got)/100, heapMinimum*uint64(got)/100)
		if goal > max(tc.floor, 2*tc.live+tc.roots, heapMinimum) {
			t.Errorf("Percent(%d, %d, %d) = %d sets a goal of %d, above the floor and Go's default", tc.live, tc.roots, tc.floor, got, goal)
		}
	}
}

// heapGoal is the runtime's heap goal now.
func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
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
	goal := heapGoal()
	t.Logf("a small heap under a 1 GiB floor: GOGC=%d, heap goal %d MiB", p, goal>>20)
	if goal > 1<<30+1<<20 {
		t.Fatalf("the heap goal is %d MiB, above the 1 GiB floor", goal>>20)
	}

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
