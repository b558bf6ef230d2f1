package trap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The hit journal: an append-only log of segment files in one directory, owned by one
// process (a lock file). A hit is acknowledged once its record is written (write(2), no
// fsync: the page cache survives a killed process, as SQLite's WAL with
// synchronous=NORMAL does), and applied to the database later, in batches
// (docs/architecture.md, "The hit path"). A segment is removed once every record in it is
// applied; the segments left at start are replayed. docs/decisions.md, "Hits are
// acknowledged once journaled".
//
// A record is its payload's length (4 bytes, little endian), the CRC-32C of the payload
// (4 bytes), then the payload. A reader stops at the first record that is short or whose
// checksum fails: the tail a killed process left half written, never acknowledged.

const (
	journalHeader   = 8
	journalMaxEntry = 1 << 24 // a record's payload at most (a hit is bounded far below)
	journalSuffix   = ".jnl"
	// DefaultJournalSegment is the size past which the journal starts a new segment.
	DefaultJournalSegment = 8 << 20
)

var journalCRC = crc32.MakeTable(crc32.Castagnoli)

// ErrJournalFull is returned when the journal holds its bound of unapplied records: the
// listener sheds the request with a 503, as when the queue is full.
var ErrJournalFull = errors.New("hit journal full")

// segment is one file of the journal and the count of its records still to apply.
type segment struct {
	seq     uint64
	path    string
	f       *os.File // nil once closed
	size    int64
	written int // records in it
	applied int // of which applied
}

// journal is the open journal of one instance.
type journal struct {
	dir    string
	lock   *os.File
	max    int64 // bound on the bytes of every live segment
	segMax int64

	mu         sync.Mutex
	cond       *sync.Cond
	cur        *segment
	live       map[uint64]*segment
	total      int64    // bytes of the live segments
	old        []string // segments left by an earlier run, to replay (in order)
	buf        []byte   // records waiting for the writer
	bufN       int      // how many
	bufSeg     *segment // the segment they go to
	spare      []byte
	writing    bool          // a request is writing (the group's leader)
	writingSeg *segment      // to this segment
	seq        uint64        // records handed to append
	done       uint64        // records whose write returned
	fails      []failedWrite // the latest writes that failed (records not acknowledged)
	broken     bool          // the last write failed: start a new segment before the next
	closed     bool
}

// failedWrite is a write(2) that failed: records from+1 … to were not acknowledged.
type failedWrite struct {
	from, to uint64
	err      error
}

// failure is the error of the failed write that covered record seq, if one did.
func (j *journal) failure(seq uint64) error {
	for _, f := range j.fails {
		if seq > f.from && seq <= f.to {
			return f.err
		}
	}
	return nil
}

// openJournal opens (creating) the journal in dir, taking its lock: an instance owns its
// journal alone. Segments found there are kept for replay (oldSegments).
func openJournal(dir string, limit, segMax int64) (*journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("hit journal (--hit-journal: a writable directory of this instance's own): %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	j := &journal{dir: dir, lock: lock, max: limit, segMax: segMax, live: map[uint64]*segment{}}
	j.cond = sync.NewCond(&j.mu)
	entries, err := os.ReadDir(dir)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("hit journal: %w", err)
	}
	var last uint64
	for _, en := range entries {
		seq, ok := segmentSeq(en.Name())
		if !ok {
			continue
		}
		info, err := en.Info()
		if err != nil {
			lock.Close()
			return nil, fmt.Errorf("hit journal: %w", err)
		}
		j.old = append(j.old, filepath.Join(dir, en.Name()))
		j.total += info.Size()
		last = max(last, seq)
	}
	slices.Sort(j.old) // fixed-width names: in order
	if err := j.rotate(last + 1); err != nil {
		lock.Close()
		return nil, err
	}
	return j, nil
}

func segmentName(seq uint64) string { return fmt.Sprintf("%020d%s", seq, journalSuffix) }

func segmentSeq(name string) (uint64, bool) {
	s, ok := strings.CutSuffix(name, journalSuffix)
	if !ok || len(s) != 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// rotate starts segment seq as the current one; called with mu held and nothing buffered.
// The previous segment is closed now, or by the write in progress to it when it ends.
func (j *journal) rotate(seq uint64) error {
	path := filepath.Join(j.dir, segmentName(seq))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("hit journal: %w", err)
	}
	prev := j.cur
	j.cur = &segment{seq: seq, path: path, f: f}
	j.live[seq] = j.cur
	if prev != nil && prev != j.writingSeg {
		j.closeSegment(prev)
	}
	return nil
}

// closeSegment closes s, no longer written, and removes it if every record in it is applied.
func (j *journal) closeSegment(s *segment) {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	j.release(s)
}

// release removes s once it is closed and every record in it is applied.
func (j *journal) release(s *segment) {
	if s.f != nil || s.applied < s.written {
		return
	}
	delete(j.live, s.seq)
	j.total -= s.size
	_ = os.Remove(s.path) // a segment that stays is replayed and its hits found stored: no harm
}

