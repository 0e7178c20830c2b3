package undo

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/garuda-dev/garuda/broker/conffile"
	"github.com/garuda-dev/garuda/broker/homefile"
	"github.com/garuda-dev/garuda/internal/strictjson"
)

var (
	// ErrNothing is returned by Undo when the session has no change left to undo.
	ErrNothing = errors.New("nothing to undo")
	// ErrChanged is matched (errors.Is) by the error Undo returns when the file changed since Garuda wrote it.
	ErrChanged = errors.New("changed since Garuda wrote it; undo refused")
	// ErrBadSession is returned for a session id that is not [A-Za-z0-9_-]{1,128}.
	ErrBadSession = homefile.ErrBadID
)

// Entry is one snapshot: the file at Path before Garuda wrote it (Existed, OldSHA256) and what the write produced
// (NewSHA256). Hashes are hex sha256.
type Entry struct {
	ID        string    `json:"id"`
	Session   string    `json:"session"`
	Time      time.Time `json:"time"`
	Path      string    `json:"path"`
	Existed   bool      `json:"existed"`
	Size      int64     `json:"size"`
	OldSHA256 string    `json:"old_sha256,omitempty"`
	NewSHA256 string    `json:"new_sha256"`
}

// Store keeps snapshots under its folder: <dir>/<session>/index.json and one <id>.pre file per pre-image. It is safe
// for concurrent use, also by several processes (each change of a session's index holds a flock).
type Store struct {
	dir string
	mu  sync.Mutex // flock is per open file: goroutines of one process also need a lock
	now func() time.Time
}

// Open returns the store in dir ($GARUDA_HOME/undo). Folders are created at the first Snapshot.
func Open(dir string) *Store { return &Store{dir: dir, now: time.Now} }

type changedError struct{ path string }

func (e *changedError) Error() string        { return e.path + " " + ErrChanged.Error() }
func (e *changedError) Is(target error) bool { return target == ErrChanged }

// Snapshot records the pre-image of abs (old, or existed=false when the write creates the file) and the sha256 of
// what the write produces. Call it before the write; the write must not go ahead when it fails.
func (s *Store) Snapshot(session, abs string, old []byte, existed bool, newHash [32]byte) (id string, err error) {
	if !homefile.ValidID(session) {
		return "", fmt.Errorf("undo snapshot %q: %w", session, ErrBadSession)
	}
	if !filepath.IsAbs(abs) || filepath.Clean(abs) != abs {
		return "", fmt.Errorf("undo snapshot of %q: path is not absolute and clean", abs)
	}
	if !existed && len(old) > 0 {
		return "", fmt.Errorf("undo snapshot of %s: content given for a file that did not exist", abs)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	e := Entry{ID: hex.EncodeToString(rnd[:]), Session: session, Time: s.now().UTC(), Path: abs, Existed: existed,
		Size: int64(len(old)), NewSHA256: hex.EncodeToString(newHash[:])}
	sdir := filepath.Join(s.dir, session)
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		return "", fmt.Errorf("undo snapshot of %s: %w", abs, err)
	}
	if existed {
		sum := sha256.Sum256(old)
		e.OldSHA256 = hex.EncodeToString(sum[:])
		if err := homefile.WriteAtomic(filepath.Join(sdir, e.ID+".pre"), old, 0o600); err != nil {
			return "", fmt.Errorf("undo snapshot of %s: %w", abs, err)
		}
	}
	err = s.locked(session, func(idx []Entry) ([]Entry, error) {
		idx = append(idx, e)
		// The oldest snapshots past the bound are forgotten, their pre-images removed: a long session's history
		// neither fills the disk nor makes every write rewrite an ever longer index.
		if over := len(idx) - maxEntries; over > 0 {
			for _, old := range idx[:over] {
				os.Remove(filepath.Join(sdir, old.ID+".pre"))
			}
			idx = slices.Delete(idx, 0, over)
		}
		return idx, nil
	})
	if err != nil {
		os.Remove(filepath.Join(sdir, e.ID+".pre"))
		return "", fmt.Errorf("undo snapshot of %s: %w", abs, err)
	}
	return e.ID, nil
}

// Drop forgets snapshot id of session, for a write that did not happen after its Snapshot.
func (s *Store) Drop(session, id string) error {
	if !homefile.ValidID(session) {
		return fmt.Errorf("undo drop %q: %w", session, ErrBadSession)
	}
	return s.locked(session, func(idx []Entry) ([]Entry, error) {
		i := slices.IndexFunc(idx, func(e Entry) bool { return e.ID == id })
		if i < 0 {
			return nil, fmt.Errorf("undo drop: no snapshot %q in session %s", id, session)
		}
		os.Remove(filepath.Join(s.dir, session, id+".pre"))
		return slices.Delete(idx, i, i+1), nil
	})
}

// List returns the session's snapshots, newest first. A session with none gives an empty list.
func (s *Store) List(session string) ([]Entry, error) {
	if !homefile.ValidID(session) {
		return nil, fmt.Errorf("undo list %q: %w", session, ErrBadSession)
	}
	idx, err := s.load(session)
	if err != nil {
		return nil, err
	}
	slices.Reverse(idx)
	return idx, nil
}

