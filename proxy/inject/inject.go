// Package inject inserts a fragment into a streamed HTML page: before its first </body>
// outside scripts, styles and comments, found across the boundaries of writes, holding
// back no more than a tag's first bytes. The lure proxy uses it; it is its own package so
// its fuzz target builds without the rest of the service.
package inject

import (
	"bytes"
	"io"
)

// Injector copies an HTML stream to w and inserts a fragment once: before the first
// </body> outside scripts, styles and comments, or — when the stream has a <body> but
// never closes it — at its end. Matches are case-insensitive and found across the
// boundaries of writes; it holds back at most a few bytes (a tag's beginning) between
// writes, so memory stays bounded whatever the body's size. Past limit bytes without a
// </body> it gives up and passes the rest through untouched.
type Injector struct {
	w        io.Writer
	fragment func() []byte // called once, when the place is found
	limit    int64

	state   scanState
	held    []byte // the start of a possible match, cut by the end of a write
	scanned int64
	sawBody bool
	done    bool // inserted, or gave up
	err     error
}

// Err is the first error of the writer underneath.
func (in *Injector) Err() error { return in.err }

type scanState uint8

const (
	inHTML scanState = iota
	inScript
	inStyle
	inComment
)

// needle is a string whose match changes the scan: delim says it must be followed by
// whitespace, '>' or '/' (a tag name, not "<bodyguard>").
type needle struct {
	s     string
	delim bool
	then  scanState
	act   action
}

type action uint8

const (
	actNone action = iota
	actInsert
	actBody
)

var needles = [...][]needle{
	inHTML: {
		{"</body", true, inHTML, actInsert},
		{"<body", true, inHTML, actBody},
		{"<script", true, inScript, actNone},
		{"<style", true, inStyle, actNone},
		{"<!--", false, inComment, actNone},
	},
	inScript:  {{"</script", true, inHTML, actNone}},
	inStyle:   {{"</style", true, inHTML, actNone}},
	inComment: {{"-->", false, inHTML, actNone}},
}

// mayOpen are the second bytes of the needles of inHTML: '/', 'b', 's', '!', either case.
var mayOpen = [256]bool{'/': true, 'b': true, 'B': true, 's': true, 'S': true, '!': true}

// New returns an Injector writing to w; fragment is called once, when its place is found.
func New(w io.Writer, limit int64, fragment func() []byte) *Injector {
	return &Injector{w: w, limit: limit, fragment: fragment}
}

func (in *Injector) write(b []byte) {
	if in.err == nil && len(b) > 0 {
		_, in.err = in.w.Write(b)
	}
}

// Write passes p on, inserting the fragment when its place is in p.
func (in *Injector) Write(p []byte) (int, error) {
	if in.done {
		in.write(p)
		return len(p), in.err
	}
	in.scanned += int64(len(p))
	data := p
	if len(in.held) > 0 {
		data = append(in.held, p...)
		in.held = nil
	}
	if in.scanned > in.limit {
		in.done = true // too long to look further: the rest passes untouched
		in.write(data)
		return len(p), in.err
	}
	in.scan(data)
	return len(p), in.err
}

func (in *Injector) scan(data []byte) {
	start := 0 // data[:start] is written
	for i := 0; i < len(data); {
		ns := needles[in.state]
		j := bytes.IndexByte(data[i:], ns[0].s[0]) // every needle of a state starts with the same byte
		if j < 0 {
			break
		}
		i += j
		if in.state == inHTML && i+1 < len(data) && !mayOpen[data[i+1]] {
			i++ // "<p", "<div", "</p": most tags rule themselves out at their second byte
			continue
		}
		n, partial := match(data[i:], ns)
		switch {
		case partial:
			in.write(data[start:i])
			in.held = append([]byte(nil), data[i:]...)
			return
		case n == nil:
			i++
			continue
		}
		in.state = n.then
		switch n.act {
		case actBody:
			in.sawBody = true
		case actInsert:
			in.write(data[start:i])
			in.write(in.fragment())
			in.write(data[i:])
			in.done = true
			return
		}
		i += len(n.s)
	}
	in.write(data[start:])
}

// match finds the needle rest begins with; partial says rest is too short to tell.
func match(rest []byte, ns []needle) (*needle, bool) {
	partial := false
	for k := range ns {
		n := &ns[k]
		l := len(n.s)
		if len(rest) < l {
			if eqFold(rest, n.s[:len(rest)]) {
				partial = true
			}
			continue
		}
		if !eqFold(rest[:l], n.s) {
			continue
		}
		if !n.delim {
			return n, false
		}
		if len(rest) == l {
			partial = true
			continue
		}
		if c := rest[l]; c == '>' || c == '/' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
			return n, false
		}
	}
	return nil, partial
}

// eqFold reports whether b equals the lower-case needle s, ASCII letters' case ignored.
func eqFold(b []byte, s string) bool {
	for i := range len(s) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// Close writes what is held back and, for a page whose </body> never came, the fragment
// at its end (the HTML parser puts it into the body).
func (in *Injector) Close() error {
	if in.done {
		return in.err
	}
	in.done = true
	in.write(in.held)
	in.held = nil
	if in.sawBody {
		in.write(in.fragment())
	}
	return in.err
}
