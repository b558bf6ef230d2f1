package decoy

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// A skeleton is a decoy rendered once for its trap with markers where the per-response
// parts go (tokens, challenge numbers, canary phrases, zero-width text): a response of a
// kind whose text is otherwise the trap's own (Kind.skeleton) splices its own values into
// the cached skeleton instead of rendering the page again. It is the same bytes as a full
// render (TestSkeletonEqualsFullRender), made once per trap, spec and minute (the page
// shows relative times and the year).
type skeleton struct {
	status      int
	contentType string
	header      map[string]string
	body        string // with markers: NUL, a kind byte, the placement number, NUL
	slots       []skelSlot
	tags        []string // the zero-width texts, with token markers, before encoding
	// static says, for each possible challenge answer (minAnswer + i), whether the
	// skeleton's own text holds it: a response then shows it whatever is spliced in.
	static [maxAnswer - minAnswer + 1]bool
	values int      // how many markers body has: values spliced into a response
	links  []string // LinkedPaths of every response: the body's, but for paths with a marker
}

type skelSlot struct {
	where   string
	purpose Purpose
	prefix  string
	shape   shape
}

// marker is the skeleton's stand-in for a per-response part of placement n: 'T' its
// token, 'A'/'B' a challenge's numbers in words, 'C' a canary phrase, 'Z' zero-width
// text n. No trap text holds a NUL (clean drops control characters).
func marker(kind byte, n int) string { return string([]byte{0, kind, byte(n), 0}) }

// skeletons are the recent skeletons, by trap, spec and minute.
var skeletons, _ = lru.New[[32]byte, *skeleton](512) // only fails for a size < 1

func skeletonKey(r *renderer) [32]byte {
	h := sha256.New()
	s := r.spec
	for _, f := range []string{s.Type, s.TrapID, s.Title, s.Path, s.Host} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	h.Write([]byte{byte(len(s.Disallow) >> 8), byte(len(s.Disallow))})
	for _, d := range s.Disallow {
		h.Write([]byte(d))
		h.Write([]byte{0})
	}
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(r.now.Truncate(time.Minute).Unix())))
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// skeletonOf returns the skeleton of r's trap, making it if needed.
func skeletonOf(kind *Kind, r *renderer) *skeleton {
	key := skeletonKey(r)
	if sk, ok := skeletons.Get(key); ok {
		return sk
	}
	sk := &skeleton{}
	r.skel = sk
	r.begin(0)
	out := kind.typ.render(r)
	r.skel = nil
	sk.status, sk.contentType, sk.header = out.Status, out.ContentType, out.Header
	sk.body = string(out.Body)
	for rest := sk.body; ; {
		i := strings.IndexByte(rest, 0)
		seg := rest
		if i >= 0 {
			seg = rest[:i]
		}
		for n := minAnswer; n <= maxAnswer; n++ {
			sk.static[n-minAnswer] = sk.static[n-minAnswer] || strings.Contains(seg, strconv.Itoa(n))
		}
		if i < 0 || i+4 > len(rest) {
			break
		}
		sk.values++
		rest = rest[i+4:]
	}
	// A path with a marker carries a per-response value: LinkedPaths leaves out those with
	// a token, and one with another value would differ in every response.
	sk.links = slices.Clip(slices.DeleteFunc(LinkedPaths([]byte(sk.body), nil), func(p string) bool { return strings.IndexByte(p, 0) >= 0 }))
	if sk.links == nil {
		sk.links = []string{}
	}
	skeletons.Add(key, sk)
	return sk
}

// slot records a placement of the skeleton and returns it with a marker for a token.
func (sk *skeleton) slot(r *renderer, idx int, where string, p Purpose, prefix string, sh shape) Placement {
	n := idx - r.base
	sk.slots = append(sk.slots, skelSlot{where, p, prefix, sh})
	pl := Placement{Index: idx, Where: where, Purpose: p, Token: marker('T', n)}
	if prefix != "" {
		pl.URL = prefix + pl.Token
	}
	return pl
}

// tagText appends s as zero-width text (appendTagText), or its marker in a skeleton.
func (r *renderer) tagText(s string) {
	if r.skel != nil {
		r.w(marker('Z', len(r.skel.tags)))
		r.skel.tags = append(r.skel.tags, s)
		return
	}
	r.b = appendTagText(r.b, s)
}

type skelValues struct {
	tok, a, b, phrase, answer string
	sum                       int // the answer's value
}

