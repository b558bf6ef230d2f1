package proxy

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"testing"
)

// gzipOut's output is a gzip stream any decoder reads back to the input, however the
// input is cut into writes and wherever the deflate bound falls; past the bound the
// bytes are stored, not compressed.
func TestGzipOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	text := bytes.Repeat([]byte("<p>the same paragraph, again and again</p>\n"), 5000) // 215 KB, compresses ~100x
	noise := make([]byte, 200<<10)
	for i := range noise {
		noise[i] = byte(rng.IntN(256))
	}
	for _, in := range [][]byte{nil, []byte("x"), text, noise, append(append([]byte{}, text...), noise...)} {
		for _, limit := range []int64{0, 1, 1000, 65535, 70000, 1 << 30} {
			var out bytes.Buffer
			g := newGzipOut(&out, limit)
			for rest := in; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(100_000))
				if _, err := g.Write(rest[:n]); err != nil {
					t.Fatal(err)
				}
				if rng.IntN(2) == 0 {
					_ = g.Flush()
				}
				rest = rest[n:]
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(&out)
			if err != nil {
				t.Fatalf("%d bytes, limit %d: %v", len(in), limit, err)
			}
			got, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(got, in) {
				t.Fatalf("%d bytes, limit %d: read back %d bytes, %v", len(in), limit, len(got), err)
			}
		}
	}
	// The bound holds: 215 KB of repetitive text, 1,000 bytes of it deflated, is stored after.
	var out bytes.Buffer
	g := newGzipOut(&out, 1000)
	_, _ = g.Write(text)
	_ = g.Close()
	if out.Len() < len(text)-1000 {
		t.Errorf("%d bytes out for %d in with a 1000-byte bound: compressed past it", out.Len(), len(text))
	}
}