// append writes one record and returns once write(2) returned, with the segment that
// holds it. Records buffered while another request writes go out together in the next
// write (group commit), made by the first of their requests to find no write in progress:
// each request writes at most one buffer, so none is kept writing for others.
func (j *journal) append(payload []byte) (*segment, error) {
	n := int64(journalHeader + len(payload))
	if len(payload) > journalMaxEntry {
		return nil, fmt.Errorf("hit journal: a record of %d bytes", len(payload))
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, errors.New("hit journal closed")
	}
	if j.total+n > j.max {
		return nil, ErrJournalFull
	}
	if len(j.buf) == 0 {
		if j.broken || j.cur.size >= j.segMax {
			if err := j.rotate(j.cur.seq + 1); err != nil {
				return nil, err
			}
			j.broken = false
		}
		j.bufSeg = j.cur
	}
	j.buf = binary.LittleEndian.AppendUint32(j.buf, uint32(len(payload)))
	j.buf = binary.LittleEndian.AppendUint32(j.buf, crc32.Checksum(payload, journalCRC))
	j.buf = append(j.buf, payload...)
	j.bufN++
	seg := j.bufSeg
	seg.size += n
	seg.written++
	j.total += n
	j.seq++
	mine := j.seq
	for j.done < mine {
		if j.writing {
			j.cond.Wait()
			continue
		}
		j.writing = true
		b, count, upto, ws := j.buf, j.bufN, j.seq, j.bufSeg
		j.buf, j.bufN, j.bufSeg, j.spare = j.spare[:0], 0, nil, nil
		j.writingSeg = ws
		j.mu.Unlock()
		_, werr := ws.f.Write(b)
		j.mu.Lock()
		j.spare = b[:0]
		if werr != nil {
			// The records of this write are not acknowledged; the segment may hold part of
			// them, which a replay would still apply (stored, never counted twice).
			ws.written -= count
			if len(j.fails) == 64 {
				j.fails = j.fails[1:]
			}
			j.fails = append(j.fails, failedWrite{upto - uint64(count), upto, fmt.Errorf("hit journal: %w", werr)})
			j.broken = true
		}
		j.done = upto
		j.writing, j.writingSeg = false, nil
		if ws != j.cur { // rotated while it was written
			j.closeSegment(ws)
		}
		j.cond.Broadcast()
	}
	if err := j.failure(mine); err != nil {
		return nil, err
	}
	return seg, nil
}

// applied notes that n records of s are applied; a closed segment fully applied goes.
func (j *journal) applied(s *segment, n int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	s.applied += n
	j.release(s)
}

// bytes is the size of the live segments.
func (j *journal) bytes() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.total
}

// oldSegments hands over the segments an earlier run left, to replay, once.
func (j *journal) oldSegments() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	old := j.old
	j.old = nil
	return old
}

// replayed removes an earlier run's segment once its records are applied.
func (j *journal) replayed(path string) {
	info, err := os.Stat(path)
	if err != nil {
		return
	}
	if os.Remove(path) == nil {
		j.mu.Lock()
		j.total -= info.Size()
		j.mu.Unlock()
	}
}

// close closes the current segment (removing it when every record is applied) and
// releases the lock.
func (j *journal) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.writing {
		j.cond.Wait()
	}
	j.closed = true
	if j.cur != nil {
		j.closeSegment(j.cur)
	}
	j.lock.Close()
}

// readSegment calls f with each intact record of the segment at path, in order, and stops
// at the first torn or corrupt one (the end of what was written).
func readSegment(path string, f func(payload []byte) error) (torn bool, err error) {
	file, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer file.Close()
	r := bufio.NewReaderSize(file, 1<<16)
	var head [journalHeader]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return err != io.EOF, nil
		}
		n := binary.LittleEndian.Uint32(head[:4])
		if n > journalMaxEntry {
			return true, nil
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return true, nil
		}
		if crc32.Checksum(payload, journalCRC) != binary.LittleEndian.Uint32(head[4:]) {
			return true, nil
		}
		if err := f(payload); err != nil {
			return false, err
		}
	}
}

// OrphanJournals are the directories beside dir whose names differ from dir's only after
// its last '-' (the server's default journals of one database, one per trap address) that
// hold segments and that no process has open: an instance started with another address left
// hits there, which only an instance given that directory applies.
func OrphanJournals(dir string) []string {
	base := filepath.Base(dir)
	i := strings.LastIndexByte(base, '-')
	if i < 0 {
		return nil
	}
	siblings, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), base[:i+1]+"*"))
	var out []string
	for _, s := range siblings {
		if s == dir {
			continue
		}
		if segs, _ := filepath.Glob(filepath.Join(s, "*"+journalSuffix)); len(segs) == 0 {
			continue
		}
		lock, err := lockDir(s)
		if err != nil {
			continue // in use: a running instance's
		}
		lock.Close()
		out = append(out, s)
	}
	return out
}
