package trap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/record"
)

//go:generate go run ../internal/genjournal

// The journal's record of a hit, in a compact binary form: encoding/json's reflection was
// 4 % of the listener's CPU per hit (docs/benchmarks.md, "CPU per hit"), and the record is
// written on every request, read only at replay. It is journalBinary, how many types it
// counts and how many fields of each it holds (layoutFields), the hit's own fields, then the fields of
// its observation and token references in their declaration order
// (journalcodec_gen.go, which internal/genjournal writes from the types: a field added to
// detect.Observation is journaled by go generate): strings and lists as a uvarint length
// then their bytes or items, numbers as varints, a list or map as its length + 1 (0: nil,
// so a nil and an empty one read back as they were written), a time and an address in
// their AppendBinary forms. A record written before a field was added holds fewer fields
// and reads back with the new ones zero; genjournal keeps fields append-only
// (journallayout.txt). Records of the first binary layout (journalBinaryV1, no field
// counts) and JSON records of the version before it (they begin with '{') are still read.

const (
	journalBinary   = 0xB2 // first byte of a binary record (never '{')
	journalBinaryV1 = 0xB1 // the first binary layout: the field counts were layoutV1, unwritten
)

// layoutV1 is what every record of the first binary layout holds.
var layoutV1 = layout{18, 10, 5} // Observation, TokenUse, TokenRef

var errJournalShort = errors.New("a journal record cut short")

// payloads are the buffers records are encoded into; the journal copies a record into its
// own buffer before append returns.
var payloads = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStrings(b []byte, l []string) []byte {
	if l == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(l))+1)
	for _, s := range l {
		b = appendString(b, s)
	}
	return b
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendAddr appends an address as its length (0, 4, 16 or more with a zone) then its
// AppendBinary form.
func appendAddr(b []byte, a netip.Addr) ([]byte, error) {
	n := len(b)
	b = append(b, 0)
	b, err := a.AppendBinary(b)
	b[n] = byte(len(b) - n - 1)
	return b, err
}

func appendHeaders(b []byte, h map[string][]string) []byte {
	if h == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(h))+1)
	for k, vs := range h {
		b = appendString(b, k)
		b = appendStrings(b, vs)
	}
	return b
}

func appendTime(b []byte, t time.Time) ([]byte, error) {
	n := len(b)
	b = append(b, 0)
	b, err := t.AppendBinary(b)
	b[n] = byte(len(b) - n - 1) // 15 or 16 bytes
	return b, err
}

// appendEntry appends the binary record of a hit and its tokens: its first byte, the
// number of fields it holds of each type (layoutFields), the hit's own fields, its
// observation and its token references.
func appendEntry(b []byte, h *record.Hit, refs []decoy.TokenRef) ([]byte, error) {
	b = append(b, journalBinary, byte(len(layoutFields)))
	for _, n := range layoutFields {
		b = binary.AppendUvarint(b, uint64(n))
	}
	b = appendString(b, h.ID)
	b = appendString(b, h.Org)
	b = appendString(b, h.Site)
	b = binary.AppendVarint(b, int64(h.Status))
	b = appendBool(b, h.Truncated)
	b, err := appendObservation(b, &h.Observation)
	if err != nil {
		return nil, err
	}
	if refs == nil {
		return append(b, 0), nil
	}
	b = binary.AppendUvarint(b, uint64(len(refs))+1)
	for i := range refs {
		if b, err = appendTokenRef(b, &refs[i]); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// entryReader reads a binary record; the first failure sticks (err).
type entryReader struct {
	b      []byte
	err    error
	fields layout // how many fields of each type the record holds
}

func (r *entryReader) fail() {
	if r.err == nil {
		r.err = errJournalShort
	}
	r.b = nil
}

func (r *entryReader) byte() byte {
	if len(r.b) < 1 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *entryReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *entryReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *entryReader) bytes(n uint64) []byte {
	if uint64(len(r.b)) < n {
		r.fail()
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *entryReader) string() string { return string(r.bytes(r.uvarint())) }

// count is a list's length + 1 as written (0: nil), bounded by the bytes left: each item
// takes at least one.
func (r *entryReader) count() (n int, isNil bool) {
	c := r.uvarint()
	if c == 0 {
		return 0, true
	}
	if c-1 > uint64(len(r.b)) {
		r.fail()
		return 0, true
	}
	return int(c - 1), false
}

func (r *entryReader) strings() []string {
	n, isNil := r.count()
	if isNil {
		return nil
	}
	l := make([]string, n)
	for i := range l {
		l[i] = r.string()
	}
	return l
}

func (r *entryReader) addr() netip.Addr {
	var a netip.Addr
	if err := a.UnmarshalBinary(r.bytes(uint64(r.byte()))); err != nil && r.err == nil {
		r.err = err
	}
	return a
}

func (r *entryReader) headers() map[string][]string {
	n, isNil := r.count()
	if isNil {
		return nil
	}
	h := make(map[string][]string, n)
	for range n {
		k := r.string()
		h[k] = r.strings()
	}
	return h
}

func (r *entryReader) time() time.Time {
	var t time.Time
	if err := t.UnmarshalBinary(r.bytes(uint64(r.byte()))); err != nil && r.err == nil {
		r.err = err
	}
	return t
}

// readEntry reads what appendEntry wrote, or a record of the first binary layout.
func readEntry(p []byte) (*record.Hit, []decoy.TokenRef, error) {
	r := &entryReader{b: p}
	switch r.byte() {
	case journalBinary:
		// A record written before a type was journaled counts fewer types: it holds none of
		// the newer ones (they came with fields it does not have).
		types := int(r.byte())
		if types > len(layoutFields) {
			return nil, nil, fmt.Errorf("a journal record written by a newer version (%d journaled types, this version knows %d)", types, len(layoutFields))
		}
		for i := range types {
			r.fields[i] = int(min(r.uvarint(), 1<<16))
			if r.fields[i] > layoutFields[i] {
				return nil, nil, fmt.Errorf("a journal record written by a newer version (%d fields of %s, this version knows %d)",
					r.fields[i], journalTypes[i], layoutFields[i])
			}
		}
	case journalBinaryV1:
		r.fields = layoutV1
	default:
		return nil, nil, errors.New("not a binary journal record")
	}
	h := &record.Hit{}
	h.ID, h.Org, h.Site = r.string(), r.string(), r.string()
	h.Status = int(r.varint())
	h.Truncated = r.byte() == 1
	r.observation(&h.Observation)
	var refs []decoy.TokenRef
	if n, isNil := r.count(); !isNil {
		refs = make([]decoy.TokenRef, n)
		for i := range refs {
			r.tokenRef(&refs[i])
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errors.New("a journal record with bytes past its end")
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	return h, refs, nil
}
