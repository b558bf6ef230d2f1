package proxy

import (
	"encoding/binary"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/flate"
)

// gzipOut gzip-encodes a lured page for the visitor with work bounded by the page's
// first limit bytes: those are deflated, every byte after goes out in stored
// (uncompressed) deflate blocks, which cost a CRC and a copy. The upstream is asked for
// identity (rewrite), so nothing is ever inflated: a page's cost is what the
// application sent, its compression at most limit bytes' worth. A deflate stream may
// mix block types (RFC 1951 3.2.3); after a sync flush it is byte-aligned, where a
// stored block begins.
type gzipOut struct {
	w      io.Writer
	fw     *flate.Writer // nil once the limit is passed
	left   int64         // bytes that may still be deflated
	crc    uint32
	size   uint32 // ISIZE: the input's length modulo 2^32
	hdr    [5]byte
	err    error
	closed bool
}

// gzipHeader: magic, deflate, no flags, no time, no extra flags, unknown OS (as Go's gzip.Writer).
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

func newGzipOut(w io.Writer, limit int64) *gzipOut {
	g := &gzipOut{w: w, left: limit}
	g.fw, _ = flate.NewWriter(w, flate.DefaultCompression) // only fails for a bad level
	g.write(gzipHeader)
	return g
}

func (g *gzipOut) write(b []byte) {
	if g.err == nil {
		_, g.err = g.w.Write(b)
	}
}

func (g *gzipOut) Write(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	g.crc = crc32.Update(g.crc, crc32.IEEETable, p)
	g.size += uint32(len(p))
	rest := p
	if g.fw != nil {
		n := int(min(int64(len(rest)), g.left))
		if _, err := g.fw.Write(rest[:n]); err != nil {
			g.err = err
			return 0, err
		}
		g.left -= int64(n)
		rest = rest[n:]
		if g.left == 0 { // the bound: end deflating on a byte boundary, store the rest
			if g.err = g.fw.Flush(); g.err != nil {
				return 0, g.err
			}
			g.fw = nil
		}
	}
	for len(rest) > 0 {
		n := min(len(rest), 0xffff)
		g.hdr = [5]byte{0, byte(n), byte(n >> 8), ^byte(n), ^byte(n >> 8)} // BFINAL 0, BTYPE 00, LEN, NLEN
		g.write(g.hdr[:])
		g.write(rest[:n])
		rest = rest[n:]
	}
	return len(p), g.err
}

// Flush sends what was deflated so far (a sync flush): a streamed page stays streamed.
func (g *gzipOut) Flush() error {
	if g.fw != nil && g.err == nil {
		g.err = g.fw.Flush()
	}
	return g.err
}

// Close ends the deflate stream and writes the gzip trailer.
func (g *gzipOut) Close() error {
	if g.closed {
		return g.err
	}
	g.closed = true
	if g.fw != nil {
		if err := g.fw.Close(); err != nil && g.err == nil {
			g.err = err
		}
	} else {
		g.write([]byte{1, 0, 0, 0xff, 0xff}) // an empty final stored block
	}
	var tr [8]byte
	binary.LittleEndian.PutUint32(tr[:4], g.crc)
	binary.LittleEndian.PutUint32(tr[4:], g.size)
	g.write(tr[:])
	return g.err
}
