// Package gcfloor lets the heap grow to a floor before the garbage collector runs.
//
// With GOGC at its default (100), Go collects whenever the heap has doubled since the
// last collection. Flytrap keeps only a few megabytes live, and the trap listener
// allocates about 12 KB per hit, so under load the collector would run some twenty
// times a second, for a tenth of the process's CPU, to keep the heap near 16 MB. A
// floor lets the heap reach floor bytes first (GOGC is raised while the live heap is
// small) and leaves Go's own rule, about twice the live heap, once that reaches the
// floor: the heap goal is max(floor, Go's default goal).
//
// The percentage is set again after every collection (a finalizer on a sentinel
// object, the technique of Uber's GOGC tuner), from the live heap that collection
// measured, so the goal it sets is the floor exactly and never a multiple of a heap
// that has since grown.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// heapMinimum is the runtime's smallest heap goal at GOGC=100; it scales with GOGC.
const heapMinimum = 4 << 20

// Percent is the GOGC that makes the heap goal max(floor, Go's default goal) for a live
// heap of live bytes and roots bytes of stacks and globals. The runtime's goal is
// live + (live + roots) × GOGC/100, and never under heapMinimum × GOGC/100: both stay
// at or under the floor. 100 (Go's default) once the default goal reaches the floor.
func Percent(live, roots, floor uint64) int {
	if live == 0 || 2*live+roots >= floor {
		return 100
	}
	p := (floor - live) * 100 / (live + roots)
	p = min(p, floor*100/heapMinimum)
	return int(max(p, 100))
}

// Start keeps the heap goal at max(floor, Go's default) until stop is called, which
// restores GOGC. It does nothing (and says so) when floor is 0 or when the GOGC
// environment variable is set: an operator's setting wins. GOGC is the process's: run
// one tuner at a time (flytrap serve starts one).
func Start(floor uint64) (stop func(), started bool) {
	if floor == 0 || os.Getenv("GOGC") != "" {
		return func() {}, false
	}
	t := &tuner{floor: floor, base: gogc(), sample: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}}
	t.adjust()
	t.arm()
	return t.stop, true
}

type tuner struct {
	floor uint64
	base  int // GOGC before Start

	mu      sync.Mutex // the finalizer's adjust against stop
	sample  []metrics.Sample
	current int
	stopped bool
}

// sentinel is garbage whose finalizer runs after the collection that found it
// unreachable; it holds a pointer, so the tiny allocator (whose objects' finalizers
// may never run) does not take it.
type sentinel struct {
	_ *int
	_ [16]byte
}

func (t *tuner) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		if t.adjust() {
			t.arm()
		}
	})
}

// adjust sets GOGC from the live heap the last collection measured; false once stopped.
func (t *tuner) adjust() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	var v [3]uint64
	for i, s := range t.sample {
		if s.Value.Kind() != metrics.KindUint64 {
			return true
		}
		v[i] = s.Value.Uint64()
	}
	if p := Percent(v[0], v[1]+v[2], t.floor); p != t.current {
		debug.SetGCPercent(p)
		t.current = p
	}
	return true
}

func (t *tuner) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		debug.SetGCPercent(t.base)
	}
}

// gogc is the GC percentage in effect.
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	return int(s[0].Value.Uint64())
}
