package fingerprint

import (
	"crypto/tls"
	"encoding/binary"
	"testing"
)

// Whatever a client sends, in whatever reads: no panic, the examination stops at MaxSniff,
// and what is kept fits its columns.
func FuzzFeed(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\nUser-Agent: y\r\n\r\n"), uint8(3))
	f.Add(chromeLike(f), uint8(1))
	f.Add(chromeLike(f), uint8(200))
	f.Add([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x01\x00\x00\x10\x00"), uint8(5))
	f.Fuzz(func(t *testing.T, b []byte, chunk uint8) {
		var c Conn
		n := int(chunk) + 1
		for p := b; len(p) > 0; {
			k := min(n, len(p))
			c.Feed(p[:k])
			p = p[k:]
		}
		if len(c.H2) > MaxH2 || len(c.Order) > 32 || c.s != nil && c.s.seen > MaxSniff {
			t.Fatalf("H2 %d bytes, order %q", len(c.H2), c.Order)
		}
	})
}

// A ClientHello's lists, however long or odd: a JA4 of JA4's shape.
func FuzzJA4(f *testing.F) {
	f.Add([]byte{0x13, 0x01, 0x0a, 0x0a}, []byte{0, 0, 0, 0x10}, []byte{4, 3}, "h2", uint16(tls.VersionTLS13))
	f.Fuzz(func(t *testing.T, ciphers, exts, sigs []byte, alpn string, ver uint16) {
		u16 := func(b []byte) []uint16 {
			var l []uint16
			for i := 0; i+1 < len(b); i += 2 {
				l = append(l, binary.BigEndian.Uint16(b[i:]))
			}
			return l
		}
		h := &tls.ClientHelloInfo{CipherSuites: u16(ciphers), Extensions: u16(exts), SupportedVersions: []uint16{ver}}
		for _, s := range u16(sigs) {
			h.SignatureSchemes = append(h.SignatureSchemes, tls.SignatureScheme(s))
		}
		if alpn != "" {
			h.SupportedProtos = []string{alpn}
		}
		if j := JA4(h); !ValidJA4(j) {
			t.Fatalf("JA4 %q has not JA4's shape", j)
		}
	})
}
