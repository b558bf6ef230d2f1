package fingerprint

import (
	"context"
	"encoding/binary"
	"strconv"
	"strings"

	"golang.org/x/net/http2/hpack"
)

// MaxSniff is the most bytes of a connection examined for its HTTP fingerprints: the
// client's first request head (HTTP/1), or its preface, SETTINGS, WINDOW_UPDATE,
// PRIORITY and first HEADERS frames (HTTP/2). A connection whose first request does not
// fit carries no HTTP fingerprint.
const MaxSniff = 16 << 10

// Conn is what one connection proved of its client. JA4 is set at its TLS handshake;
// H2 and Order as the bytes of its first request are read (Feed), which happens before
// the server parses that request: a handler sees them complete. They are not changed
// afterwards, so a handler may read them without a lock.
type Conn struct {
	JA4   string // the ClientHello's JA4; "" over plain HTTP
	H2    string // HTTP/2 fingerprint (Akamai's format: SETTINGS|WINDOW_UPDATE|PRIORITY|pseudo-headers)
	Order string // the first request's header-order fingerprint (HeaderOrder)

	done   bool
	sealed bool // the connection's own bytes are TLS records: FeedPlain ignores them
	plain  bool // fed by FeedPlain: HTTP/1 only (the plain listener serves no HTTP/2)
	s      *sniff
}

// Sealed marks the connection as carrying TLS: its plain reads (FeedPlain) are records,
// not the client's request; the TLS connection over it feeds what it decrypts.
func (c *Conn) Sealed() { c.sealed = true }

// FeedPlain is Feed for the bytes of the connection itself, unless it is Sealed.
// A plain connection is HTTP/1 only: a "PRI * HTTP/2.0" head there is an HTTP/1
// request like any other (net/http refuses it), never HTTP/2 frames to decode.
func (c *Conn) FeedPlain(p []byte) {
	if !c.sealed {
		c.plain = true
		c.Feed(p)
	}
}

// Holder is a connection that carries its fingerprints (the trap listener's).
type Holder interface{ Fingerprints() *Conn }

type ctxKey struct{}

// NewContext is ctx carrying c, for the requests of c's connection.
func NewContext(ctx context.Context, c *Conn) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// FromContext is the connection fingerprints ctx carries, or nil.
func FromContext(ctx context.Context) *Conn {
	c, _ := ctx.Value(ctxKey{}).(*Conn)
	return c
}

// The states of an HTTP/1 head being read.
const (
	h1RequestLine = iota
	h1LineStart
	h1LineCR
	h1Name
	h1Value
	h2Frames
)

// sniff is a connection's reading state until its fingerprints are complete.
type sniff struct {
	seen  int
	state int
	line  [16]byte // the request line's start: "PRI * HTTP/2.0" begins HTTP/2
	lineN int
	names nameHash
	buf   []byte // HTTP/2: the bytes after the preface's request line, until the first HEADERS
	need  int    // HTTP/2: the length of buf at which the next frame is complete
}

// nameHash is a running FNV-1a over header names, comma-separated, with their count.
type nameHash struct {
	h uint64
	n int
}

const fnvOffset, fnvPrime = 14695981039346656037, 1099511628211

func (h *nameHash) start() {
	if h.n == 0 && h.h == 0 {
		h.h = fnvOffset
	}
	if h.n > 0 {
		h.byte(',')
	}
	h.n++
}

func (h *nameHash) byte(c byte) { h.h = (h.h ^ uint64(c)) * fnvPrime }

// fp is the header-order fingerprint: protocol, count, and 12 hex digits of the hash.
func (h *nameHash) fp(proto string) string {
	if h.n == 0 {
		h.h = fnvOffset
	}
	var b [17]byte
	s := append(b[:0], proto...)
	s = appendCount(s, h.n)
	s = append(s, '_')
	const digits = "0123456789abcdef"
	for i := 11; i >= 0; i-- {
		s = append(s, digits[h.h>>(uint(i)*4)&0xf])
	}
	return string(s)
}

// HeaderOrder is the header-order fingerprint of header names in the order a client sent
// them (case kept: HTTP/1 clients differ in it): "h1" or "h2", their count (two digits,
// at most 99), "_", and 12 hex digits of FNV-1a over the names joined by commas. It is
// Flytrap's own (not JA4H, which is not free for commercial use).
func HeaderOrder(proto string, names []string) string {
	var h nameHash
	for _, n := range names {
		h.start()
		for i := 0; i < len(n); i++ {
			h.byte(n[i])
		}
	}
	return h.fp(proto)
}

