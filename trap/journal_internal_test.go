package trap

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// Records appended from many goroutines at once (group commit, segments rotated while
// others write) are each in a segment, intact and once; once every record is applied and
// the journal closed, no segment is left.
func TestJournalConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(dir, 1<<30, 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 16, 300
	var mu sync.Mutex
	segs := map[string]*segment{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				p := fmt.Sprintf("record %d/%d %s", w, i, "padding to make segments rotate often")
				s, err := j.append([]byte(p))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				segs[p] = s
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	files, _ := filepath.Glob(filepath.Join(dir, "*.jnl"))
	if len(files) < 10 {
		t.Fatalf("%d segments of 4 KiB for %d records", len(files), writers*each)
	}
	seen := map[string]int{}
	for _, f := range files {
		if torn, err := readSegment(f, func(p []byte) error { seen[string(p)]++; return nil }); err != nil || torn {
			t.Fatalf("%s: torn %v, %v", f, torn, err)
		}
	}
	for p, s := range segs {
		if seen[p] != 1 {
			t.Fatalf("%q is %d times in the segments", p, seen[p])
		}
		if filepath.Base(s.path) == "" {
			t.Fatal("no segment")
		}
	}
	if len(seen) != writers*each {
		t.Fatalf("%d records in the segments, %d appended", len(seen), writers*each)
	}
	for _, s := range segs {
		j.applied(s, 1)
	}
	j.close()
	if left, _ := filepath.Glob(filepath.Join(dir, "*.jnl")); len(left) != 0 {
		t.Fatalf("segments left: %q", left)
	}
	if j.bytes() != 0 {
		t.Fatalf("%d bytes counted in a journal with no segment", j.bytes())
	}
}
