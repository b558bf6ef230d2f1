package inject

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

const frag = "<!--LURE-->"

// inject runs the injector over in, cut into writes at the given offsets.
func inject(t testing.TB, in string, cuts []int, limit int64) string {
	t.Helper()
	var out bytes.Buffer
	calls := 0
	inj := New(&out, limit, func() []byte { calls++; return []byte(frag) })
	prev := 0
	for _, c := range append(cuts, len(in)) {
		if c < prev || c > len(in) {
			continue
		}
		if _, err := inj.Write([]byte(in[prev:c])); err != nil {
			t.Fatal(err)
		}
		prev = c
	}
	if err := inj.Close(); err != nil {
		t.Fatal(err)
	}
	if calls > 1 {
		t.Fatalf("fragment asked for %d times", calls)
	}
	return out.String()
}

func TestInjector(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"before </body>", "<html><body><p>x</p></body></html>", "<html><body><p>x</p>" + frag + "</body></html>"},
		{"upper case", "<HTML><BODY class=a><P>x</P></BODY></HTML>", "<HTML><BODY class=a><P>x</P>" + frag + "</BODY></HTML>"},
		{"mixed case, attributes on the close", "<body>x</Body  >", "<body>x" + frag + "</Body  >"},
		{"first </body> only", "<body>a</body>b</body>", "<body>a" + frag + "</body>b</body>"},
		{"not inside a script", "<body><script>var s = \"</body>\";</script>x</body>", "<body><script>var s = \"</body>\";</script>x" + frag + "</body>"},
		{"not inside a style", "<body><style>/* </body> */</style></body>", "<body><style>/* </body> */</style>" + frag + "</body>"},
		{"not inside a comment", "<body><!-- </body> --></body>", "<body><!-- </body> -->" + frag + "</body>"},
		{"script then uppercase close", "<body><SCRIPT src=x></SCRIPT></BODY>", "<body><SCRIPT src=x></SCRIPT>" + frag + "</BODY>"},
		{"no close tag: at the end", "<html><body><p>x", "<html><body><p>x" + frag},
		{"a fragment, no body: untouched", "<div>partial</div>", "<div>partial</div>"},
		{"not a body tag", "<bodyguard>x</bodyguard>", "<bodyguard>x</bodyguard>"},
		{"empty", "", ""},
		{"ends with a partial tag", "<body>x</bo", "<body>x</bo" + frag},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := inject(t, c.in, nil, 1<<20); got != c.want {
				t.Errorf("one write:\n got %q\nwant %q", got, c.want)
			}
			// Every cut into two writes, and into single bytes, gives the same output.
			for i := 0; i <= len(c.in); i++ {
				if got := inject(t, c.in, []int{i}, 1<<20); got != c.want {
					t.Fatalf("cut at %d:\n got %q\nwant %q", i, got, c.want)
				}
			}
			var every []int
			for i := range len(c.in) {
				every = append(every, i)
			}
			if got := inject(t, c.in, every, 1<<20); got != c.want {
				t.Errorf("byte by byte:\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestInjectorLimit(t *testing.T) {
	in := "<body>" + strings.Repeat("x", 100) + "</body>"
	if got := inject(t, in, []int{50}, 60); got != in {
		t.Errorf("past the limit the page changed: %q", got)
	}
}

// FuzzInjector checks that whatever the page and however it is cut into writes, the
// output is the input with the fragment inserted at most once, at the same place.
func FuzzInjector(f *testing.F) {
	for _, s := range []string{"<html><body>x</body></html>", "<BODY><script></body></script></Body>", "<!--</body>--><body>", "</bo</body", "<body"} {
		f.Add(s, uint64(1))
	}
	f.Fuzz(func(t *testing.T, in string, seed uint64) {
		whole := inject(t, in, nil, 1<<20)
		rng := rand.New(rand.NewPCG(seed, seed))
		var cuts []int
		for i := 0; i < len(in); i += 1 + rng.IntN(8) {
			cuts = append(cuts, i)
		}
		if got := inject(t, in, cuts, 1<<20); got != whole {
			t.Fatalf("cut into writes at %v:\n got %q\nwant %q", cuts, got, whole)
		}
		switch strings.Count(whole, frag) - strings.Count(in, frag) {
		case 0:
			if whole != in {
				t.Fatalf("changed without inserting: %q → %q", in, whole)
			}
		case 1:
			i := strings.Index(whole, frag)
			for i >= 0 && whole[:i]+whole[i+len(frag):] != in {
				j := strings.Index(whole[i+1:], frag)
				if j < 0 {
					i = -1
					break
				}
				i += 1 + j
			}
			if i < 0 {
				t.Fatalf("output is not the input with the fragment inserted: %q → %q", in, whole)
			}
		default:
			t.Fatalf("fragment inserted more than once: %q", whole)
		}
	})
}