// Feed examines p, bytes the client sent (decrypted), in order; it never changes them.
// It stops for good once the fingerprints are complete or MaxSniff bytes were seen.
func (c *Conn) Feed(p []byte) {
	if c.done || len(p) == 0 {
		return
	}
	if c.s == nil {
		c.s = &sniff{}
	}
	s := c.s
	if s.seen+len(p) > MaxSniff {
		p = p[:MaxSniff-s.seen]
		defer c.finish() // whatever was complete by then is kept
	}
	s.seen += len(p)
	if s.state == h2Frames {
		c.frames(p)
		return
	}
	for i := 0; i < len(p); i++ {
		ch := p[i]
		switch s.state {
		case h1RequestLine:
			if ch == '\n' {
				s.state = h1LineStart
			} else if s.lineN < len(s.line) {
				s.line[s.lineN] = ch
				s.lineN++
			}
		case h1LineStart, h1LineCR:
			switch {
			case ch == '\r' && s.state == h1LineStart:
				s.state = h1LineCR
			case ch == '\n': // the blank line: the head is complete
				if !c.plain && string(s.line[:s.lineN]) == "PRI * HTTP/2.0\r" {
					s.state = h2Frames
					c.frames(p[i+1:])
					return
				}
				c.Order = s.names.fp("h1")
				c.finish()
				return
			default:
				s.names.start()
				s.names.byte(ch)
				s.state = h1Name
			}
		case h1Name:
			switch ch {
			case ':':
				s.state = h1Value
			case '\n':
				s.state = h1LineStart
			default:
				s.names.byte(ch)
			}
		case h1Value:
			if ch == '\n' {
				s.state = h1LineStart
			}
		}
	}
}

func (c *Conn) finish() {
	c.done, c.s = true, nil
}

// h2 is an HTTP/2 connection's frames read before its first HEADERS.
type h2 struct {
	settings  []byte // "id:value;…"
	window    uint32
	priority  []byte // "stream:exclusive:dependency:weight,…"
	nPriority int
	block     []byte // the first HEADERS' header block, across CONTINUATIONs
}

const (
	frameHeaders      = 0x1
	framePriority     = 0x2
	frameSettings     = 0x4
	frameWindowUpdate = 0x8
	frameContinuation = 0x9

	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20
	flagAck        = 0x1

	maxPriorityFrames = 8
	maxSettings       = 16
)

var clientPrefaceEnd = []byte("SM\r\n\r\n")

