package sessionlog

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/garuda-dev/garuda/broker/homefile"
)

// FormatVersion is the version of the session file format written in each header.
const FormatVersion = 1

// metaSuffix names the sidecar of a session file: its header and title, for listing without reading the file.
const metaSuffix = ".meta.json"

var (
	// ErrNotFound: no session file of that id.
	ErrNotFound = errors.New("no such session")
	// ErrLocked: another open session (another garuda acp) holds the file.
	ErrLocked = errors.New("the session is open in another garuda acp")
	// ErrForeign: the file belongs to another user or another root.
	ErrForeign = errors.New("the session belongs to another user or project")
	// ErrCorrupt: the file is not a session file Garuda can read (hand-edited, cut short, or of another program).
	ErrCorrupt = errors.New("the session file cannot be read")
)

// Header is the first line of a session file.
type Header struct {
	Version int    `json:"version"`
	Root    string `json:"root"`
	UID     uint32 `json:"uid"`
	// Title is kept in the sidecar only (the header line is written before the first prompt).
	Title string `json:"title,omitempty"`
}

// Loaded is a session file opened to go on with: its header, its entries after the header (read again from the file
// by Each, so that a long session is never held whole in memory), and a writer that appends to it.
type Loaded struct {
	Writer *Writer
	Header Header
	// Torn is set when the file ended in a torn line (what a crash leaves): it was read up to the last whole line.
	Torn string

	f     *os.File
	whole int64 // the file's length up to its last whole line, as Load checked it
}

// Each calls fn with each entry (its own copy) after the header, in order, up to the last whole line Load checked (an append
// made since is not read), and stops at fn's first error. The file was checked whole by Load: a read that fails
// here is an I/O error.
func (l *Loaded) Each(fn func(Entry) error) error {
	first := true
	_, err := scan(io.NewSectionReader(l.f, 0, l.whole), func(e Entry) error {
		if first {
			first = false
			return nil
		}
		e.Data = bytes.Clone(e.Data)
		return fn(e)
	})
	return err
}

// Load opens the file of session id to go on with it, as uid on root. It checks first that the header names uid and
// root (defends against loading another user's session or another project's through a shared broker), then locks
// the file (a session open in another process is refused with ErrLocked) and reads it whole. Nothing on disk changes unless the
// returned writer appends (a torn last line is then cut first).
func Load(dir, id string, uid uint32, root string) (*Loaded, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, id+".jsonl")
	// O_NOFOLLOW: a symlink planted in the sessions folder must not make another file a session.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|homefile.NoFollow, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("session %s: open its file: %w: %v", id, ErrCorrupt, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("session %s: %s is not a regular file: %w", id, path, ErrCorrupt)
	}
	// The header alone decides whose session it is, before the file is locked or read further: defends against a
	// shared broker answering for another user's session by what it holds (a broken line, its size, its owner having
	// it open) and taking its owner's lock meanwhile.
	hdr, err := checkHeader(f, id, path, uid, root)
	if err != nil {
		return nil, err
	}
	if err := homefile.TryLock(f); err != nil {
		if errors.Is(err, homefile.ErrLocked) {
			return nil, fmt.Errorf("session %s: %w; close it there first", id, ErrLocked)
		}
		return nil, fmt.Errorf("session %s: lock its file: %w", id, err)
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("session %s: the file is %d bytes, past the %d MiB limit: %w", id, fi.Size(), MaxFileSize>>20, ErrCorrupt)
	}
	// The whole file is checked here, line by line, keeping nothing: a file that is not a session file is refused
	// before anything of it is sent, and a long one is never held in memory.
	whole, err := scan(io.NewSectionReader(f, 0, fi.Size()), func(Entry) error { return nil })
	var bad *lineError
	switch {
	case errors.As(err, &bad):
		return nil, fmt.Errorf("session %s: %s: %w: %v (changed by something other than Garuda? remove or mend that "+
			"line to resume it, or start a new session: the file is left as it is)", id, path, ErrCorrupt, err)
	case err != nil:
		return nil, fmt.Errorf("session %s: read its file: %w", id, err)
	}
	l := &Loaded{Header: hdr, f: f, whole: whole}
	w := &Writer{dir: dir, id: id, now: time.Now, limit: MaxFileSize, hdr: &hdr, f: f, size: fi.Size()}
	if whole < fi.Size() {
		w.tornAt = whole
		l.Torn = fmt.Sprintf("the session file ended in a torn line (%d bytes, what a crash leaves); "+
			"it was read up to the last whole entry", fi.Size()-whole)
	}
	l.Writer = w
	ok = true
	return l, nil
}

// maxHeaderLine bounds the first line read to check a session file's header before anything else of it.
const maxHeaderLine = 64 << 10

