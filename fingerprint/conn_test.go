package fingerprint

import (
	"bytes"
	"crypto/tls"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// chromeLike is the first flight of an HTTP/2 client: preface, SETTINGS, WINDOW_UPDATE,
// PRIORITY frames, and a HEADERS split by a CONTINUATION.
func chromeLike(t testing.TB) []byte {
	var buf bytes.Buffer
	buf.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&buf, nil)
	fr.WriteSettings(http2.Setting{ID: 1, Val: 65536}, http2.Setting{ID: 2, Val: 0}, http2.Setting{ID: 4, Val: 6291456}, http2.Setting{ID: 6, Val: 262144})
	fr.WriteWindowUpdate(0, 15663105)
	fr.WritePriority(3, http2.PriorityParam{StreamDep: 0, Exclusive: false, Weight: 200})
	fr.WritePriority(5, http2.PriorityParam{StreamDep: 3, Exclusive: true, Weight: 100})
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":authority", "example.com"}, {":scheme", "https"}, {":path", "/"}, {"user-agent", "x"}, {"accept", "*/*"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	block := hb.Bytes()
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:5], EndStream: true,
		Priority: http2.PriorityParam{StreamDep: 0, Exclusive: true, Weight: 255}})
	fr.WriteContinuation(1, true, block[5:])
	fr.WriteData(1, true, []byte("not examined"))
	return buf.Bytes()
}

func TestH2Fingerprint(t *testing.T) {
	flight := chromeLike(t)
	const want = "1:65536;2:0;4:6291456;6:262144|15663105|3:0:0:201,5:1:3:101|m,a,s,p"
	wantOrder := HeaderOrder("h2", []string{"user-agent", "accept"})
	for _, chunk := range []int{len(flight), 1, 7, 100} {
		var c Conn
		for b := flight; len(b) > 0; {
			n := min(chunk, len(b))
			c.Feed(b[:n])
			b = b[n:]
		}
		if c.H2 != want || c.Order != wantOrder {
			t.Errorf("in reads of %d bytes: H2 %q, order %q; want %q, %q", chunk, c.H2, c.Order, want, wantOrder)
		}
	}
}

func TestHeaderOrderHTTP1(t *testing.T) {
	head := "GET /a HTTP/1.1\r\nHost: x\r\nUser-Agent: curl/8\r\nAccept: */*\r\n\r\nGET /b HTTP/1.1\r\nAccept: x\r\n\r\n"
	want := HeaderOrder("h1", []string{"Host", "User-Agent", "Accept"})
	for _, chunk := range []int{len(head), 1, 3} {
		var c Conn
		for b := []byte(head); len(b) > 0; {
			n := min(chunk, len(b))
			c.Feed(b[:n])
			b = b[n:]
		}
		if c.Order != want || c.H2 != "" {
			t.Errorf("in reads of %d bytes: order %q, H2 %q; want %q", chunk, c.Order, c.H2, want)
		}
	}
	if want == HeaderOrder("h1", []string{"host", "user-agent", "accept"}) {
		t.Error("the case of the names is not in the fingerprint")
	}
	if want == HeaderOrder("h1", []string{"User-Agent", "Host", "Accept"}) {
		t.Error("the order of the names is not in the fingerprint")
	}
	if len(want) != 17 || want[:4] != "h103" {
		t.Errorf("fingerprint %q", want)
	}
}

// Attacker-controlled bytes: a head larger than MaxSniff, garbage, a HEADERS with a bad
// block, a frame claiming 16 MB. None panics; none yields a fingerprint it did not see.
func TestSniffBounded(t *testing.T) {
	big := append([]byte("GET / HTTP/1.1\r\n"), bytes.Repeat([]byte("X-A: b\r\n"), MaxSniff)...)
	var c Conn
	c.Feed(big)
	c.Feed([]byte("\r\n"))
	if c.Order != "" || !c.done {
		t.Errorf("a head over MaxSniff: order %q", c.Order)
	}
	for _, b := range [][]byte{
		[]byte("\x00\x01\x02garbage\n\n"),
		[]byte(http2.ClientPreface + "\xff\xff\xff\x04\x00\x00\x00\x00\x00"),
		[]byte(http2.ClientPreface + "\x00\x00\x03\x01\x05\x00\x00\x00\x01\xff\xff\xff"),
		[]byte(http2.ClientPreface + "\x00\x00\x01\x09\x04\x00\x00\x00\x01\x00"),
		[]byte("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n"),
	} {
		var c Conn
		c.Feed(b)
		c.Feed(b)
		if c.H2 != "" {
			t.Errorf("%q: H2 %q", b, c.H2)
		}
	}
}

func BenchmarkJA4(b *testing.B) {
	h := &tls.ClientHelloInfo{
		SupportedVersions: []uint16{0x0a0a, tls.VersionTLS13, tls.VersionTLS12},
		CipherSuites:      []uint16{0x1a1a, 0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014, 0x009c, 0x009d, 0x002f, 0x0035},
		Extensions:        []uint16{0x2a2a, 0x001b, 0x0000, 0x0033, 0x0010, 0x4469, 0x0017, 0x002d, 0x000d, 0x0005, 0x0023, 0x0012, 0x002b, 0xff01, 0x000b, 0x000a, 0x0015, 0x3a3a},
		SignatureSchemes:  []tls.SignatureScheme{0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601},
		SupportedProtos:   []string{"h2", "http/1.1"},
	}
	b.ReportAllocs()
	for b.Loop() {
		JA4(h)
	}
}

func BenchmarkH2Fingerprint(b *testing.B) {
	flight := chromeLike(b)
	b.ReportAllocs()
	for b.Loop() {
		var c Conn
		c.Feed(flight)
	}
}

func BenchmarkHeaderOrderHTTP1(b *testing.B) {
	head := []byte("GET /index.html HTTP/1.1\r\nHost: example.com\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/131.0.0.0 Safari/537.36\r\nAccept: text/html\r\nAccept-Encoding: gzip, deflate, br\r\nAccept-Language: en-US\r\nConnection: keep-alive\r\n\r\n")
	b.ReportAllocs()
	for b.Loop() {
		var c Conn
		c.Feed(head)
	}
}
