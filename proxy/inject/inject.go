// Package inject inserts a page's lures into a streamed HTML page, found with a real HTML
// tokenizer (golang.org/x/net/html's): a </body> or </p> inside a <textarea>, a <title>,
// a script, a style, a comment, an attribute value, a <template> or SVG/MathML content is
// text there, never an insertion point. The lure proxy uses it; it is its own package so
// its fuzz target builds without the rest of the service.
package inject

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"golang.org/x/net/html"
)

// Fragments are what one page gets.
type Fragments struct {
	// Content goes into the page's text, where reader modes look for the article: before
	// the first </p> inside <main> or <article> (or, while neither has been seen, of a
	// paragraph outside <header>, <nav>, <footer> and <aside>). With no such paragraph it
	// goes with End.
	Content []byte
	// End goes before the page's </body> (or </html>), or at the end of a page that has a
	// <body> and never closes it.
	End []byte
}

// MaxToken is the longest single token (a tag, a text run, a script's text) the injector
// holds while it looks for the places: a page with a longer one passes untouched from
// there on.
const MaxToken = 1 << 20

// Injector copies an HTML stream to w and inserts the fragments once, at their places
// (Fragments). It holds back at most the token it is reading (a tag's first bytes, the
// text since the last tag) between writes. Past limit bytes without finding </body> it
// gives up and passes the rest through untouched, as it does for a page whose end is not
// plain HTML (inside a script, a comment, a <template>, SVG…), which gets no End.
//
// Writes go through a tokenizer on a goroutine of its own, which runs only while Write or
// Close waits for it: w is never written to concurrently, and nothing is written after
// Close returns.
type Injector struct {
	w     io.Writer
	limit int64
	frag  func() Fragments
	// Meta, if set, rewrites the policy of a <meta http-equiv="Content-Security-Policy">
	// (the Content-Security-Policy header's counterpart in the page; see the proxy).
	Meta func(policy string) string

	started  bool
	through  bool // the tokenizer is done: writes go straight to w
	scanned  int64
	chunks   chan []byte   // to the tokenizer; nil: stop; closed: end of the page
	consumed chan struct{} // the tokenizer took the whole chunk and wrote what it could
	finished chan struct{} // the tokenizer is done (closed)
	err      error

	// The tokenizer goroutine's state.
	cur      []byte // the rest of the chunk it is reading
	primed   bool
	frags    *Fragments
	inserted bool // Content is in
}

// New returns an Injector writing to w; fragments is called once, when a place is found.
func New(w io.Writer, limit int64, fragments func() Fragments) *Injector {
	return &Injector{w: w, limit: limit, frag: fragments}
}

// Err is the first error of the writer underneath.
func (in *Injector) Err() error { return in.err }

func (in *Injector) write(b []byte) {
	if in.err == nil && len(b) > 0 {
		_, in.err = in.w.Write(b)
	}
}

// Write passes p on, with the fragments inserted where their places are in it.
func (in *Injector) Write(p []byte) (int, error) {
	if in.through {
		in.write(p)
		return len(p), in.err
	}
	if !in.started {
		in.start()
	}
	in.scanned += int64(len(p))
	if in.scanned > in.limit {
		in.stop()
		in.write(p)
		return len(p), in.err
	}
	if len(p) == 0 {
		return 0, in.err
	}
	in.chunks <- p
	select {
	case <-in.consumed:
	case <-in.finished:
		in.through = true
	}
	return len(p), in.err
}

// stop ends the tokenizer without inserting anything more: what it holds is written.
func (in *Injector) stop() {
	if in.through {
		return
	}
	if in.started {
		in.chunks <- nil
		<-in.finished
	}
	in.through = true
}

// Close writes what is held back and, for a page whose </body> never came, the fragments
// at its end when the end is plain HTML (the HTML parser puts them into the body).
func (in *Injector) Close() error {
	if !in.through && in.started {
		close(in.chunks)
		<-in.finished
	}
	in.through = true
	return in.err
}

func (in *Injector) start() {
	in.started = true
	in.chunks = make(chan []byte)
	in.consumed = make(chan struct{})
	in.finished = make(chan struct{})
	go in.run()
}

var errStop = errors.New("stop")

// Read is the tokenizer's input: the chunks Write hands over, one at a time.
func (in *Injector) Read(p []byte) (int, error) {
	for len(in.cur) == 0 {
		if in.primed {
			in.consumed <- struct{}{} // all of Write's chunk is in: Write returns
		}
		in.primed = true
		c, ok := <-in.chunks
		if !ok {
			return 0, io.EOF
		}
		if c == nil {
			return 0, errStop
		}
		in.cur = c
	}
	n := copy(p, in.cur)
	in.cur = in.cur[n:]
	return n, nil
}

