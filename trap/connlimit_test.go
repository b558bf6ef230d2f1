package trap_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// The trap listener holds at most --trap-max-conns connections: past the cap a new one
// takes the place of an idle keep-alive connection, or, with none idle, is closed at
// once; the connections it holds are served as before.
func TestTrapListenerConnCap(t *testing.T) {
	const max = 8
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.TrapMaxConns = max })
	env.Tenant("acme")
	addr := env.Trap.Listener.Addr().String()
	conns := env.Server.TrapConns()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	get := func(c net.Conn, br *bufio.Reader) error {
		if _, err := fmt.Fprintf(c, "GET /nothing-here HTTP/1.1\r\nHost: example.com\r\n\r\n"); err != nil {
			return err
		}
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	}

	// max silent connections (a request's headers not begun): a new one is closed at once.
	var silent []net.Conn
	for range max {
		silent = append(silent, dial())
	}
	waitOpen(t, conns.Open, max)
	extra := dial()
	if n, err := extra.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a connection over the cap: read %d, %v; want it closed", n, err)
	}
	// The count may follow the close the client saw (under -race it did): wait for it.
	waitOpen(t, func() int { return int(conns.Refused()) }, 1)
	if conns.Refused() != 1 || conns.Open() != max {
		t.Fatalf("refused %d, open %d", conns.Refused(), conns.Open())
	}
	for _, c := range silent {
		c.Close()
	}
	waitOpen(t, conns.Open, 0)

	// max keep-alive connections idle after a request: a new one replaces one of them.
	idle := make([]net.Conn, max)
	readers := make([]*bufio.Reader, max)
	for i := range idle {
		idle[i] = dial()
		readers[i] = bufio.NewReader(idle[i])
		if err := get(idle[i], readers[i]); err != nil {
			t.Fatal(err)
		}
	}
	c := dial()
	if err := get(c, bufio.NewReader(c)); err != nil {
		t.Fatalf("a new connection at the cap with idle ones: %v", err)
	}
	if conns.Evicted() != 1 || conns.Open() > max {
		t.Fatalf("evicted %d, open %d", conns.Evicted(), conns.Open())
	}
	closed := 0
	for i := range idle {
		_ = idle[i].SetDeadline(time.Now().Add(500 * time.Millisecond)) // the evicted one reads EOF at once
		if _, err := readers[i].ReadByte(); err == io.EOF {
			closed++
		}
	}
	if closed != 1 {
		t.Errorf("%d idle connections closed, want 1", closed)
	}
}

func waitOpen(t *testing.T, open func() int, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for open() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", open(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
