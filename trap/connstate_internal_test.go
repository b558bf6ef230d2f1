package trap

import (
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// layer is a connection over another that names it, as TLS's and HTTP/2's do.
type layer struct{ net.Conn }

func (l layer) NetConn() net.Conn { return l.Conn }

// ConnState finds the capped connection under HTTPS's layers (TLS, and HTTP/2 over it), so
// an idle HTTPS connection can make room as a plain one does.
func TestConnStateUnderLayers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	l := LimitListener(ln, 4, slog.New(slog.DiscardHandler))
	wrapped := WrapListener(l)
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			time.Sleep(time.Second)
		}
	}()
	c, err := wrapped.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	over := layer{layer{c}} // HTTP/2 over TLS over ours
	ConnState(over, http.StateIdle)
	l.mu.Lock()
	idle := len(l.idle)
	l.mu.Unlock()
	if idle != 1 {
		t.Fatalf("%d idle connections after an idle HTTPS one, want 1", idle)
	}
	ConnState(over, http.StateActive)
	l.mu.Lock()
	idle = len(l.idle)
	l.mu.Unlock()
	if idle != 0 {
		t.Fatalf("%d idle connections after it turned active, want 0", idle)
	}
}
