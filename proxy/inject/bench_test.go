package inject

import (
	"io"
	"strings"
	"testing"
)

// BenchmarkInjector is the injector's per-page cost: a 20 KB page (a header, 200
// paragraphs in <main>, an inline script) written in 4 KB pieces, as the proxy reads an
// upstream. docs/benchmarks.md has the figures.
func BenchmarkInjector(b *testing.B) {
	page := "<!DOCTYPE html><html><head><title>Shop</title><script>var x = '</body>';</script></head><body><header><nav><a href=\"/\">Home</a></nav></header><main>" +
		strings.Repeat("<p class=\"item\">A hand-made product, described at some length for the page to weigh what a real one does.</p>\n", 200) +
		"</main></body></html>\n"
	frags := Fragments{Content: []byte("<span>lure</span>"), End: []byte("<a href=\"/x\">lure</a>")}
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		in := New(io.Discard, 1<<20, func() Fragments { return frags })
		for i := 0; i < len(page); i += 4096 {
			_, _ = in.Write([]byte(page[i:min(i+4096, len(page))]))
		}
		_ = in.Close()
	}
}