// Sessions returns the ids of the sessions that have something to undo, the most recently changed first.
func (s *Store) Sessions() ([]string, error) {
	des, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list undo sessions: %w", err)
	}
	type sess struct {
		id   string
		last time.Time
	}
	var ss []sess
	for _, de := range des {
		if !de.IsDir() || !homefile.ValidID(de.Name()) {
			continue
		}
		idx, err := s.load(de.Name())
		if err != nil {
			return nil, err
		}
		if len(idx) > 0 {
			ss = append(ss, sess{de.Name(), idx[len(idx)-1].Time})
		}
	}
	slices.SortStableFunc(ss, func(a, b sess) int { return b.last.Compare(a.last) })
	out := make([]string, len(ss))
	for i, x := range ss {
		out[i] = x.id
	}
	return out, nil
}

// Undo restores the session's last change through write (content, or existed=false: delete the file) after
// checking with current that the file still holds what Garuda wrote; otherwise it refuses with an error matching
// ErrChanged and keeps the snapshot. A file that already holds its pre-image (the write never happened, or a crash
// after an earlier restore) is not written again; its entry is dropped and returned. The file I/O is the caller's,
// through the confined file operations.
func (s *Store) Undo(session string, write func(abs string, content []byte, existed bool) error,
	current func(abs string) (hash [32]byte, exists bool, err error)) (*Entry, error) {
	if !homefile.ValidID(session) {
		return nil, fmt.Errorf("undo %q: %w", session, ErrBadSession)
	}
	var done *Entry
	err := s.locked(session, func(idx []Entry) ([]Entry, error) {
		if len(idx) == 0 {
			return nil, fmt.Errorf("session %s: %w", session, ErrNothing)
		}
		e := idx[len(idx)-1]
		hash, exists, err := current(e.Path)
		if err != nil {
			return nil, fmt.Errorf("undo %s: read the current file: %w", e.Path, err)
		}
		cur := hex.EncodeToString(hash[:])
		blob := filepath.Join(s.dir, session, e.ID+".pre")
		switch {
		case exists && cur == e.NewSHA256:
			var old []byte
			if e.Existed {
				// A pre-image altered in the store must not be written into the project.
				old, err = os.ReadFile(blob)
				if err != nil {
					return nil, fmt.Errorf("undo %s: read the snapshot: %w", e.Path, err)
				}
				if sum := sha256.Sum256(old); hex.EncodeToString(sum[:]) != e.OldSHA256 {
					return nil, fmt.Errorf("undo %s: snapshot %s is damaged (hash mismatch)", e.Path, blob)
				}
			}
			if err := write(e.Path, old, e.Existed); err != nil {
				return nil, fmt.Errorf("undo %s: %w", e.Path, err)
			}
		case exists == e.Existed && (!exists || cur == e.OldSHA256):
			// Already the pre-image: nothing to write.
		default:
			// Restoring over someone else's later edit would destroy it.
			return nil, &changedError{e.Path}
		}
		os.Remove(blob)
		done = &e
		return idx[:len(idx)-1], nil
	})
	if err != nil {
		return nil, err
	}
	return done, nil
}

// locked runs f on the session's index under the in-process mutex and the session's flock, and saves what f returns.
func (s *Store) locked(session string, f func([]Entry) ([]Entry, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sdir := filepath.Join(s.dir, session)
	lf, err := os.OpenFile(filepath.Join(sdir, ".lock"), os.O_RDWR|os.O_CREATE|homefile.NoFollow, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		// No folder: nothing was ever snapshotted in this session.
		_, ferr := f(nil)
		if ferr == nil {
			return fmt.Errorf("session %s: %w", session, ErrNothing)
		}
		return ferr
	}
	if err != nil {
		return fmt.Errorf("lock undo session %s: %w", session, err)
	}
	defer lf.Close()
	if err := homefile.Lock(lf); err != nil {
		return fmt.Errorf("lock undo session %s: %w", session, err)
	}
	idx, err := s.load(session)
	if err != nil {
		return err
	}
	idx, err = f(idx)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return fmt.Errorf("encode undo index of %s: %w", session, err)
	}
	if err := homefile.WriteAtomic(filepath.Join(sdir, "index.json"), b, 0o600); err != nil {
		return fmt.Errorf("save undo index of %s: %w", session, err)
	}
	return nil
}

// maxEntries is how many of a session's changes can be undone: older ones are forgotten as new ones come.
var maxEntries = 1000 // a variable for the test of the bound

// maxIndex bounds a session's undo index file as read (about 250 bytes an entry: far more than maxEntries).
const maxIndex = 16 << 20

func (s *Store) load(session string) ([]Entry, error) {
	// Through no symbolic link (homefile's promise for the broker's own files), bounded, strict JSON.
	b, err := conffile.ReadIn(s.dir, filepath.Join(session, "index.json"), maxIndex)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read undo index: %w", err)
	}
	var idx []Entry
	if err := strictjson.Unmarshal(filepath.Join(s.dir, session, "index.json"), b, &idx); err != nil {
		return nil, fmt.Errorf("read undo index: %w", err)
	}
	return idx, nil
}
