// Package gather holds a connection's writes while one response is written and sends them
// in one write: the trap listener's plain connections (trap's nginxConn) and its TLS ones
// (traptls.Conn, one TLS record) each embed a Writes.
package gather

import (
	"net"
	"sync"
)

// MaxKept: a larger held buffer is not kept for reuse.
const MaxKept = 64 << 10

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// Writes is what a connection gathers while held; the zero value holds nothing. Only the
// goroutine serving the connection's request may Hold and Release it (net/http writes an
// HTTP/1 response from there).
type Writes struct {
	held *[]byte
}

// Hold starts gathering.
func (w *Writes) Hold() { w.held = buffers.Get().(*[]byte) }

// Holding reports whether writes are being gathered.
func (w *Writes) Holding() bool { return w.held != nil }

// Gather keeps p if the connection is held, and reports whether it did.
func (w *Writes) Gather(p []byte) bool {
	if w.held == nil {
		return false
	}
	*w.held = append(*w.held, p...)
	return true
}

// Release sends what was gathered since Hold to c in one write (none if nothing was). If
// that write fails c is closed, as net/http closes a connection whose write failed: a
// response cut short must not be followed by another on it.
func (w *Writes) Release(c net.Conn) error {
	b := w.held
	w.held = nil
	if b == nil {
		return nil
	}
	var err error
	if len(*b) > 0 {
		if _, err = c.Write(*b); err != nil {
			_ = c.Close()
		}
	}
	if cap(*b) <= MaxKept {
		*b = (*b)[:0]
		buffers.Put(b)
	}
	return err
}
