package trap

import (
	"net/netip"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/record"
)

// journalFixtureRecord is the hit in testdata/journal-b1.hex, as the first binary codec
// (record byte 0xB1) wrote it: a record journaled by that version must read back as this.
func journalFixtureRecord() *hitRecord {
	at := time.Date(2026, 11, 27, 23, 40, 5, 123456789, time.UTC)
	rec := &hitRecord{Hit: record.Hit{
		ID: "hit_01KB0000000000000000000001", Org: "org_01KB0000000000000000000002", Site: "sit_01KB0000000000000000000003",
		Status: 200, Truncated: true,
		Observation: detect.Observation{
			At: at, Method: "POST", Host: "docs.example.com", Path: "/internal/docs/ünï", Query: "a=1&b=%00",
			Body: "{\"prompt\":\"You are Claude \U0001F600\"}", Headers: map[string][]string{"Cookie": {"a=b", "c=d"}},
			IP: netip.MustParseAddr("2001:db8::1"), UA: "Claude-User/1.0", Kind: "decoy", TrapID: "trp_01KB0000000000000000000004", TrapType: "page",
			Tool: "read_file", ToolArgs: "{\"path\":\"/etc/passwd\"}", Disallow: []string{}, Linked: []string{"/a", "/b"}, Known: []string{"/x"},
			Tokens: []detect.TokenUse{{Use: detect.UseChallenge, SourceHit: "hit_01KB0000000000000000000005", SourceAt: at.Add(-time.Minute),
				Placement: "challenge#2", Answered: true, Answer: "57", Secret: "stripe API key", Visible: true, Lure: true, Carrier: "/pricing"}, {}},
		},
	}, refs: []decoy.TokenRef{{HitID: "hit_01KB0000000000000000000006", Index: 3, Purpose: decoy.Callback, Origin: decoy.OriginHit},
		{Index: 1 << 40, Purpose: decoy.Canary, Origin: decoy.Origin(7), TrapID: "trp_01KB0000000000000000000007"}}}
	rec.Hit.Prepare()
	return rec
}
