package sessionlog

import (
	"bufio"
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

// Kinds of entries.
const (
	KindPrompt     = "prompt"
	KindMessage    = "message"
	KindToolCall   = "tool_call"
	KindToolResult = "tool_result"
	KindStop       = "stop"
	KindMode       = "mode"
	// KindHeader is the first line of a session file the broker creates: whose it is and on which root.
	KindHeader = "session"
	// KindTitle is the session's title; the broker keeps the newest in the sidecar that ListSessions reads.
	KindTitle = "title"
)

var (
	// ErrBadID is returned for a session id that is not [A-Za-z0-9_-]{1,128}.
	ErrBadID = homefile.ErrBadID
	// ErrClosed is returned by Append after Close.
	ErrClosed = errors.New("session file closed")
	// ErrFull is returned by Append for an entry that would take the file past MaxFileSize.
	ErrFull = errors.New("session file full")
)

// MaxFileSize bounds one session's file: defends $GARUDA_HOME's disk against a front end that records without end.
const MaxFileSize = 256 << 20

// validKind keeps kinds short identifiers ([a-z][a-z0-9_]{0,31}) so that a reader can switch on them.
func validKind[T string | []byte](k T) bool {
	if len(k) == 0 || len(k) > 32 || k[0] < 'a' || k[0] > 'z' {
		return false
	}
	for i := 1; i < len(k); i++ {
		if c := k[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// ValidID reports whether id may name a session file.
func ValidID(id string) error {
	if !homefile.ValidID(id) {
		return fmt.Errorf("session id %q: %w", id, ErrBadID)
	}
	return nil
}

// Entry is one line of a session file.
type Entry struct {
	Time time.Time       `json:"time"`
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Writer appends to one session's file. It is safe for concurrent use.
type Writer struct {
	dir, id string
	now     func() time.Time
	limit   int64

	hdr    *Header // written as the first line when the file is created; nil: no header (tests)
	tornAt int64   // > 0: the file ends in a torn line from this offset, cut before the next append
	mu     sync.Mutex
	f      *os.File
	size   int64 // bytes in the file
	closed bool

	metaWritten bool // the sidecar was written (a new session's: at its title, else at Close)
}

// Open returns a writer for <dir>/<sessionID>.jsonl. Nothing is created before the first Append; an invalid id
// makes every Append fail with ErrBadID.
func Open(dir string, sessionID string) *Writer {
	return &Writer{dir: dir, id: sessionID, now: time.Now, limit: MaxFileSize}
}

// Create is Open for a new session of the broker's: the file, created at the first Append, begins with hdr and
// is locked while the writer is open, so that no other process loads the session meanwhile.
func Create(dir, sessionID string, hdr Header) *Writer {
	w := Open(dir, sessionID)
	hdr.Version = FormatVersion
	w.hdr = &hdr
	return w
}

// Path is the session file's path.
func (w *Writer) Path() string { return filepath.Join(w.dir, w.id+".jsonl") }

// Append writes one line {"time":...,"kind":...,"data":...}. data must be valid JSON (or empty); it is compacted onto
// the line. Each line is one write to the file, not fsynced; Close fsyncs.
func (w *Writer) Append(kind string, data json.RawMessage) error {
	if err := ValidID(w.id); err != nil {
		return err
	}
	if !validKind(kind) {
		return fmt.Errorf("session %s: entry kind %q is not a short lower-case name", w.id, kind)
	}
	var compact bytes.Buffer
	if len(data) > 0 {
		// Compacting drops the newlines JSON allows between tokens: one entry, one line.
		if err := json.Compact(&compact, data); err != nil {
			return fmt.Errorf("session %s: %s entry: data is not valid JSON: %w", w.id, kind, err)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	line, err := json.Marshal(Entry{Time: w.now().UTC(), Kind: kind, Data: compact.Bytes()})
	if err != nil {
		return fmt.Errorf("session %s: encode %s entry: %w", w.id, kind, err)
	}
	if w.f == nil {
		if err := w.create(); err != nil {
			return err
		}
	}
	if w.tornAt > 0 {
		// What a crash left of a last line is cut, so that the new line does not continue it.
		if err := w.f.Truncate(w.tornAt); err != nil {
			return fmt.Errorf("cut the torn end of session file %s: %w", w.Path(), err)
		}
		w.size, w.tornAt = w.tornAt, 0
	}
	line = append(line, '\n')
	if w.size+int64(len(line)) > w.limit {
		return fmt.Errorf("session %s: a %s entry of %d bytes would take the file past %d MiB; it is not kept: %w",
			w.id, kind, len(line), w.limit>>20, ErrFull)
	}
	n, err := w.f.Write(line)
	w.size += int64(n)
	if err != nil {
		return fmt.Errorf("write session file %s: %w", w.Path(), err)
	}
	if kind == KindTitle && w.hdr != nil {
		var title string
		if json.Unmarshal(compact.Bytes(), &title) == nil {
			w.hdr.Title = title
			w.writeMeta()
		}
	}
	return nil
}

// create opens the file at the first Append: a new session's file is created exclusively, locked, and begins with
// its header; w.mu is held.
func (w *Writer) create() error {
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return fmt.Errorf("create the sessions folder: %w", err)
	}
	flags := os.O_WRONLY | os.O_APPEND | os.O_CREATE | homefile.NoFollow
	if w.hdr != nil {
		flags |= os.O_EXCL // a minted id names no file yet; an existing one is not this session's
	}
	// O_NOFOLLOW: a symlink planted in the sessions folder must not redirect the write.
	f, err := os.OpenFile(w.Path(), flags, 0o600)
	if err != nil {
		return fmt.Errorf("open session file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open session file: %w", err)
	}
	w.f, w.size = f, fi.Size()
	if w.hdr == nil {
		return nil
	}
	if err := homefile.TryLock(f); err != nil {
		f.Close()
		w.f = nil
		return fmt.Errorf("lock session file %s: %w", w.Path(), err)
	}
	hdr, _ := json.Marshal(w.hdr)
	line, _ := json.Marshal(Entry{Time: w.now().UTC(), Kind: KindHeader, Data: hdr})
	n, err := f.Write(append(line, '\n'))
	w.size += int64(n)
	if err != nil {
		return fmt.Errorf("write session file %s: %w", w.Path(), err)
	}
	// No sidecar yet: until the title comes (with the first prompt) it would say what the header line says, and
	// ListSessions reads that line when there is none. Close writes one for a session that never got a title. Here it
	// cost a file's creation, two fsyncs and a rename beside the first prompt's broker calls (0.3–2 ms of the broker's
	// CPU where ext4 has no journal and looks through the recently deleted inodes at each creation).
	return nil
}

// writeMeta replaces the sidecar <id>.meta.json that ListSessions reads instead of the whole file. Only a cache: a
// missing or broken one is rebuilt from the file's header (without the title).
func (w *Writer) writeMeta() {
	b, _ := json.Marshal(w.hdr)
	homefile.WriteAtomic(filepath.Join(w.dir, w.id+metaSuffix), b, 0o600)
	w.metaWritten = true
}

// Close fsyncs and closes the file (if one was created). Later Appends fail with ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.f == nil {
		return nil
	}
	if w.hdr != nil && !w.metaWritten {
		w.writeMeta()
	}
	err := w.f.Sync()
	homefile.Unlock(w.f)
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("close session file %s: %w", w.Path(), err)
	}
	return nil
}

// Read returns the entries of a session file. On a broken line it returns the entries before it and an error naming
// the line (a torn last line is what a crash leaves).
func Read(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read session file: %w", err)
	}
	defer f.Close()
	rd := bufio.NewReaderSize(f, 64<<10)
	var out []Entry
	for n := 1; ; n++ {
		line, rerr := rd.ReadBytes('\n')
		if len(line) == 0 && errors.Is(rerr, io.EOF) {
			return out, nil
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return out, fmt.Errorf("read session file %s: line %d: %w", path, n, rerr)
		}
		if rerr != nil {
			return out, fmt.Errorf("read session file %s: line %d: incomplete (no newline at the end)", path, n)
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return out, fmt.Errorf("read session file %s: line %d: %w", path, n, err)
		}
		out = append(out, e)
	}
}
