package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/wire"
)

// streamRetry is the reconnection delay the stream suggests to clients.
const streamRetry = 3 * time.Second

// streamEvents is GET /api/v1/events/stream: the caller's events as Server-Sent
// Events, resuming after Last-Event-ID (or ?cursor=) with no gap and no repeat.
func (a *API) streamEvents(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "type", "cursor", "since")
	if err != nil {
		return err
	}
	types, err := typesParam(q.Get("type"))
	if err != nil {
		return err
	}
	var last int64
	resume := r.Header.Get("Last-Event-ID")
	field := "Last-Event-ID"
	if resume == "" {
		resume, field = q.Get("cursor"), "cursor"
	}
	if resume != "" {
		if last, err = app.ParseEventCursor(field, resume); err != nil {
			return err
		}
		// Before the stream starts, so the client gets a 410 and not a stream with a hole.
		if err := a.app.CheckEventCursor(r.Context(), field, last, app.RestartStream); err != nil {
			return err
		}
	} else if since, err := timeParam(q, "since"); err != nil {
		return err
	} else if since != nil {
		// A new reader with since replays the events from then on, then follows.
		if last, err = a.app.EventPositionAt(r.Context(), *since); err != nil {
			return err
		}
	} else {
		// A new reader starts at the head of the log, as EventSource expects.
		if last, err = a.app.EventHead(r.Context()); err != nil {
			return err
		}
	}
	release, err := a.app.OpenStream(r.Context())
	if err != nil {
		w.Header().Set("Retry-After", "30")
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")

	// The stream outlives this handler when it can take the connection over: an idle
	// stream is then a socket and a few structures, no goroutine and no HTTP buffers.
	// A taken-over stream learns that its client left when a write fails (at the
	// latest at the next heartbeat); one served through the response writer from the
	// request's context.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	out := newStreamWriter(w)
	finished := make(chan struct{})
	stops := []func() bool{context.AfterFunc(a.opts.Stopping, cancel)}
	end := func(err error) {
		for _, stop := range stops {
			stop()
		}
		cancel()
		out.close()
		release()
		if err != nil {
			a.log.DebugContext(ctx, "event stream ended", "reason", err) // the status is sent; the client resumes
		}
		close(finished)
	}
	if err := out.start(); err != nil {
		end(nil)
		return nil
	}
	if !out.hijacked() {
		stops = append(stops, context.AfterFunc(r.Context(), cancel))
	}
	if err := out.write(fmt.Appendf(nil, "retry: %d\n\n", streamRetry.Milliseconds())); err != nil {
		end(nil)
		return nil
	}
	f := app.Follow{
		Kind:      app.FollowStream,
		Types:     types,
		After:     last,
		Heartbeat: a.opts.Heartbeat,
		Beat: func() error {
			if err := a.app.CredentialStillValid(ctx); err != nil {
				return err
			}
			return out.write([]byte(": keep-alive\n\n"))
		},
	}
	err = a.app.FollowEvents(ctx, f, func(ev *ent.Event) error {
		body, err := json.Marshal(wire.EventOf(ev))
		if err != nil {
			return err
		}
		return out.write(fmt.Appendf(make([]byte, 0, len(body)+64), "id: %s\ndata: %s\n\n", app.EventCursor(ev.Position), body))
	}, end)
	if err != nil {
		end(err)
		return nil
	}
	if !out.hijacked() {
		<-finished // the response writer is only good while this handler runs
	}
	return nil
}

// streamWriter writes an event stream: on the connection itself once taken over from
// the HTTP server (HTTP/1.1), else through the response writer (HTTP/2, tests' recorders).
type streamWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	conn net.Conn // set once hijacked
}

func newStreamWriter(w http.ResponseWriter) *streamWriter {
	return &streamWriter{w: w, rc: http.NewResponseController(w)}
}

// start sends the response head. On HTTP/1.1 it takes the connection over, writes the
// head itself (with the headers the middleware set) and frames the body in chunks,
// as net/http would have.
func (s *streamWriter) start() error {
	if conn, brw, err := s.rc.Hijack(); err == nil {
		if brw.Reader.Buffered() > 0 { // a pipelined request behind ours: it would never be answered
			conn.Close()
			return errors.New("pipelined request on an event stream")
		}
		s.conn = conn
		// The API listener's read timeout stays on the connection it hands over; the stream
		// reads nothing and lives as long as its client: only writes have deadlines (send).
		_ = conn.SetReadDeadline(time.Time{})
		h := s.w.Header().Clone()
		s.w, s.rc = nil, nil // they would keep the HTTP server's buffers for the stream's life
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
		h.Set("Transfer-Encoding", "chunked")
		h.Set("Connection", "close") // the stream ends with the connection
		var head strings.Builder
		head.WriteString("HTTP/1.1 200 OK\r\n")
		_ = h.Write(&head)
		head.WriteString("\r\n")
		return s.send([]byte(head.String()))
	}
	_ = s.rc.SetReadDeadline(time.Time{}) // HTTP/2: the stream outlives the server's read timeout
	s.w.WriteHeader(http.StatusOK)
	return s.rc.Flush()
}

func (s *streamWriter) hijacked() bool { return s.conn != nil }

// write sends one message of the stream, in a chunk of its own once hijacked.
func (s *streamWriter) write(msg []byte) error {
	if s.conn == nil {
		_ = s.rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := s.w.Write(msg); err != nil {
			return err
		}
		return s.rc.Flush()
	}
	chunk := make([]byte, 0, len(msg)+16)
	chunk = strconv.AppendInt(chunk, int64(len(msg)), 16)
	chunk = append(append(append(chunk, "\r\n"...), msg...), "\r\n"...)
	return s.send(chunk)
}

func (s *streamWriter) send(b []byte) error {
	_ = s.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := s.conn.Write(b)
	return err
}

// close ends a hijacked stream: the last chunk, then the connection.
func (s *streamWriter) close() {
	if s.conn != nil {
		_ = s.send([]byte("0\r\n\r\n"))
		_ = s.conn.Close()
	}
}