// errHeaderRead stops the scan of a file's first line.
var errHeaderRead = errors.New("header read")

// checkHeader reads the first line of f alone and returns its header: refused unless it names uid and root and is
// one this Garuda writes.
func checkHeader(f *os.File, id, path string, uid uint32, root string) (Header, error) {
	var hdr *Header
	_, err := scan(io.NewSectionReader(f, 0, maxHeaderLine), func(e Entry) error {
		var h Header
		if e.Kind == KindHeader && json.Unmarshal(e.Data, &h) == nil {
			hdr = &h
		}
		return errHeaderRead
	})
	switch {
	case hdr == nil && err != nil && !errors.Is(err, errHeaderRead):
		var bad *lineError
		if !errors.As(err, &bad) {
			return Header{}, fmt.Errorf("session %s: read its file: %w", id, err)
		}
		fallthrough
	case hdr == nil:
		return Header{}, fmt.Errorf("session %s: %s has no Garuda session header (an older or foreign file): %w", id, path, ErrCorrupt)
	case hdr.UID != uid:
		return Header{}, fmt.Errorf("session %s belongs to another user: %w", id, ErrForeign)
	case filepath.Clean(hdr.Root) != filepath.Clean(root):
		return Header{}, fmt.Errorf("session %s belongs to the project %s, not %s; open it from there: %w", id, hdr.Root, root, ErrForeign)
	case hdr.Version != FormatVersion || hdr.Root == "":
		return Header{}, fmt.Errorf("session %s: %s: the header is not one this Garuda writes: %w", id, path, ErrCorrupt)
	}
	return *hdr, nil
}

// lineError is a line of a session file that is not an entry.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }

// scan reads the lines of a session file from r and calls fn with each entry, stopping at fn's first error; an
// entry's Data is valid only during its call. A last line without its newline is left out (whole is where it
// begins); any other line that is not an entry is a *lineError naming it.
func scan(r io.Reader, fn func(Entry) error) (whole int64, err error) {
	rd := bufio.NewReaderSize(r, 64<<10)
	var long []byte // a line longer than the reader's buffer, put together
	for n := 1; ; n++ {
		line, rerr := rd.ReadSlice('\n')
		for rerr == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for rerr == bufio.ErrBufferFull {
				line, rerr = rd.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if rerr == io.EOF {
			return whole, nil // a last line without its newline (or none) is torn: left out
		}
		if rerr != nil {
			return whole, rerr
		}
		e, ok := quickEntry(line[:len(line)-1])
		if !ok {
			// Not as the writer writes it: the slow way, which names what is wrong.
			if err := json.Unmarshal(line, &e); err != nil || !validKind(e.Kind) {
				if err == nil {
					err = fmt.Errorf("kind %q", e.Kind)
				}
				return whole, &lineError{n, err}
			}
		}
		if err := fn(e); err != nil {
			return whole, err
		}
		whole += int64(len(line))
	}
}

// quickEntry reads a line exactly as Append writes it, {"time":"…","kind":"…","data":…}, without decoding the
// data beyond checking that it is one JSON value.
func quickEntry(line []byte) (Entry, bool) {
	var e Entry
	rest, ok := bytes.CutPrefix(line, []byte(`{"time":"`))
	if !ok {
		return e, false
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return e, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:i]))
	if err != nil {
		return e, false
	}
	rest, ok = bytes.CutPrefix(rest[i:], []byte(`","kind":"`))
	if !ok {
		return e, false
	}
	if i = bytes.IndexByte(rest, '"'); i < 0 || !validKind(rest[:i]) {
		return e, false
	}
	e.Time, e.Kind = t, string(rest[:i])
	rest = rest[i+1:]
	if string(rest) == "}" {
		return e, true
	}
	data, ok := bytes.CutPrefix(rest, []byte(`,"data":`))
	if !ok || len(data) < 2 || data[len(data)-1] != '}' || !json.Valid(data[:len(data)-1]) {
		return e, false
	}
	e.Data = data[:len(data)-1]
	return e, true
}

// Summary is one session in a listing.
type Summary struct {
	ID      string
	Root    string
	Title   string
	Updated time.Time
}

