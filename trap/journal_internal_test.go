package trap

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/record"
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

// A hit read back from the journal makes the same row and observation as the hit
// journaled: every field a request fills survives the encoding.
func TestJournalEntryRoundTrip(t *testing.T) {
	rec := &hitRecord{Hit: record.Hit{
		ID: ids.New(ids.Hit), Org: ids.New(ids.Org), Site: ids.New(ids.Site), Status: 200, Truncated: true,
		Observation: detect.Observation{
			At: time.Now().UTC(), Method: "POST", Host: "docs.example.com", Path: "/internal/docs/ünï", Query: "a=1&b=%00",
			Body: "{\"prompt\":\"You are Claude \U0001F600\"}", Headers: map[string][]string{"Cookie": {"a=b", "c=d"}, "X-Api-Key": {"k"}},
			IP: netip.MustParseAddr("2001:db8::1"), UA: "Claude-User/1.0", Kind: "decoy", TrapID: ids.New(ids.Trap), TrapType: "page",
			Tool: "read_file", ToolArgs: "{\"path\":\"/etc/passwd\"}", Disallow: []string{}, Linked: []string{"/a", "/b"}, Known: []string{"/x"}, DNS: detect.DNSWrongDomain, DNSHost: "crawl.example.net",
			JA4: "t13d1516h2_8daaf6152771_e5627efa2ab1", H2: "1:65536;2:0|15663105|0|m,a,s,p", HeaderOrder: "h104_0123456789ab", Stack: "chromium",
			Signature: detect.Signature{State: detect.SignatureReplayed, Agent: "https://agent.example", KeyID: "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U", Reason: "nonce already seen"},
			Tokens: []detect.TokenUse{{Use: detect.UseChallenge, SourceHit: ids.New(ids.Hit), SourceAt: time.Now().UTC().Add(-time.Minute),
				Placement: "challenge#2", Answered: true, Answer: "57", Secret: "stripe API key", Visible: true, Lure: true, Carrier: "/pricing"}, {}},
		},
	}, refs: []decoy.TokenRef{{HitID: ids.New(ids.Hit), Index: 3, Purpose: decoy.Callback, Origin: decoy.OriginHit},
		{Index: 1 << 40, Purpose: decoy.Canary, Origin: decoy.Origin(7), TrapID: ids.New(ids.Trap)}}}
	rec.Hit.Prepare()
	payload, err := encodeHit(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeHit(payload)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Hit, rec.Hit) {
		t.Errorf("read back:\n%+v\nwant\n%+v", got.Hit, rec.Hit)
	}
	if !reflect.DeepEqual(got.refs, rec.refs) {
		t.Errorf("tokens read back %+v, want %+v", got.refs, rec.refs)
	}
}

// A record written as JSON (by the version before the binary records) is still read at
// replay, and reads back as the binary one does.
func TestJournalReadsJSONRecords(t *testing.T) {
	rec := &hitRecord{Hit: record.Hit{ID: ids.New(ids.Hit), Org: ids.New(ids.Org), Status: 404, Observation: detect.Observation{
		At: time.Now().UTC(), Method: "GET", Path: "/.env", Headers: map[string][]string{"Accept": {"*/*"}},
		IP: netip.MustParseAddr("203.0.113.9"), UA: "curl/8.5", Kind: "not_found", Known: []string{"/admin"},
	}}, refs: []decoy.TokenRef{{HitID: ids.New(ids.Hit), Index: 2, Purpose: decoy.Canary}}}
	rec.Hit.Prepare()
	legacy, err := json.Marshal(journalEntry{Hit: &rec.Hit, Refs: rec.refs})
	if err != nil {
		t.Fatal(err)
	}
	binary, err := encodeHit(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string][]byte{"json": legacy, "binary": binary} {
		got, err := decodeHit(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got.Hit, rec.Hit) || !reflect.DeepEqual(got.refs, rec.refs) {
			t.Errorf("%s read back:\n%+v %+v\nwant\n%+v %+v", name, got.Hit, got.refs, rec.Hit, rec.refs)
		}
	}
	// A record cut anywhere, or with bytes past its end, is refused (never a panic, never a
	// hit made of part of one): the checksum guards the journal's records, this the codec.
	for n := range len(binary) {
		if _, err := decodeHit(binary[:n]); err == nil {
			t.Fatalf("a record cut to %d of %d bytes read back", n, len(binary))
		}
	}
	if _, err := decodeHit(append(binary, 0)); err == nil {
		t.Fatal("a record with a byte past its end read back")
	}
}

