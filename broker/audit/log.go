package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/garuda-dev/garuda/broker/homefile"
)

// ErrClosed is returned by Commit and Note after Close.
var ErrClosed = errors.New("audit log closed")

// ErrCorrupt is returned when the last line of the day's file cannot be read, so the next record cannot be chained.
var ErrCorrupt = errors.New("audit log's last record is unreadable")

// Options tune a Log. The zero value is what the broker uses.
type Options struct {
	// Broker is written into every record whose Broker is empty.
	Broker string
	// NoteDelay is how long the background flusher waits to group the fsync of Note records; default 2ms.
	NoteDelay time.Duration
	// Now replaces time.Now (tests).
	Now func() time.Time
}

// Log appends records to <dir>/YYYY-MM-DD.jsonl. It is safe for concurrent use, and several processes may append to
// the same folder at once: each append holds an exclusive flock on the file and chains to the file's last record as
// read under that lock. After a failed fsync every later call fails: what was written since the last good fsync is not
// known to be on disk.
type Log struct {
	dir  string
	opts Options

	mu       sync.Mutex // guards everything below and serializes appends within this process
	cur      *segment
	writeSeq uint64 // number of records written
	syncSeq  uint64 // records known to be on disk
	err      error  // sticky: after a failed fsync nothing written since is known to be on disk
	closed   bool

	// testStalePrev makes appends chain to this Log's own last record instead of the file's (tests only: the
	// negative control showing that several processes break the chain without the re-read under the lock).
	testStalePrev bool
	testLast      string

	syncMu sync.Mutex // one fsync at a time; waiting committers share the next one
	kick   chan struct{}
	done   chan struct{}
}

// segment is one open day file. users counts fsyncs in flight so that a rotation does not close it under them.
type segment struct {
	f       *os.File
	path    string
	users   int
	retired bool
}

// Open opens the audit log in dir (created 0700 when missing). An empty dir means DefaultDir().
func Open(dir string, opts Options) (*Log, error) {
	if dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	if opts.NoteDelay <= 0 {
		opts.NoteDelay = 2 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create audit folder %s: %w", dir, err)
	}
	l := &Log{dir: dir, opts: opts, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go l.flusher()
	return l, nil
}

// DefaultDir is $GARUDA_HOME/audit, or ~/.garuda/audit.
func DefaultDir() (string, error) {
	if h := os.Getenv("GARUDA_HOME"); h != "" {
		return filepath.Join(h, "audit"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the audit folder: %w", err)
	}
	return filepath.Join(home, ".garuda", "audit"), nil
}

// Commit appends r and returns only once it is on disk (fsync). It is for actions that change something: when it
// returns an error the action must not go ahead.
func (l *Log) Commit(r Record) error {
	seq, err := l.append(&r)
	if err != nil {
		return err
	}
	return l.syncUpTo(seq)
}

// Note appends r at once (chained like any record) and leaves the fsync to a background flusher that groups them
// within a few milliseconds. It is for reads and searches.
func (l *Log) Note(r Record) error {
	if _, err := l.append(&r); err != nil {
		return err
	}
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return nil
}

// Close flushes what Note wrote, stops the flusher and closes the file. Later calls fail with ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	seq := l.writeSeq
	l.mu.Unlock()
	close(l.done)
	err := l.syncUpTo(seq)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		l.retire(l.cur)
		l.cur = nil
	}
	return err
}

func (l *Log) flusher() {
	for {
		select {
		case <-l.done:
			return
		case <-l.kick:
		}
		t := time.NewTimer(l.opts.NoteDelay)
		select {
		case <-l.done:
			t.Stop()
			return
		case <-t.C:
		}
		l.mu.Lock()
		seq := l.writeSeq
		l.mu.Unlock()
		_ = l.syncUpTo(seq) // a failure is sticky in l.err and fails the next append
	}
}

// append writes one sealed line to the day's file under the flock and returns its sequence number.
func (l *Log) append(r *Record) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if l.err != nil {
		return 0, l.err
	}
	if r.Time.IsZero() {
		r.Time = l.opts.Now()
	}
	r.Time = r.Time.UTC().Round(0)
	if r.Broker == "" {
		r.Broker = l.opts.Broker
	}
	path := filepath.Join(l.dir, r.Time.Format(time.DateOnly)+".jsonl")
	seg, err := l.lockSegment(path)
	if err != nil {
		return 0, err
	}
	defer homefile.Unlock(seg.f)

	fi, err := seg.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("audit log %s: stat: %w", path, err)
	}
	size := fi.Size()
	// Another broker may have appended since our last record: chain to the file's last record, read under the lock.
	prev, err := lastHash(seg.f, size)
	if err != nil {
		return 0, fmt.Errorf("audit log %s: %w", path, err)
	}
	if l.testStalePrev {
		prev = l.testLast
	}
	r.Prev = prev
	line, err := seal(r)
	if err != nil {
		return 0, err
	}
	if _, err := seg.f.Write(line); err != nil {
		// A torn line would break the chain for every later record: cut the file back to where it was.
		if terr := seg.f.Truncate(size); terr != nil {
			err = errors.Join(err, fmt.Errorf("cut back the torn record: %w", terr))
		}
		return 0, fmt.Errorf("write audit record %q to %s: %w", r.Event, path, err)
	}
	l.testLast = r.Hash
	l.writeSeq++
	return l.writeSeq, nil
}