// fill makes r's response from the skeleton: the values of every placement spliced in,
// with fresh indices (so fresh tokens and numbers) while a challenge's answer would
// stand literally in the text, as Render does.
func (sk *skeleton) fill(r *renderer, withPlaces bool) Rendered {
	var valsOnStack [16]skelValues // a decoy's placements, most of the time: no allocation per response
	vals := valsOnStack[:0]
	if len(sk.slots) > len(valsOnStack) {
		vals = make([]skelValues, 0, len(sk.slots))
	}
	vals = vals[:len(sk.slots)]
	size := len(sk.body) + len(sk.slots)*160 // a token, its URL or phrase, two numbers in words
	for _, t := range sk.tags {
		size += 4 * (len(t) + 80) // tag characters are four bytes each, the token included
	}
	buf, _ := bodies.Get().(*[]byte)
	if buf == nil || cap(*buf) < size {
		b := make([]byte, 0, size)
		buf = &b
	}
	body := (*buf)[:0]
	var spansOnStack [64]int
	spans := spansOnStack[:0]
	if 2*sk.values > len(spansOnStack) {
		spans = make([]int, 0, 2*sk.values)
	}
	for attempt := 0; ; attempt++ {
		base := attempt * attemptStep
		for n, sl := range sk.slots {
			idx := base + n
			v := skelValues{tok: r.m.tokenShaped(&r.ulid, idx, sl.purpose, sl.shape)}
			switch sl.purpose {
			case Challenge:
				a, b := r.m.challengeOperands(&r.ulid, idx, Challenge)
				v.a, v.b, v.answer, v.sum = numberWords(a), numberWords(b), strconv.Itoa(a+b), a+b
			case Canary:
				v.phrase = r.m.canaryPhrase(&r.ulid, idx, Canary, v.tok)
			}
			vals[n] = v
		}
		body, spans = sk.splice(body[:0], sk.body, vals, spans[:0], true)
		shown := false
		for _, v := range vals {
			if v.answer != "" && sk.answerShown(body, spans, v.answer, v.sum) {
				shown = true
				break
			}
		}
		if !shown || attempt == maxAttempts-1 {
			var places []Placement
			if withPlaces || sk.links == nil { // without Links, a caller needs them to find the links
				places = make([]Placement, len(sk.slots))
			}
			for n := range places {
				sl := sk.slots[n]
				places[n] = Placement{Index: base + n, Where: sl.where, Purpose: sl.purpose, Token: vals[n].tok}
				if sl.prefix != "" {
					places[n].URL = sl.prefix + vals[n].tok
				}
			}
			*buf = body
			return Rendered{Status: sk.status, ContentType: sk.contentType, Header: sk.header, Body: body, Placements: places, Links: sk.links, pooled: buf}
		}
	}
}

// answerShown says whether the decimal answer (of value n) stands in body, the skeleton
// spliced with values at spans (start, end pairs): exactly bytes.Contains(body, answer),
// without reading the whole body. An occurrence lies inside the skeleton's own text (static)
// or overlaps a spliced value, so only the bytes around each value are read.
func (sk *skeleton) answerShown(body []byte, spans []int, answer string, n int) bool {
	if n < minAnswer || n > maxAnswer {
		return bytes.Contains(body, []byte(answer))
	}
	if sk.static[n-minAnswer] {
		return true
	}
	l := len(answer)
	for i := 0; i+1 < len(spans); i += 2 {
		lo, hi := max(0, spans[i]-l+1), min(len(body), spans[i+1]+l-1)
		if bytes.Contains(body[lo:hi], []byte(answer)) {
			return true
		}
	}
	return false
}

// spliceTag appends a tag's text src with its markers replaced by vals (a tag holds no
// tag): splice's, without recursion, so a caller's scratch buffer stays on its stack.
func spliceTag(dst []byte, src string, vals []skelValues) []byte {
	for {
		i := strings.IndexByte(src, 0)
		if i < 0 || i+3 >= len(src) {
			return append(dst, src...)
		}
		dst = append(dst, src[:i]...)
		kind, n := src[i+1], int(src[i+2])
		src = src[i+4:]
		switch kind {
		case 'T':
			dst = append(dst, vals[n].tok...)
		case 'A':
			dst = append(dst, vals[n].a...)
		case 'B':
			dst = append(dst, vals[n].b...)
		case 'C':
			dst = append(dst, vals[n].phrase...)
		}
	}
}

// splice appends src with its markers replaced by vals; if track, it appends to spans the
// start and end in dst of each value it puts in.
func (sk *skeleton) splice(dst []byte, src string, vals []skelValues, spans []int, track bool) ([]byte, []int) {
	for {
		i := strings.IndexByte(src, 0)
		if i < 0 || i+3 >= len(src) {
			return append(dst, src...), spans
		}
		dst = append(dst, src[:i]...)
		kind, n := src[i+1], int(src[i+2])
		src = src[i+4:]
		start := len(dst)
		switch kind {
		case 'T':
			dst = append(dst, vals[n].tok...)
		case 'A':
			dst = append(dst, vals[n].a...)
		case 'B':
			dst = append(dst, vals[n].b...)
		case 'C':
			dst = append(dst, vals[n].phrase...)
		case 'Z':
			var scratch [256]byte // a tag's text with its token, most of the time: no allocation
			tag := spliceTag(scratch[:0], sk.tags[n], vals)
			dst = appendTagText(dst, tag)
		}
		if track {
			spans = append(spans, start, len(dst))
		}
	}
}