// The hit's own fields are written by hand (appendEntry): a field added to record.Hit fails
// here until appendEntry and readEntry carry it. The fields of its observation and tokens
// are journaled by the generated codec (journalcodec_gen.go), which covers them all.
func TestJournalCodecCoversEveryField(t *testing.T) {
	var names []string
	for f := range reflect.TypeFor[record.Hit]().Fields() {
		names = append(names, f.Name)
	}
	const want = "Observation ID Org Site Status Truncated Session Outcome row err"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("record.Hit has fields %q; the journal's codec writes %q (Session, Outcome, row and err are the writer's, made again at apply)", got, want)
	}
}

// A record journaled by the first binary layout (0xB1, before records said how many fields
// they hold) reads back at replay after an upgrade.
func TestJournalReadsTheFirstBinaryLayout(t *testing.T) {
	raw, err := os.ReadFile("testdata/journal-b1.hex")
	if err != nil {
		t.Fatal(err)
	}
	p, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if p[0] != journalBinaryV1 {
		t.Fatalf("the fixture begins with %#x", p[0])
	}
	got, err := decodeHit(p)
	if err != nil {
		t.Fatal(err)
	}
	want := journalFixtureRecord()
	if !reflect.DeepEqual(got.Hit, want.Hit) || !reflect.DeepEqual(got.refs, want.refs) {
		t.Errorf("read back:\n%+v %+v\nwant\n%+v %+v", got.Hit, got.refs, want.Hit, want.refs)
	}
}

// A record journaled before fields were added holds fewer of them and says so: it reads
// back with those fields zero (the first binary layout's body, with its field counts
// written, is such a record once any field is added). One from a newer version, with
// fields this one does not know, is refused with a reason, never misread.
func TestJournalRecordOfAnotherLayout(t *testing.T) {
	raw, err := os.ReadFile("testdata/journal-b1.hex")
	if err != nil {
		t.Fatal(err)
	}
	v1, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	counted := func(l layout) []byte {
		p := []byte{journalBinary, byte(len(l))}
		for _, n := range l {
			p = binary.AppendUvarint(p, uint64(n))
		}
		return append(p, v1[1:]...)
	}
	got, err := decodeHit(counted(layoutV1))
	if err != nil {
		t.Fatal(err)
	}
	want := journalFixtureRecord()
	if !reflect.DeepEqual(got.Hit, want.Hit) || !reflect.DeepEqual(got.refs, want.refs) {
		t.Errorf("read back:\n%+v %+v\nwant\n%+v %+v", got.Hit, got.refs, want.Hit, want.refs)
	}
	if _, err := decodeHit(append([]byte{journalBinary, byte(len(layoutFields) + 1)}, counted(layoutFields)[2:]...)); err == nil || !strings.Contains(err.Error(), "newer version") {
		t.Fatalf("a record with a type this version does not know: %v", err)
	}
	for i := range layoutFields {
		newer := layoutFields
		newer[i]++
		if _, err := decodeHit(counted(newer)); err == nil || !strings.Contains(err.Error(), "newer version") {
			t.Fatalf("a record with a field of %s this version does not know: %v", journalTypes[i], err)
		}
	}
}

// BenchmarkJournalRecord encodes a hit's journal record (every request) and reads it back
// (replay only).
func BenchmarkJournalRecord(b *testing.B) {
	rec := journalFixtureRecord()
	var buf []byte
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if buf, err = encodeHit(buf[:0], rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	p, _ := encodeHit(nil, rec)
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeHit(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
