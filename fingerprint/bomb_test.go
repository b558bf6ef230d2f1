package fingerprint

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func h2frame(typ, flags byte, stream uint32, p []byte) []byte {
	h := make([]byte, 9, 9+len(p))
	h[0], h[1], h[2] = byte(len(p)>>16), byte(len(p)>>8), byte(len(p))
	h[3], h[4] = typ, flags
	binary.BigEndian.PutUint32(h[5:], stream)
	return append(h, p...)
}

// hpackBomb is a connection's first bytes whose HEADERS block adds one header of a 4,000-byte
// name to the HPACK table, then names it again with one byte each until the sniff's limit:
// decoded whole, ~48 MB of names to hash for 16 KB sent (found by a red-team pass: 160 ms of
// CPU per connection).
func hpackBomb() []byte {
	in := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	in = append(in, h2frame(4, 0, 0, nil)...)
	blk := []byte{0x40, 0x7f, byte((4000-127)%128 | 0x80), byte((4000 - 127) / 128)}
	blk = append(blk, bytes.Repeat([]byte("x"), 4000)...)
	blk = append(blk, 0x00)
	for len(in)+len(blk)+2*9+64 < MaxSniff {
		blk = append(blk, 0x80|62)
	}
	half := len(blk) / 2
	in = append(in, h2frame(1, 0, 1, blk[:half])...)
	return append(in, h2frame(9, 4, 1, blk[half:])...)
}

// Over TLS the block is read, but only its first names are hashed (maxOrderFields or
// MaxSniff bytes of names): the fingerprint is made, the amplification is not.
func TestHPACKRepeatsAreBounded(t *testing.T) {
	var c Conn
	c.Feed(hpackBomb())
	if !strings.HasPrefix(c.Order, "h2") || c.H2 == "" {
		t.Fatalf("an HTTP/2 connection's fingerprints: order %q, h2 %q", c.Order, c.H2)
	}
	if n := countOf(t, c.Order); n > maxOrderFields {
		t.Fatalf("order %q counts %d fields, more than the %d read", c.Order, n, maxOrderFields)
	}
}

// A plain connection speaks HTTP/1 only: "PRI * HTTP/2.0" there is an HTTP/1 head, and
// what follows is never decoded as HTTP/2 frames.
func TestPlainConnectionsAreNeverHTTP2(t *testing.T) {
	var c Conn
	c.FeedPlain(hpackBomb())
	if c.H2 != "" || !strings.HasPrefix(c.Order, "h1") {
		t.Fatalf("a plain connection read as HTTP/2: order %q, h2 %q", c.Order, c.H2)
	}
}

func countOf(t *testing.T, order string) int {
	t.Helper()
	n := 0
	for _, ch := range order[2:strings.IndexByte(order, '_')] {
		n = n*10 + int(ch-'0')
	}
	return n
}

// Thousands of empty frames before the first HEADERS, trickled in one read each, end the
// fingerprint rather than being read again from the start at each one.
func TestManyFramesBeforeHeadersEndTheSniff(t *testing.T) {
	in := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	for len(in)+9 < MaxSniff {
		in = append(in, h2frame(0xff, 0, 0, nil)...)
	}
	var c Conn
	c.Feed(in[:24])
	fed := 24
	for ; fed < len(in) && !c.done; fed += 9 {
		c.Feed(in[fed:min(fed+9, len(in))])
	}
	if !c.done || fed > 24+9*(maxFramesBeforeHeaders+2) {
		t.Fatalf("still sniffing after %d bytes of empty frames (done %v)", fed, c.done)
	}
	if c.H2 != "" {
		t.Fatalf("a fingerprint from no HEADERS: %q", c.H2)
	}
}
