package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrapFileRefusesAliasBombs: a trap file may come from a pull request that CI plans;
// go-yaml expands aliases without a bound (a 488-byte file of nine nested aliases took
// 95 s and 13 GB here), so anchors and aliases are refused before decoding, as is deep
// flow nesting and a file over 16 MiB.
func TestTrapFileRefusesAliasBombs(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("sites:\n- site: default\n  traps:\n  - path: /x\n    type: page\n    name: &a0 x\n")
	for i := 1; i < 4; i++ {
		fmt.Fprintf(&bomb, "    description: &a%d [*a%d,*a%d,*a%d]\n", i, i-1, i-1, i-1)
	}
	cases := map[string]struct{ text, want string }{
		"alias": {"sites:\n- site: default\n  traps:\n  - path: /x\n    type: page\n    name: &n x\n  - path: /y\n    type: page\n    name: *n\n", "anchors and aliases"},
		"bomb":  {bomb.String(), "anchors and aliases"},
		"merge": {"sites:\n- site: default\n  traps:\n  - &t {path: /x, type: page, name: x}\n  - <<: *t\n    path: /y\n", "anchors and aliases"},
		"deep":  {"sites: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n", "nested deeper"},
	}
	for name, c := range cases {
		_, err := readTrapFile("-", strings.NewReader(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: readTrapFile = %v, want an error saying %q", name, err, c.want)
		}
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, []byte("sites: []\n"+strings.Repeat("#\n", 9<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readTrapFile(big, nil); err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Errorf("a 18 MiB trap file: readTrapFile = %v, want an error saying it is larger than 16 MiB", err)
	}
	if _, err := readTrapFile("-", strings.NewReader("sites: []\n"+strings.Repeat("#\n", 9<<20))); err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Errorf("18 MiB on standard input: readTrapFile = %v, want an error saying it is larger than 16 MiB", err)
	}
	// A plain file still reads.
	if _, err := readTrapFile("-", strings.NewReader("sites:\n- site: default\n  traps:\n  - {path: /x, type: page, name: x}\n")); err != nil {
		t.Errorf("a plain file: %v", err)
	}
}

// TestTrapFileKeepsAmpersandsInText: & and * inside text are not anchors or aliases.
func TestTrapFileKeepsAmpersandsInText(t *testing.T) {
	f, err := readTrapFile("-", strings.NewReader("sites:\n- site: default\n  traps:\n  - path: /x\n    type: page\n    name: R&D docs * draft\n    description: Tom & Jerry\n    public_title: \"*Offers* & &more\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tr := f.Sites[0].Traps[0]; tr.Name != "R&D docs * draft" || tr.Description != "Tom & Jerry" || tr.PublicTitle != "*Offers* & &more" {
		t.Errorf("read %+v", tr)
	}
}
