package schematype

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Headers are a request's headers as a hit keeps them, stored as header lines: one
// "Name: value\n" per value, names in order, values in the order they came. That is
// smaller than JSON's map of lists (no quotes, brackets or \u escapes), cheaper to
// write, and reads in SQL as the request did. A backslash escapes a backslash, a
// newline (\n), a carriage return (\r) and, in names, a colon or an opening brace, so
// any map round-trips. Rows stored as JSON (before this encoding) start with "{",
// which no header line does, and are read as JSON.
type Headers map[string][]string

// Value encodes h as header lines; no headers are "".
func (h Headers) Value() (driver.Value, error) {
	return h.String(), nil
}

// String is h's header lines.
func (h Headers) String() string {
	if len(h) == 0 {
		return ""
	}
	names := make([]string, 0, len(h))
	size := 0
	for k, vs := range h {
		names = append(names, k)
		for _, v := range vs {
			size += len(k) + len(v) + 3
		}
	}
	slices.Sort(names)
	var b strings.Builder
	b.Grow(size)
	for _, k := range names {
		for _, v := range h[k] {
			escape(&b, k, true)
			b.WriteString(": ")
			escape(&b, v, false)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func escape(b *strings.Builder, s string, name bool) {
	if !strings.ContainsAny(s, "\\\n\r:{") {
		b.WriteString(s)
		return
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case name && (c == ':' || c == '{'):
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
}

// Scan decodes header lines, or the JSON of rows stored before them.
func (h *Headers) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case nil:
		*h = Headers{}
		return nil
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		return fmt.Errorf("headers: unexpected %T", src)
	}
	out, err := ParseHeaders(s)
	if err != nil {
		return err
	}
	*h = out
	return nil
}

// ParseHeaders decodes what Headers.String made, or a JSON object of lists.
func ParseHeaders(s string) (Headers, error) {
	out := Headers{}
	if strings.HasPrefix(s, "{") {
		if err := json.Unmarshal([]byte(s), (*map[string][]string)(&out)); err != nil {
			return nil, fmt.Errorf("headers: %w", err)
		}
		return out, nil
	}
	for len(s) > 0 {
		line, rest, ok := strings.Cut(s, "\n")
		if !ok {
			return nil, fmt.Errorf("headers: line without an end")
		}
		s = rest
		name, value, err := splitLine(line)
		if err != nil {
			return nil, err
		}
		out[name] = append(out[name], value)
	}
	return out, nil
}

// splitLine cuts a header line at its first unescaped ": " and unescapes both parts.
func splitLine(line string) (string, string, error) {
	if !strings.Contains(line, `\`) { // the common case: parts of the line as they are
		name, value, ok := strings.Cut(line, ": ")
		if !ok || strings.Contains(name, ":") {
			return "", "", fmt.Errorf("headers: line without a name")
		}
		return name, value, nil
	}
	var name strings.Builder
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			if i+1 == len(line) {
				return "", "", fmt.Errorf("headers: escape at the end of a line")
			}
			i++
			name.WriteByte(unescape(line[i]))
			continue
		}
		if c == ':' {
			if !strings.HasPrefix(line[i:], ": ") {
				return "", "", fmt.Errorf("headers: no space after a name")
			}
			value, err := unescapeAll(line[i+2:])
			return name.String(), value, err
		}
		name.WriteByte(c)
	}
	return "", "", fmt.Errorf("headers: line without a name")
}

func unescapeAll(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			if i+1 == len(s) {
				return "", fmt.Errorf("headers: escape at the end of a line")
			}
			i++
			b.WriteByte(unescape(s[i]))
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	}
	return c
}
