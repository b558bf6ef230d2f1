package trap

import (
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/record"
)

// The journal's record of a hit, in a compact binary form: encoding/json's reflection was
// 4 % of the listener's CPU per hit (docs/benchmarks.md, "CPU per hit"), and the record is
// written on every request, read only at replay. It is journalBinary, then the fields of
// journalEntry in a fixed order (appendEntry): strings and lists as a uvarint length then
// their bytes or items, numbers as varints, a list or map as its length + 1 (0: nil, so a
// nil and an empty one read back as they were written), a time and an address in their
// AppendBinary forms. Records written as JSON by an earlier version (they begin with '{')
// are still read. TestJournalCodecCoversEveryField fails when one of the encoded types
// gains a field this file does not write.

const journalBinary = 0xB1 // first byte of a binary record (never '{')

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

func appendTime(b []byte, t time.Time) ([]byte, error) {
	n := len(b)
	b = append(b, 0)
	b, err := t.AppendBinary(b)
	b[n] = byte(len(b) - n - 1) // 15 or 16 bytes
	return b, err
}

// appendEntry appends the binary record of a hit and its tokens.
func appendEntry(b []byte, h *record.Hit, refs []decoy.TokenRef) ([]byte, error) {
	b = append(b, journalBinary)
	b = appendString(b, h.ID)
	b = appendString(b, h.Org)
	b = appendString(b, h.Site)
	b = binary.AppendVarint(b, int64(h.Status))
	b = appendBool(b, h.Truncated)
	o := &h.Observation
	b, err := appendTime(b, o.At)
	if err != nil {
		return nil, err
	}
	for _, s := range [...]string{o.Method, o.Host, o.Path, o.Query, o.Body} {
		b = appendString(b, s)
	}
	if o.Headers == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(o.Headers))+1)
		for k, vs := range o.Headers {
			b = appendString(b, k)
			b = appendStrings(b, vs)
		}
	}
	n := len(b)
	b = append(b, 0)
	if b, err = o.IP.AppendBinary(b); err != nil {
		return nil, err
	}
	b[n] = byte(len(b) - n - 1) // 0, 4, 16 or more (a zone)
	for _, s := range [...]string{o.UA, o.Kind, o.TrapID, o.TrapType} {
		b = appendString(b, s)
	}
	if o.Tokens == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(o.Tokens))+1)
		for _, t := range o.Tokens {
			b = append(b, byte(t.Use))
			b = appendString(b, t.SourceHit)
			if b, err = appendTime(b, t.SourceAt); err != nil {
				return nil, err
			}
			b = appendString(b, t.Placement)
			b = appendBool(b, t.Answered)
			b = appendString(b, t.Answer)
			b = appendString(b, t.Secret)
			b = appendBool(b, t.Visible)
			b = appendBool(b, t.Lure)
			b = appendString(b, t.Carrier)
		}
	}
	b = appendString(b, o.Tool)
	b = appendString(b, o.ToolArgs)
	b = appendStrings(b, o.Disallow)
	b = appendStrings(b, o.Linked)
	b = appendStrings(b, o.Known)
	if refs == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(refs))+1)
		for _, r := range refs {
			b = appendString(b, r.HitID)
			b = binary.AppendVarint(b, int64(r.Index))
			b = append(b, byte(r.Purpose), byte(r.Origin))
			b = appendString(b, r.TrapID)
		}
	}
	// The signature fact last, and only when there is one: a record of an unsigned hit
	// reads as the records written before it existed, and those read as unsigned.
	if o.Signature != (detect.Signature{}) {
		b = append(b, byte(o.Signature.State))
		for _, s := range [...]string{o.Signature.Agent, o.Signature.KeyID, o.Signature.Reason} {
			b = appendString(b, s)
		}
	}
	return b, nil
}

// entryReader reads a binary record; the first failure sticks (err).
type entryReader struct {
	b   []byte
	err error
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

func (r *entryReader) time() time.Time {
	var t time.Time
	if err := t.UnmarshalBinary(r.bytes(uint64(r.byte()))); err != nil && r.err == nil {
		r.err = err
	}
	return t
}

// readEntry reads what appendEntry wrote.
func readEntry(p []byte) (*record.Hit, []decoy.TokenRef, error) {
	r := &entryReader{b: p}
	if r.byte() != journalBinary {
		return nil, nil, errors.New("not a binary journal record")
	}
	h := &record.Hit{}
	h.ID, h.Org, h.Site = r.string(), r.string(), r.string()
	h.Status = int(r.varint())
	h.Truncated = r.byte() == 1
	o := &h.Observation
	o.At = r.time()
	o.Method, o.Host, o.Path, o.Query, o.Body = r.string(), r.string(), r.string(), r.string(), r.string()
	if n, isNil := r.count(); !isNil {
		o.Headers = make(map[string][]string, n)
		for range n {
			k := r.string()
			o.Headers[k] = r.strings()
		}
	}
	if err := o.IP.UnmarshalBinary(r.bytes(uint64(r.byte()))); err != nil && r.err == nil {
		r.err = err
	}
	o.UA, o.Kind, o.TrapID, o.TrapType = r.string(), r.string(), r.string(), r.string()
	if n, isNil := r.count(); !isNil {
		o.Tokens = make([]detect.TokenUse, n)
		for i := range o.Tokens {
			t := &o.Tokens[i]
			t.Use = detect.Use(r.byte())
			t.SourceHit = r.string()
			t.SourceAt = r.time()
			t.Placement = r.string()
			t.Answered = r.byte() == 1
			t.Answer, t.Secret = r.string(), r.string()
			t.Visible, t.Lure = r.byte() == 1, r.byte() == 1
			t.Carrier = r.string()
		}
	}
	o.Tool, o.ToolArgs = r.string(), r.string()
	o.Disallow, o.Linked, o.Known = r.strings(), r.strings(), r.strings()
	var refs []decoy.TokenRef
	if n, isNil := r.count(); !isNil {
		refs = make([]decoy.TokenRef, n)
		for i := range refs {
			ref := &refs[i]
			ref.HitID = r.string()
			ref.Index = int(r.varint())
			ref.Purpose, ref.Origin = decoy.Purpose(r.byte()), decoy.Origin(r.byte())
			ref.TrapID = r.string()
		}
	}
	if r.err == nil && len(r.b) != 0 {
		o.Signature.State = detect.SignatureState(r.byte())
		o.Signature.Agent, o.Signature.KeyID, o.Signature.Reason = r.string(), r.string(), r.string()
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errors.New("a journal record with bytes past its end")
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	return h, refs, nil
}
