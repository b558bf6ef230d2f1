package inject

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

const (
	content = "<!--C-->"
	end     = "<!--E-->"
	frag    = content + end
)

// inject runs the injector over in, cut into writes at the given offsets.
func inject(t testing.TB, in string, cuts []int, limit int64) string {
	t.Helper()
	var out bytes.Buffer
	calls := 0
	inj := New(&out, limit, func() Fragments { calls++; return Fragments{Content: []byte(content), End: []byte(end)} })
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
		{"before </body>", "<html><body><div>x</div></body></html>", "<html><body><div>x</div>" + frag + "</body></html>"},
		{"upper case", "<HTML><BODY class=a><DIV>x</DIV></BODY></HTML>", "<HTML><BODY class=a><DIV>x</DIV>" + frag + "</BODY></HTML>"},
		{"mixed case, attributes on the close", "<body>x</Body  >", "<body>x" + frag + "</Body  >"},
		{"first </body> only", "<body>a</body>b</body>", "<body>a" + frag + "</body>b</body>"},
		{"content in the first paragraph", "<body><p>a</p><p>b</p></body>", "<body><p>a" + content + "</p><p>b</p>" + end + "</body>"},
		{"content in main, not the header", "<body><header><p>h</p></header><p>x</p><main><p>a</p></main></body>",
			"<body><header><p>h</p></header><p>x" + content + "</p><main><p>a</p></main>" + end + "</body>"},
		{"content in main once seen", "<body><header><p>h</p></header><main><div><P>a</P></div></main></body>",
			"<body><header><p>h</p></header><main><div><P>a" + content + "</P></div></main>" + end + "</body>"},
		{"content in an article", "<body><nav><p>n</p></nav><article><p>a</p></article></body>", "<body><nav><p>n</p></nav><article><p>a" + content + "</p></article>" + end + "</body>"},
		{"not inside a script", "<body><script>var s = \"</body></p>\";</script>x</body>", "<body><script>var s = \"</body></p>\";</script>x" + frag + "</body>"},
		{"not inside a style", "<body><style>/* </body> */</style></body>", "<body><style>/* </body> */</style>" + frag + "</body>"},
		{"not inside a comment", "<body><!-- </body> --></body>", "<body><!-- </body> -->" + frag + "</body>"},
		{"not inside a textarea", "<body><textarea></p></body></textarea></body>", "<body><textarea></p></body></textarea>" + frag + "</body>"},
		{"not inside a title", "<body><title></body></title>x</body>", "<body><title></body></title>x" + frag + "</body>"},
		{"not inside an attribute value", `<body><input value="</body>"><a title='</p>'>x</a></body>`, `<body><input value="</body>"><a title='</p>'>x</a>` + frag + "</body>"},
		{"not inside a template", "<body><template><p>t</p></body></template></body>", "<body><template><p>t</p></body></template>" + frag + "</body>"},
		{"not inside svg", "<body><svg><title></body></title><![CDATA[ > </body> ]]></svg></body>", "<body><svg><title></body></title><![CDATA[ > </body> ]]></svg>" + frag + "</body>"},
		{"not inside math", "<body><math><mi></body></mi></math></body>", "<body><math><mi></body></mi></math>" + frag + "</body>"},
		{"svg left by an HTML tag", "<body><svg><circle/><div>x</div></body>", "<body><svg><circle/><div>x</div>" + frag + "</body>"},
		{"not inside a select", "<body><select><option>a</body>", "<body><select><option>a</body>"},
		{"not inside xmp, noscript, iframe", "<body><xmp></body></xmp><noscript></body></noscript><iframe></body></iframe></body>",
			"<body><xmp></body></xmp><noscript></body></noscript><iframe></body></iframe>" + frag + "</body>"},
		{"plaintext never ends", "<body><plaintext></body>", "<body><plaintext></body>"},
		{"script then uppercase close", "<body><SCRIPT src=x></SCRIPT></BODY>", "<body><SCRIPT src=x></SCRIPT>" + frag + "</BODY>"},
		{"no close tag: at the end", "<html><body><div>x", "<html><body><div>x" + frag},
		{"no close tag, open script: untouched", "<html><body><script>x", "<html><body><script>x"},
		{"no close tag, open comment: untouched", "<html><body><!-- x", "<html><body><!-- x"},
		{"a fragment, no body: untouched", "<div>partial</div>", "<div>partial</div>"},
		{"not a body tag", "<bodyguard>x</bodyguard>", "<bodyguard>x</bodyguard>"},
		{"empty", "", ""},
		{"ends with a partial tag: untouched", "<body>x</bo", "<body>x</bo"},
		{"not inside contenteditable", "<body><div contenteditable><div><p>a</p></div></div><p>b</p></body>", "<body><div contenteditable><div><p>a</p></div></div><p>b" + content + "</p>" + end + "</body>"},
		{"contenteditable=false is no editor", `<body><section contenteditable="false"><p>a</p></section></body>`, `<body><section contenteditable="false"><p>a` + content + "</p></section>" + end + "</body>"},
		{"an editable body gets nothing", "<body contenteditable><p>a</p></body>", "<body contenteditable><p>a</p></body>"},
		{"before </html> with no </body>", "<body>x</html>", "<body>x" + frag + "</html>"},
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

func TestInjectorMetaCSP(t *testing.T) {
	var out bytes.Buffer
	inj := New(&out, 1<<20, func() Fragments { return Fragments{End: []byte(end)} })
	inj.Meta = func(p string) string { return p + "; extra" }
	in := `<head><meta charset=utf-8><META HTTP-EQUIV="content-security-policy" CONTENT="style-src 'self'"></head><body></body>`
	_, _ = inj.Write([]byte(in))
	_ = inj.Close()
	want := `<head><meta charset=utf-8><meta http-equiv="Content-Security-Policy" content="style-src &#39;self&#39;; extra"></head><body>` + end + `</body>`
	if out.String() != want {
		t.Errorf("got  %q\nwant %q", out.String(), want)
	}
}

func TestInjectorLongToken(t *testing.T) {
	in := "<body><script>" + strings.Repeat("x", MaxToken+10) + "</script></body>"
	if got := inject(t, in, []int{100, 5000}, 1<<30); got != in {
		t.Errorf("a page with a token longer than MaxToken changed")
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
	for _, s := range []string{"<body><p>a</p><template></body></template><svg><![CDATA[</body>]]></svg></body>", "<body><textarea></body>", "<body><select></body>"} {
		f.Add(s, uint64(2))
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
		if strings.Contains(in, "<!--") && (strings.Contains(in, content) || strings.Contains(in, end)) {
			return // the markers themselves in the page: which one is ours cannot be told
		}
		nc, ne := strings.Count(whole, content), strings.Count(whole, end)
		if nc > 1 || ne > 1 || ne > nc {
			t.Fatalf("fragments inserted %d and %d times: %q", nc, ne, whole)
		}
		if got := strings.Replace(strings.Replace(whole, content, "", 1), end, "", 1); got != in {
			t.Fatalf("output is not the input with the fragments inserted: %q → %q", in, whole)
		}
		if ne == 1 && strings.Index(whole, content) > strings.Index(whole, end) {
			t.Fatalf("content after the end: %q", whole)
		}
	})
}
