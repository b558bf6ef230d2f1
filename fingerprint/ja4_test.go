package fingerprint

import (
	"bufio"
	"crypto/tls"
	"os"
	"strconv"
	"strings"
	"testing"
)

// hello rebuilds the ClientHello a JA4_ro string describes (the values in the order
// sent, GREASE left out), adding GREASE values where Chrome puts them: JA4 must ignore them.
func hello(t *testing.T, ro string) *tls.ClientHelloInfo {
	t.Helper()
	parts := strings.Split(ro, "_")
	a := parts[0]
	h := &tls.ClientHelloInfo{}
	switch a[1:3] {
	case "13":
		h.SupportedVersions = []uint16{0x3a3a, tls.VersionTLS13, tls.VersionTLS12}
	case "12":
		h.SupportedVersions = []uint16{tls.VersionTLS12, tls.VersionTLS11}
	case "10":
		h.SupportedVersions = []uint16{tls.VersionTLS10}
	default:
		t.Fatalf("version %q", a[1:3])
	}
	if alpn := a[8:10]; alpn != "00" {
		h.SupportedProtos = []string{alpn}
	}
	hex := func(s string) []uint16 {
		if s == "" {
			return nil
		}
		var l []uint16
		for _, x := range strings.Split(s, ",") {
			v, err := strconv.ParseUint(x, 16, 16)
			if err != nil {
				t.Fatalf("%q: %v", x, err)
			}
			l = append(l, uint16(v))
		}
		return l
	}
	h.CipherSuites = append([]uint16{0x8a8a}, hex(parts[1])...)
	if len(parts) > 2 {
		h.Extensions = append([]uint16{0xdada}, hex(parts[2])...)
		h.Extensions = append(h.Extensions, 0x4a4a)
	}
	if len(parts) > 3 {
		for _, v := range hex(parts[3]) {
			h.SignatureSchemes = append(h.SignatureSchemes, tls.SignatureScheme(v))
		}
	}
	return h
}

// Every JA4 in FoxIO's published test output, computed from the ClientHello it came from.
func TestJA4Vectors(t *testing.T) {
	f, err := os.Open("testdata/ja4-vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		fs := strings.Fields(line)
		want, ro := fs[0], fs[1]
		if got := JA4(hello(t, ro)); got != want {
			t.Errorf("%s (%s): got %s, want %s", ro, fs[2], got, want)
		}
		if !ValidJA4(want) {
			t.Errorf("ValidJA4(%s) = false", want)
		}
		n++
	}
	if n < 80 {
		t.Fatalf("only %d vectors read", n)
	}
}

// The example of the spec (technical_details/JA4.md), and its corner cases.
func TestJA4Spec(t *testing.T) {
	h := &tls.ClientHelloInfo{
		SupportedVersions: []uint16{0x0a0a, tls.VersionTLS13, tls.VersionTLS12},
		CipherSuites:      []uint16{0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014, 0x009c, 0x009d, 0x002f, 0x0035},
		Extensions:        []uint16{0x001b, 0x0000, 0x0033, 0x0010, 0x4469, 0x0017, 0x002d, 0x000d, 0x0005, 0x0023, 0x0012, 0x002b, 0xff01, 0x000b, 0x000a, 0x0015},
		SignatureSchemes:  []tls.SignatureScheme{0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601},
		SupportedProtos:   []string{"h2", "http/1.1"},
	}
	if got, want := JA4(h), "t13d1516h2_8daaf6152771_e5627efa2ab1"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	h.SignatureSchemes = nil // no signature algorithms: the list ends without an underscore
	if got, want := JA4(h)[24:], "6d807ffa2a79"; got != want {
		t.Errorf("without signature algorithms: got %s, want %s", got, want)
	}
	for alpn, want := range map[string]string{"http/1.1": "h1", "": "00", "\xab": "ab", "\x20": "20", "\xab\xcd": "ad", "\x20\x61": "21", "\x30\xab": "3b", "\x61\x20": "60", "\x30\x31\xab\xcd": "3d", "\x30\xab\xcd\x31": "01", "x": "xx"} {
		h.SupportedProtos = []string{alpn}
		if got := JA4(h)[8:10]; got != want {
			t.Errorf("ALPN %q: got %s, want %s", alpn, got, want)
		}
	}
	empty := JA4(&tls.ClientHelloInfo{})
	if empty != "t00i000000_000000000000_000000000000" {
		t.Errorf("an empty hello: %s", empty)
	}
	for _, bad := range []string{"", "t13d1516h2_8daaf6152771_e5627efa2ab", "x13d1516h2_8daaf6152771_e5627efa2ab1", "t13d1516h2-8daaf6152771_e5627efa2ab1", "t13d1516h2_8daaf6152771_E5627efa2ab1", "t13d1516h2_8daaf6152771_e5627efa2ab1\n"} {
		if ValidJA4(bad) {
			t.Errorf("ValidJA4(%q) = true", bad)
		}
	}
}
