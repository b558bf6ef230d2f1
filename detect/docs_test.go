package detect

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// docs/detection.md renders the signal table and the weights; this keeps the
// document and the code in step.
func TestDocsSignalTableMatchesCode(t *testing.T) {
	raw, err := os.ReadFile("../docs/detection.md")
	if err != nil {
		t.Fatalf("docs/detection.md: %v", err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 6 {
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows[strings.Trim(cells[1], "`")] = cells[2:]
	}
	for _, s := range Signals() {
		row, ok := rows[s.Name]
		if !ok {
			t.Errorf("%s missing from the signals table", s.Name)
			continue
		}
		wantTrip := map[bool]string{true: "yes", false: "no"}[s.Tripwire]
		if row[0] != wantTrip {
			t.Errorf("%s: tripwire %q in docs, %q in code", s.Name, row[0], wantTrip)
		}
		if w, err := strconv.Atoi(row[1]); err != nil || w != s.Weight {
			t.Errorf("%s: weight %q in docs, %d in code", s.Name, row[1], s.Weight)
		}
		wantRep := map[bool]string{true: "once", false: "halving"}[s.Once]
		if row[2] != wantRep {
			t.Errorf("%s: repeats %q in docs, %q in code", s.Name, row[2], wantRep)
		}
		if row[3] != s.Meaning {
			t.Errorf("%s: meaning differs:\n docs: %s\n code: %s", s.Name, row[3], s.Meaning)
		}
	}
	for _, want := range []string{
		"`DetectionThreshold = 40`", "`ProbingThreshold = 8`", "`PromptThreshold = 7`",
		"critical ≥ 90, high ≥ 70, medium ≥ 40", "738c80d", "go generate ./detect/",
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("docs/detection.md does not mention %s", want)
		}
	}
	if DetectionThreshold != 40 || PromptThreshold != 7 || ProbingThreshold != 8 {
		t.Error("a threshold changed: update docs/detection.md")
	}
}
