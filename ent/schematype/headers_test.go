package schematype

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestHeadersRoundTrip(t *testing.T) {
	for _, h := range []Headers{
		{},
		{"Accept": {"*/*"}},
		{"X-Forwarded-For": {"198.51.100.1", "203.0.113.7"}, "User-Agent": {"Mozilla/5.0 (x) Chrome/131"}},
		{"Weird:Name": {"a: b", "line\nbreak\r", `back\slash\`, ""}, "{json": {"{}"}, "": {":"}, "\\": {"\\n"}},
	} {
		s := h.String()
		got, err := ParseHeaders(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if !reflect.DeepEqual(got, h) {
			t.Fatalf("%v encoded %q and read back %v", h, s, got)
		}
		if len(s) > 0 && s[0] == '{' {
			t.Fatalf("%q reads as JSON", s)
		}
	}
	if got := (Headers{"B": {"2"}, "A": {"1", "x"}}).String(); got != "A: 1\nA: x\nB: 2\n" {
		t.Fatalf("header lines %q", got)
	}
}

// Rows written before header lines hold JSON: they read as they were written.
func TestHeadersReadJSON(t *testing.T) {
	var h Headers
	if err := h.Scan(`{"Accept": ["text/html"], "X-A": ["1", "2"]}`); err != nil {
		t.Fatal(err)
	}
	if want := (Headers{"Accept": {"text/html"}, "X-A": {"1", "2"}}); !reflect.DeepEqual(h, want) {
		t.Fatalf("read %v", h)
	}
	if err := h.Scan([]byte("")); err != nil || len(h) != 0 {
		t.Fatalf("empty: %v %v", h, err)
	}
}

func TestHeadersRefuseGarbage(t *testing.T) {
	for _, s := range []string{"no end", "NoColon\n", "Name:nospace\n", "Name: x\\", "{not json", "Bad\\"} {
		if _, err := ParseHeaders(s); err == nil {
			t.Errorf("%q parsed", s)
		}
	}
}

func FuzzHeaders(f *testing.F) {
	f.Add("Accept", "*/*", "X", "a\nb")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		h := Headers{k1: {v1}}
		h[k2] = append(h[k2], v2)
		got, err := ParseHeaders(h.String())
		if err != nil || !reflect.DeepEqual(got, h) {
			t.Fatalf("%v read back %v, %v", h, got, err)
		}
	})
}

// browser is a desktop Chrome's page request headers.
var browser = Headers{
	"Accept":                    {"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"},
	"Accept-Encoding":           {"gzip, deflate, br, zstd"},
	"Accept-Language":           {"en-US,en;q=0.9,de;q=0.8"},
	"Cache-Control":             {"max-age=0"},
	"Sec-Ch-Ua":                 {`"Google Chrome";v="131", "Chromium";v="131", "Not_A Brand";v="24"`},
	"Sec-Ch-Ua-Mobile":          {"?0"},
	"Sec-Ch-Ua-Platform":        {`"Windows"`},
	"Sec-Fetch-Dest":            {"document"},
	"Sec-Fetch-Mode":            {"navigate"},
	"Sec-Fetch-Site":            {"none"},
	"Sec-Fetch-User":            {"?1"},
	"Upgrade-Insecure-Requests": {"1"},
	"User-Agent":                {"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"},
}

// BenchmarkHeadersEncode compares header lines with the JSON they replaced.
func BenchmarkHeadersEncode(b *testing.B) {
	b.Run("lines", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = browser.String()
		}
		b.ReportMetric(float64(len(browser.String())), "bytes")
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		m := map[string][]string(browser)
		for b.Loop() {
			_, _ = json.Marshal(m)
		}
		j, _ := json.Marshal(m)
		b.ReportMetric(float64(len(j)), "bytes")
	})
}

// BenchmarkHeadersDecode compares reading header lines with reading JSON.
func BenchmarkHeadersDecode(b *testing.B) {
	lines := browser.String()
	j, _ := json.Marshal(map[string][]string(browser))
	b.Run("lines", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ParseHeaders(lines)
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ParseHeaders(string(j))
		}
	})
}
