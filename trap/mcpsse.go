package trap

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/flytrap/flytrap/internal/clientnet"
)

// The legacy MCP transport (HTTP+SSE, protocol 2024-11-05), so older MCP clients reach
// the decoy tools: a GET of the MCP trap with Accept: text/event-stream opens a stream
// whose first event, "endpoint", names the trap's path with a session token
// (?sessionId=…); JSON-RPC posted there is answered 202 and its responses are sent as
// "message" events on the stream. A GET that carries Mcp-Session-Id or
// MCP-Protocol-Version comes from a Streamable HTTP client and gets 405, as from a
// server without a standalone stream. Streams are bounded: MaxMCPStreams in all,
// MaxMCPStreamsPerSite per site, MaxMCPStreamsPerNet per network (IPv4 /24, IPv6 /48),
// MaxMCPStreamsPerAddr per client (an IPv4 address, an IPv6 /64: ClientPrefix),
// MCPStreamLifetime each, ended after Config.MCPStreamIdle without a posted message, and
// maxMCPStreamMessages posted to one; a client too slow to take its messages is cut off.
// So no one client, network or site's visitors can hold every stream of the instance.
// A session lives on the instance that opened it: behind several instances, legacy
// clients need sticky routing (as with every legacy SSE MCP server).

// Bounds of legacy MCP streams.
const (
	MaxMCPStreams         = 64
	MaxMCPStreamsPerSite  = 32
	MaxMCPStreamsPerNet   = 16
	MaxMCPStreamsPerAddr  = 4
	MCPStreamLifetime     = 5 * time.Minute
	DefaultMCPStreamIdle  = time.Minute
	mcpStreamPing         = 15 * time.Second
	maxMCPStreamMessages  = 256
	mcpStreamQueue        = 32
	mcpStreamWriteTimeout = 10 * time.Second
)

// mcpStream is one open legacy MCP stream.
type mcpStream struct {
	id, site  string
	addr, net netip.Prefix  // ClientPrefix and networkPrefix of its client
	out       chan []byte   // JSON-RPC messages to send
	posted    chan struct{} // a message was posted: the stream is not idle
	posts     int           // messages posted so far (under mcpStreams.mu)
	gone      chan struct{}
	once      sync.Once
}

func (s *mcpStream) close() { s.once.Do(func() { close(s.gone) }) }

// mcpStreams are the open streams of this instance, counted per site, network and client.
type mcpStreams struct {
	mu     sync.Mutex
	byID   map[string]*mcpStream
	bySite map[string]int
	byNet  map[netip.Prefix]int
	byAddr map[netip.Prefix]int
}

func newMCPStreams() *mcpStreams {
	return &mcpStreams{byID: map[string]*mcpStream{}, bySite: map[string]int{}, byNet: map[netip.Prefix]int{}, byAddr: map[netip.Prefix]int{}}
}

// open reserves a stream for a client at ip of site, or nil when a bound is reached.
func (m *mcpStreams) open(site string, ip netip.Addr) *mcpStream {
	var b [16]byte
	_, _ = rand.Read(b[:])
	s := &mcpStream{id: hex.EncodeToString(b[:]), site: site, addr: ClientPrefix(ip), net: clientnet.Of(ip),
		out: make(chan []byte, mcpStreamQueue), posted: make(chan struct{}, 1), gone: make(chan struct{})}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.byID) >= MaxMCPStreams || m.bySite[site] >= MaxMCPStreamsPerSite ||
		m.byNet[s.net] >= MaxMCPStreamsPerNet || m.byAddr[s.addr] >= MaxMCPStreamsPerAddr {
		return nil
	}
	m.byID[s.id] = s
	m.bySite[site]++
	m.byNet[s.net]++
	m.byAddr[s.addr]++
	return s
}

func (m *mcpStreams) release(s *mcpStream) {
	s.close()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID[s.id] == s {
		delete(m.byID, s.id)
		decrement(m.bySite, s.site)
		decrement(m.byNet, s.net)
		decrement(m.byAddr, s.addr)
	}
}

func decrement[K comparable](m map[K]int, k K) {
	if m[k]--; m[k] <= 0 {
		delete(m, k)
	}
}

// post finds the open stream id of site for a posted message, counting the message;
// nil when there is none or it took its share.
func (m *mcpStreams) post(site, id string) *mcpStream {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.byID[id]
	if s == nil || s.site != site || s.posts >= maxMCPStreamMessages {
		return nil
	}
	s.posts++
	select {
	case s.posted <- struct{}{}:
	default:
	}
	return s
}

// count is the number of open streams.
func (m *mcpStreams) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byID)
}

// wantsLegacySSE reports whether a GET of an MCP trap asks for the legacy SSE stream.
func wantsLegacySSE(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// streamableGET reports whether an SSE GET comes from a Streamable HTTP client (which
// sends its session or protocol version): it gets 405, not a legacy stream.
func streamableGET(r *http.Request) bool {
	return r.Header.Get("Mcp-Session-Id") != "" || r.Header.Get("Mcp-Protocol-Version") != ""
}

// deliver queues the JSON-RPC response(s) of a posted message on its stream; a batch is
// sent as one message event per response. A stream whose client does not keep up is closed.
func (s *mcpStream) deliver(body []byte) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return
	}
	msgs := [][]byte{body}
	if body[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(body, &batch) == nil {
			msgs = msgs[:0]
			for _, m := range batch {
				msgs = append(msgs, m)
			}
		}
	}
	for _, m := range msgs {
		var c bytes.Buffer
		if json.Compact(&c, m) != nil {
			continue
		}
		select {
		case s.out <- c.Bytes():
		case <-s.gone:
			return
		default:
			s.close() // too slow a reader: cut it off rather than hold its messages
			return
		}
	}
}

// serveMCPStream writes a legacy MCP stream until the client leaves, the stream's
// lifetime ends, it is closed, or the engine stops.
func (e *Engine) serveMCPStream(w http.ResponseWriter, r *http.Request, s *mcpStream, endpoint string) {
	defer e.mcp.release(s)
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{}) // the listener's read timeout would end the stream
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(mcpStreamWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write([]byte("event: endpoint\ndata: " + endpoint + "\n\n")) {
		return
	}
	life := time.NewTimer(MCPStreamLifetime)
	defer life.Stop()
	idleFor := e.cfg.MCPStreamIdle
	if idleFor <= 0 {
		idleFor = DefaultMCPStreamIdle
	}
	idle := time.NewTimer(idleFor) // a client that opened a stream and posts nothing frees it
	defer idle.Stop()
	ping := time.NewTicker(mcpStreamPing)
	defer ping.Stop()
	for {
		select {
		case m := <-s.out:
			if !write(append(append([]byte("event: message\ndata: "), m...), "\n\n"...)) {
				return
			}
		case <-ping.C:
			if !write([]byte(": ping\n\n")) {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.gone:
			return
		case <-s.posted:
			idle.Reset(idleFor)
		case <-idle.C:
			return
		case <-life.C:
			return
		case <-e.done:
			return
		}
	}
}