// reader hides Injector's other methods from the tokenizer.
type reader struct{ in *Injector }

func (r reader) Read(p []byte) (int, error) { return r.in.Read(p) }

func (in *Injector) fragments() *Fragments {
	if in.frags == nil {
		f := in.frag()
		in.frags = &f
	}
	return in.frags
}

// scan is what the tokenizer knows of where it is.
type scan struct {
	body     bool // a <body> was opened
	template int  // <template> depth: its content is inert
	foreign  int  // <svg>/<math> depth
	selects  int  // inside a <select>, only <option> and text count
	content  int  // <main>/<article> depth
	sawMain  bool
	chrome   int    // <header>/<nav>/<footer>/<aside> depth
	rawOpen  bool   // a raw text element (script, textarea…) was opened and not yet closed
	editable string // the element whose contenteditable content we are in: an editor would save a lure
	editing  int    // its depth
	tail     bool   // the last token may be cut (no '>' after its last '<')
}

func (in *Injector) run() {
	defer close(in.finished)
	z := html.NewTokenizer(reader{in})
	z.SetMaxBuf(MaxToken)
	var s scan
	for {
		z.AllowCDATA(s.foreign > 0)
		tt := z.Next()
		raw := z.Raw()
		if tt == html.ErrorToken {
			in.write(raw)
			if len(raw) > 0 {
				s.tail = cut(raw)
			}
			in.write(z.Buffered())
			if z.Err() == io.EOF && s.body && !s.rawOpen && !s.tail && s.template == 0 && s.foreign == 0 && s.selects == 0 && s.editing == 0 {
				f := in.fragments()
				if !in.inserted {
					in.write(f.Content)
				}
				in.write(f.End)
			}
			in.passRest()
			return
		}
		s.tail = cut(raw)
		if s.rawOpen && tt != html.TextToken {
			s.rawOpen = false
		}
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			name := tagName(raw, 1)
			if s.foreign > 0 {
				z.NextIsNotRawText() // <style>, <title>, <script> in SVG hold markup
				switch {
				case breaksOut(name, raw):
					s.foreign = 0
				case tt == html.StartTagToken && (name == "svg" || name == "math"):
					s.foreign++
				}
				if s.foreign > 0 {
					in.write(raw)
					continue
				}
			}
			if s.editing > 0 && name != "" && name == s.editable && tt == html.StartTagToken {
				s.editing++
			} else if s.editing == 0 && tt == html.StartTagToken && editable(raw) {
				s.editable, s.editing = tagName(raw, 1), 1
				if s.editable == "" {
					s.editable = strings.ToLower(string(raw[1:min(len(raw), 1+bytes.IndexAny(raw[1:], " \t\n\r\f/>"))]))
				}
			}
			switch name {
			case "body":
				s.body = true
			case "template":
				s.template++
			case "svg", "math":
				if tt == html.StartTagToken {
					s.foreign++
				}
			case "select":
				s.selects++
			case "main", "article":
				s.content++
				s.sawMain = true
			case "header", "nav", "footer", "aside":
				s.chrome++
			case "meta":
				if in.Meta != nil && s.template == 0 {
					in.write(in.meta(z, raw))
					continue
				}
			case "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript", "plaintext":
				s.rawOpen = tt == html.StartTagToken
			}
			in.write(raw)
		case html.EndTagToken:
			name := tagName(raw, 2)
			if s.foreign > 0 {
				switch name {
				case "svg", "math":
					s.foreign--
				case "p", "br":
					s.foreign = 0 // out of foreign content; not a place of ours
				}
				in.write(raw)
				continue
			}
			plain := s.body && s.template == 0 && s.selects == 0 && s.editing == 0
			if s.editing > 0 && s.editable != "" && eqName(raw[2:], s.editable) && name != "body" && name != "html" {
				s.editing--
			}
			switch name {
			case "p":
				if plain && !in.inserted && (s.content > 0 || (!s.sawMain && s.chrome == 0)) {
					in.write(in.fragments().Content)
					in.inserted = true
				}
			case "body", "html":
				if plain {
					f := in.fragments()
					if !in.inserted {
						in.write(f.Content)
					}
					in.write(f.End)
					in.write(raw)
					in.write(z.Buffered())
					in.passRest()
					return
				}
			case "template":
				s.template = max(s.template-1, 0)
			case "select":
				s.selects = max(s.selects-1, 0)
			case "main", "article":
				s.content = max(s.content-1, 0)
			case "header", "nav", "footer", "aside":
				s.chrome = max(s.chrome-1, 0)
			}
			in.write(raw)
		default:
			in.write(raw)
		}
	}
}

