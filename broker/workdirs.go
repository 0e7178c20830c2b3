// A session's private temp and cache folders, writable by its commands, outside $GARUDA_HOME.

package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/garuda-dev/garuda/broker/homefile"
)

type workDirs struct{ tmp, cache string }

// workBase holds every session's private folders of this user: in $TMPDIR, or /tmp where $TMPDIR is not an absolute
// path (a relative one would put them in the broker's working folder, the project, and the sandbox refuses it).
func workBase() string {
	tmp := os.TempDir()
	if !filepath.IsAbs(tmp) {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, fmt.Sprintf("garuda-%d", os.Getuid()))
}

// shortBase holds the sessions' proxy sockets where $TMPDIR is too long a path for a socket below workBase.
func shortBase() string { return fmt.Sprintf("/tmp/garuda-%d", os.Getuid()) }

// sessionFolders are the folders a session made below the bases, each held open with a shared flock for the
// session's life. A broker killed before it could remove them leaves them unlocked, and the next broker's sweep
// removes them; a live session's folder, locked, is never swept.
type sessionFolders struct {
	mu   sync.Mutex
	held map[string]*os.File // base → base/<id>, flocked shared
}

// folderFlags open a session folder itself (to lock it), never a link in its place.
const folderFlags = os.O_RDONLY | unix.O_DIRECTORY | homefile.NoFollow

// heldMark is the file in a held session folder that says a broker of this kind holds it with a flock: a folder
// without it (an older broker's, which never locks) is never swept.
const heldMark = ".held"

// folder makes base/<id> (0700) if it is missing and holds it for the session.
func (s *session) folder(base string) (string, error) {
	dir := filepath.Join(base, s.id)
	s.folders.mu.Lock()
	defer s.folders.mu.Unlock()
	if s.folders.held[base] != nil {
		return dir, nil
	}
	if err := privateFolder(base); err != nil {
		return "", err
	}
	for range 5 {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("create %s: %w", dir, err)
		}
		f, err := os.OpenFile(dir, folderFlags, 0)
		if err != nil {
			return "", fmt.Errorf("open %s: %w", dir, err)
		}
		if err := homefile.LockShared(f); err != nil {
			f.Close()
			return "", fmt.Errorf("lock %s: %w", dir, err)
		}
		// A sweep may have removed the folder between the mkdir and the lock: hold it only if it is still the one
		// at dir (defends against a live session's folder that no lock protects).
		if sameFile(f, dir) {
			if m, err := os.OpenFile(filepath.Join(dir, heldMark), os.O_CREATE|os.O_WRONLY|homefile.NoFollow, 0o600); err == nil {
				m.Close()
			}
			if s.folders.held == nil {
				s.folders.held = map[string]*os.File{}
			}
			s.folders.held[base] = f
			go sweepStale(base)
			return dir, nil
		}
		f.Close()
	}
	return "", fmt.Errorf("create %s: it was removed again and again as it was made", dir)
}

// remove removes the session's folders in both bases, then lets them go: nothing of an ended session stays in /tmp.
func (f *sessionFolders) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, base := range []string{workBase(), shortBase()} {
		os.RemoveAll(filepath.Join(base, id))
	}
	for _, h := range f.held {
		h.Close()
	}
	f.held = nil
}

func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}

// sweepStale removes the session folders of base that no live session holds: what brokers left that were killed
// before they could remove their sessions' folders (SIGKILL, the OOM killer, a power cut). Each session's first
// folder in a base sweeps it, in the background: an open and a flock a folder.
func sweepStale(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			sweepFolder(filepath.Join(base, e.Name()))
		}
	}
}

func sweepFolder(dir string) {
	f, err := os.OpenFile(dir, folderFlags, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if homefile.TryLock(f) != nil {
		return // a live session holds it
	}
	// Without the mark: an older broker's folder, which it never locks, or one made a moment ago and not yet locked.
	if _, err := os.Lstat(filepath.Join(dir, heldMark)); err != nil || !sameFile(f, dir) {
		return
	}
	os.RemoveAll(dir)
}

// workDirs are the session's private temp and cache folders, writable by its commands: outside $GARUDA_HOME,
// which commands cannot see.
func (s *Service) workDirs(sess *session) (workDirs, error) {
	dir, err := sess.folder(workBase())
	if err != nil {
		return workDirs{}, err
	}
	w := workDirs{tmp: filepath.Join(dir, "tmp"), cache: filepath.Join(dir, "cache")}
	for _, d := range []string{w.tmp, w.cache} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return workDirs{}, fmt.Errorf("create %s: %w", d, err)
		}
	}
	return w, nil
}

// privateFolder makes dir (0700) if it is missing and checks that it is this user's alone: defends against another
// user who made the folder first to watch or plant files in it.
func privateFolder(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || !ownedByMe(fi) {
		return fmt.Errorf("%s is not a private folder of this user; remove it", dir)
	}
	return nil
}