// lockSegment returns the open file for path with its flock held, reopening when the day changed or when the file
// at path is no longer the one held open (removed, renamed, folder gone). Called with l.mu held.
func (l *Log) lockSegment(path string) (*segment, error) {
	for range 3 {
		if l.cur == nil || l.cur.path != path {
			if err := l.openSegment(path); err != nil {
				return nil, err
			}
		}
		seg := l.cur
		if err := homefile.Lock(seg.f); err != nil {
			return nil, fmt.Errorf("lock audit log %s: %w", path, err)
		}
		// Writing to a file that was removed or replaced would lose the record without an error: check that the
		// file we hold is still the one at path, now that nobody can rotate it under us.
		held, herr := seg.f.Stat()
		onDisk, derr := os.Lstat(path)
		if herr == nil && derr == nil && os.SameFile(held, onDisk) {
			return seg, nil
		}
		homefile.Unlock(seg.f)
		if derr != nil && !errors.Is(derr, os.ErrNotExist) {
			return nil, fmt.Errorf("audit log %s: %w", path, derr)
		}
		if err := l.openSegment(path); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("audit log %s keeps being replaced", path)
}

// openSegment makes path the current segment, retiring the previous one. Called with l.mu held.
func (l *Log) openSegment(path string) error {
	if l.cur != nil {
		// Records of the old file must be on disk before syncSeq can count them as synced by a later fsync.
		if err := l.cur.f.Sync(); err != nil {
			l.err = fmt.Errorf("fsync audit log %s: %w", l.cur.path, err)
			return l.err
		}
		l.syncSeq = l.writeSeq
		l.retire(l.cur)
		l.cur = nil
	}
	// O_NOFOLLOW: a symlink planted in the audit folder must not redirect the log to another file.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|homefile.NoFollow, 0o600)
	if err != nil {
		return fmt.Errorf("open audit log: %w", err)
	}
	l.cur = &segment{f: f, path: path}
	return nil
}

// retire closes seg once no fsync uses it. Called with l.mu held.
func (l *Log) retire(seg *segment) {
	seg.retired = true
	if seg.users == 0 {
		seg.f.Close()
	}
}

// syncUpTo returns once record seq is on disk. Committers that arrive while an fsync runs share the next one.
func (l *Log) syncUpTo(seq uint64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if l.syncSeq >= seq {
		err := l.err
		l.mu.Unlock()
		return err
	}
	if l.err != nil {
		err := l.err
		l.mu.Unlock()
		return err
	}
	seg, upTo := l.cur, l.writeSeq
	if seg == nil {
		l.mu.Unlock()
		return fmt.Errorf("audit log: record %d not synced and no file open", seq)
	}
	seg.users++
	l.mu.Unlock()

	err := seg.f.Sync()

	l.mu.Lock()
	defer l.mu.Unlock()
	seg.users--
	if seg.retired && seg.users == 0 {
		seg.f.Close()
	}
	if err != nil {
		// After a failed fsync the kernel may have dropped the pages: nothing since the last good fsync is known to
		// be on disk, so every later call fails (an action that cannot be audited is not done).
		l.err = fmt.Errorf("fsync audit log %s: %w", seg.path, err)
		return l.err
	}
	if upTo > l.syncSeq {
		l.syncSeq = upTo
	}
	return nil
}

// lastHash reads the hash of the last record of f (size bytes long) from its tail, not the whole file.
func lastHash(f *os.File, size int64) (string, error) {
	if size == 0 {
		return "", nil
	}
	const chunk = 4096
	var tail []byte
	for off := size; ; {
		n := int64(chunk)
		if n > off {
			n = off
		}
		off -= n
		buf := make([]byte, n, int(n)+len(tail))
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read the last record: %w", err)
		}
		tail = append(buf, tail...)
		if tail[len(tail)-1] != '\n' {
			return "", fmt.Errorf("%w: the file does not end with a newline (torn write?); check it with garuda audit verify", ErrCorrupt)
		}
		body := tail[:len(tail)-1]
		if i := bytes.LastIndexByte(body, '\n'); i >= 0 || off == 0 {
			last := body[i+1:]
			var h struct {
				Hash string `json:"hash"`
			}
			if err := json.Unmarshal(last, &h); err != nil || h.Hash == "" {
				return "", fmt.Errorf("%w; check it with garuda audit verify", ErrCorrupt)
			}
			return h.Hash, nil
		}
	}
}