// passRest writes what is left of the current chunk: the tokenizer reads no more.
func (in *Injector) passRest() {
	in.write(in.cur)
	in.cur = nil
}

// meta rewrites a <meta http-equiv="Content-Security-Policy" content=…> with Meta;
// any other <meta> comes back as it was.
func (in *Injector) meta(z *html.Tokenizer, raw []byte) []byte {
	orig := bytes.Clone(raw) // TagAttr lower-cases and unescapes in place
	var equiv, content string
	var hasContent bool
	for {
		k, v, more := z.TagAttr()
		switch string(k) {
		case "http-equiv":
			equiv = string(v)
		case "content":
			content, hasContent = string(v), true
		}
		if !more {
			break
		}
	}
	if !hasContent || !strings.EqualFold(strings.TrimSpace(equiv), "content-security-policy") {
		return orig
	}
	policy := in.Meta(content)
	if policy == content {
		return orig
	}
	return []byte(`<meta http-equiv="Content-Security-Policy" content="` + html.EscapeString(policy) + `">`)
}

// tagName is the lower-cased name of the tag raw, whose name starts at from, if it is one
// the injector looks at ("" otherwise): found without allocating.
func tagName(raw []byte, from int) string {
	end := from
	for end < len(raw) {
		c := raw[end]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '/' || c == '>' {
			break
		}
		end++
	}
	if end-from > 10 {
		return "" // longer than every name we look for
	}
	var b [10]byte
	n := copy(b[:], raw[from:end])
	for i := range n {
		if c := b[i]; 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return names[string(b[:n])]
}

// names are the tag names the injector looks at.
var names = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{"body", "html", "p", "template", "svg", "math", "select", "main", "article", "header", "nav",
		"footer", "aside", "meta", "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript",
		"plaintext", "br", "b", "big", "blockquote", "center", "code", "dd", "div", "dl", "dt", "em", "embed",
		"h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing", "menu", "nobr", "ol", "pre",
		"ruby", "s", "small", "span", "strong", "strike", "sub", "sup", "table", "tt", "u", "ul", "var", "font"} {
		m[n] = n
	}
	return m
}()

// breaksOut reports whether a start tag ends foreign content (the HTML standard's list).
func breaksOut(name string, raw []byte) bool {
	switch name {
	case "b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em", "embed",
		"h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing", "menu", "meta",
		"nobr", "ol", "p", "pre", "ruby", "s", "small", "span", "strong", "strike", "sub", "sup", "table",
		"tt", "u", "ul", "var":
		return true
	case "font":
		l := bytes.ToLower(raw)
		return bytes.Contains(l, []byte("color")) || bytes.Contains(l, []byte("face")) || bytes.Contains(l, []byte("size"))
	}
	return false
}

// editable reports whether a start tag makes its content editable (contenteditable other
// than "false"): a rich-text editor's content, which it may save back with a lure in it.
func editable(raw []byte) bool {
	const attr = "contenteditable"
	i := -1
	for j := 0; j+len(attr) <= len(raw); j++ {
		if (raw[j] == 'c' || raw[j] == 'C') && bytes.EqualFold(raw[j:j+len(attr)], []byte(attr)) {
			i = j
			break
		}
	}
	if i < 0 {
		return false
	}
	rest := bytes.TrimLeft(raw[i+len(attr):], " \t\n\r\f")
	if !bytes.HasPrefix(rest, []byte("=")) {
		return true
	}
	v := bytes.Trim(bytes.TrimLeft(rest[1:], " \t\n\r\f"), "\"'")
	return len(v) < 5 || !bytes.EqualFold(v[:5], []byte("false"))
}

// eqName reports whether the end tag whose name starts rest is name (any case).
func eqName(rest []byte, name string) bool {
	if len(rest) < len(name) || !bytes.EqualFold(rest[:len(name)], []byte(name)) {
		return false
	}
	if len(rest) == len(name) {
		return true
	}
	switch rest[len(name)] {
	case ' ', '\t', '\n', '\r', '\f', '/', '>':
		return true
	}
	return false
}

// cut reports whether raw ends inside a tag: a '<' with no '>' after it.
func cut(raw []byte) bool {
	return bytes.LastIndexByte(raw, '<') > bytes.LastIndexByte(raw, '>')
}