// List returns uid's sessions on root (every root when root is empty), newest first, at most limit of them after
// cursor (an opaque string from the previous page; empty for the first), and the cursor of the next page ("" when
// there is none). It reads each file's sidecar, not the file.
func List(dir string, uid uint32, root string, cursor string, limit int) ([]Summary, string, error) {
	after, err := parseCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	des, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("list the sessions folder: %w", err)
	}
	var all []Summary
	var infos []os.FileInfo
	for _, de := range des {
		name := de.Name()
		id, isLog := strings.CutSuffix(name, ".jsonl")
		if !isLog || !de.Type().IsRegular() || ValidID(id) != nil {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue
		}
		hdr, ok := readMeta(dir, id)
		if !ok || hdr.UID != uid || (root != "" && filepath.Clean(hdr.Root) != filepath.Clean(root)) {
			continue
		}
		all = append(all, Summary{ID: id, Root: hdr.Root, Title: hdr.Title, Updated: fi.ModTime()})
		infos = append(infos, fi)
	}
	preciseTimes(dir, all, infos)
	sort.Slice(all, func(i, j int) bool { return less(all[i], all[j]) })
	start := 0
	if after != nil {
		start = sort.Search(len(all), func(i int) bool { return less(*after, all[i]) })
	}
	page := all[start:]
	next := ""
	if len(page) > limit {
		page = page[:limit]
		next = makeCursor(page[len(page)-1])
	}
	return page, next, nil
}

// nearTie is how close two modification times must be for List to read the files' last entries to order them:
// some file systems keep modification times to a few milliseconds only.
const nearTie = 50 * time.Millisecond

// preciseTimes replaces the modification time of the sessions whose times are near another's with the time of
// their last entry, so that one open per file is the rule and two sessions written close together still come in
// their order.
func preciseTimes(dir string, all []Summary, infos []os.FileInfo) {
	idx := make([]int, len(all))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return all[idx[a]].Updated.Before(all[idx[b]].Updated) })
	near := make([]bool, len(all))
	for k := 1; k < len(idx); k++ {
		if all[idx[k]].Updated.Sub(all[idx[k-1]].Updated) < nearTie {
			near[idx[k]], near[idx[k-1]] = true, true
		}
	}
	for i, n := range near {
		if n {
			all[i].Updated = lastTime(filepath.Join(dir, all[i].ID+".jsonl"), infos[i])
		}
	}
}

// less orders newest first, then by id.
func less(a, b Summary) bool {
	if !a.Updated.Equal(b.Updated) {
		return a.Updated.After(b.Updated)
	}
	return a.ID < b.ID
}

func makeCursor(s Summary) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(s.Updated.UnixNano(), 10) + ":" + s.ID))
}

func parseCursor(c string) (*Summary, error) {
	if c == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	ns, id, found := strings.Cut(string(b), ":")
	n, nerr := strconv.ParseInt(ns, 10, 64)
	if err != nil || !found || nerr != nil || ValidID(id) != nil {
		return nil, fmt.Errorf("cursor %q is not one a listing gave: %w", c, ErrBadCursor)
	}
	return &Summary{ID: id, Updated: time.Unix(0, n)}, nil
}

// ErrBadCursor: a listing cursor that no listing gave.
var ErrBadCursor = errors.New("invalid cursor")

// readMeta reads a session's sidecar, or else the header line of its file (a sidecar is only a cache).
func readMeta(dir, id string) (Header, bool) {
	var hdr Header
	if b, err := readSmall(filepath.Join(dir, id+metaSuffix), 64<<10); err == nil && json.Unmarshal(b, &hdr) == nil && hdr.Root != "" {
		return hdr, true
	}
	b, err := readSmall(filepath.Join(dir, id+".jsonl"), 64<<10)
	if err != nil {
		return hdr, false
	}
	line, _, found := bytes.Cut(b, []byte("\n"))
	var e Entry
	if !found || json.Unmarshal(line, &e) != nil || e.Kind != KindHeader || json.Unmarshal(e.Data, &hdr) != nil || hdr.Root == "" {
		return hdr, false
	}
	return hdr, true
}

// lastTime is the time of a file's last entry, read from its end; else its modification time (which some file
// systems keep to a few milliseconds only).
func lastTime(path string, fi os.FileInfo) time.Time {
	f, err := os.OpenFile(path, os.O_RDONLY|homefile.NoFollow, 0)
	if err != nil {
		return fi.ModTime()
	}
	defer f.Close()
	const tail = 4 << 10
	off := max(fi.Size()-tail, 0)
	buf := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(buf, off)
	buf = bytes.TrimRight(buf[:n], "\n")
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		buf = buf[i+1:]
	}
	// The time is the line's first field: the line need not be whole to the end.
	var e struct {
		Time time.Time `json:"time"`
	}
	if json.Unmarshal(buf, &e) != nil || e.Time.IsZero() {
		if t, ok := leadingTime(buf); ok {
			return t
		}
		return fi.ModTime()
	}
	return e.Time
}

// leadingTime reads the time of a line that begins {"time":"...", as the writer puts it.
func leadingTime(line []byte) (time.Time, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"time":"`))
	if !ok {
		return time.Time{}, false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:end]))
	return t, err == nil
}

// readSmall reads at most max bytes of a file, refusing a symlink.
func readSmall(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|homefile.NoFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}