// frames reads the frames in p, after what earlier calls left in the buffer.
func (c *Conn) frames(p []byte) {
	s := c.s
	s.buf = append(s.buf, p...)
	b := s.buf
	if len(b) < max(s.need, len(clientPrefaceEnd)) {
		return // nothing new is complete: a client sending a byte at a time costs no re-read
	}
	if string(b[:len(clientPrefaceEnd)]) != string(clientPrefaceEnd) {
		c.finish()
		return
	}
	b = b[len(clientPrefaceEnd):]
	var st h2
	settingsSeen := false
	defer func() {
		if len(b) < 9 && c.s != nil {
			c.s.need = len(c.s.buf) - len(b) + 9
		}
	}()
	frames := 0
	for len(b) >= 9 {
		// Real clients send a handful of frames before their first HEADERS (SETTINGS,
		// WINDOW_UPDATE, a few PRIORITY); each completed frame re-reads the buffer, so
		// thousands of empty ones trickled in would cost a quadratic re-read: give up.
		if frames++; frames > maxFramesBeforeHeaders {
			c.finish()
			return
		}
		n := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
		typ, flags, stream := b[3], b[4], binary.BigEndian.Uint32(b[5:9])&0x7fffffff
		if len(b) < 9+n {
			s.need = len(s.buf) - len(b) + 9 + n // read again from the start once it is complete
			return
		}
		payload := b[9 : 9+n]
		b = b[9+n:]
		switch typ {
		case frameSettings:
			if flags&flagAck != 0 || settingsSeen || stream != 0 {
				continue
			}
			settingsSeen = true
			for i := 0; i+6 <= len(payload) && i/6 < maxSettings; i += 6 {
				if len(st.settings) > 0 {
					st.settings = append(st.settings, ';')
				}
				st.settings = strconv.AppendUint(st.settings, uint64(binary.BigEndian.Uint16(payload[i:])), 10)
				st.settings = append(st.settings, ':')
				st.settings = strconv.AppendUint(st.settings, uint64(binary.BigEndian.Uint32(payload[i+2:])), 10)
			}
		case frameWindowUpdate:
			if stream == 0 && st.window == 0 && len(payload) == 4 {
				st.window = binary.BigEndian.Uint32(payload) & 0x7fffffff
			}
		case framePriority:
			if len(payload) == 5 && st.nPriority < maxPriorityFrames {
				if st.nPriority > 0 {
					st.priority = append(st.priority, ',')
				}
				st.nPriority++
				dep := binary.BigEndian.Uint32(payload)
				st.priority = strconv.AppendUint(st.priority, uint64(stream), 10)
				st.priority = append(st.priority, ':')
				st.priority = strconv.AppendUint(st.priority, uint64(dep>>31), 10)
				st.priority = append(st.priority, ':')
				st.priority = strconv.AppendUint(st.priority, uint64(dep&0x7fffffff), 10)
				st.priority = append(st.priority, ':')
				st.priority = strconv.AppendUint(st.priority, uint64(payload[4])+1, 10)
			}
		case frameHeaders, frameContinuation:
			if typ == frameHeaders {
				if st.block != nil {
					c.finish()
					return
				}
				if flags&flagPadded != 0 {
					if len(payload) < 1 || int(payload[0]) > len(payload)-1 {
						c.finish()
						return
					}
					payload = payload[1 : len(payload)-int(payload[0])]
				}
				if flags&flagPriority != 0 {
					if len(payload) < 5 {
						c.finish()
						return
					}
					payload = payload[5:]
				}
				st.block = append(make([]byte, 0, len(payload)), payload...)
			} else if st.block == nil {
				c.finish()
				return
			} else {
				st.block = append(st.block, payload...)
			}
			if flags&flagEndHeaders != 0 {
				c.headers(&st)
				c.finish()
				return
			}
		}
	}
}

// maxFramesBeforeHeaders is how many frames the fingerprint reads before the first HEADERS.
const maxFramesBeforeHeaders = 64

// maxOrderFields is how many header fields of the first HEADERS block the fingerprint reads.
const maxOrderFields = 100

// headers completes the HTTP/2 fingerprint from the first HEADERS block: its
// pseudo-header order, and the order of its other header names.
func (c *Conn) headers(st *h2) {
	var pseudo []byte
	var names nameHash
	// A block can name one long header thousands of times (an indexed field is one byte):
	// the names hashed stop at maxOrderFields fields or MaxSniff bytes, past which the
	// count saturates anyway.
	fields, nameBytes := 0, 0
	var d *hpack.Decoder
	d = hpack.NewDecoder(4096, func(f hpack.HeaderField) {
		if fields++; fields > maxOrderFields || nameBytes+len(f.Name) > MaxSniff {
			d.SetEmitEnabled(false)
			return
		}
		nameBytes += len(f.Name)
		if strings.HasPrefix(f.Name, ":") && len(f.Name) > 1 {
			if len(pseudo) < 16 {
				if len(pseudo) > 0 {
					pseudo = append(pseudo, ',')
				}
				pseudo = append(pseudo, f.Name[1])
			}
			return
		}
		names.start()
		for i := 0; i < len(f.Name); i++ {
			names.byte(f.Name[i])
		}
	})
	d.SetMaxStringLength(MaxSniff)
	if _, err := d.Write(st.block); err != nil {
		return
	}
	if err := d.Close(); err != nil {
		return
	}
	b := make([]byte, 0, len(st.settings)+len(st.priority)+len(pseudo)+16)
	b = append(b, st.settings...)
	b = append(b, '|')
	if st.window == 0 {
		b = append(b, '0', '0')
	} else {
		b = strconv.AppendUint(b, uint64(st.window), 10)
	}
	b = append(b, '|')
	if len(st.priority) == 0 {
		b = append(b, '0')
	} else {
		b = append(b, st.priority...)
	}
	b = append(b, '|')
	b = append(b, pseudo...)
	if len(b) > MaxH2 {
		b = b[:MaxH2]
	}
	c.H2, c.Order = string(b), names.fp("h2")
}

// MaxH2 is the longest HTTP/2 fingerprint kept (the hit's column).
const MaxH2 = 256
