// A sandboxed run's scan before, kept on disk while the run is under way: when the broker dies during the run, the
// next broker in the same root undoes what the run left, before anything else runs there.

package broker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/garuda-dev/garuda/broker/guard"
	"github.com/garuda-dev/garuda/broker/homefile"
)

// pendingDir is where the pending runs of a root are kept: $GARUDA_HOME/guard/<hash of the root>.
func (s *Service) pendingDir(root string) string {
	h := sha256.Sum256([]byte(root))
	return filepath.Join(s.cfg.Home, "guard", hex.EncodeToString(h[:12]))
}

var pendingSeq atomic.Int64

// pendingRun is a run's pending file, locked for as long as the run is under way: the lock says the broker that
// runs it is alive. Close removes it, then lets the lock go.
type pendingRun struct {
	f    *os.File
	path string
}

func (p *pendingRun) Close() error {
	os.Remove(p.path)
	return p.f.Close()
}

// keepPending writes the watch's scan before to a file of the root's pending runs, held locked until the watch ends
// (guard.Watch.End). Defends against a broker that dies during a run (SIGKILL, the OOM killer, a crash): the check
// after never happens, and what the run planted would be taken as the user's own by the next session's first scan.
// No fsync: what this defends against is the broker's process dying, not the machine. A file that cannot be
// written is a warning in the log, never a refused run.
func (s *Service) keepPending(root string, w *guard.Watch) {
	if err := s.writePending(root, w); err != nil {
		s.cfg.Log.Warn("the command guard could not keep the scan before a run on disk; if the broker dies during the run, "+
			"what it leaves is not undone", "root", root, "err", err)
	}
}

func (s *Service) writePending(root string, w *guard.Watch) error {
	data, err := w.Pending()
	if err != nil {
		return err
	}
	dir := s.pendingDir(root)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// Written under a name no other broker reads, locked, then renamed: no broker meets it unlocked or half written.
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			os.Remove(f.Name())
			f.Close()
		}
	}()
	if err := homefile.TryLock(f); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	name := filepath.Join(dir, strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(pendingSeq.Add(1), 10)+".json")
	if err := os.Rename(f.Name(), name); err != nil {
		return err
	}
	ok = true
	w.Keep(&pendingRun{f: f, path: name})
	return nil
}

// recoverPending checks the root's pending runs that no live broker holds (a broker died during them): each is
// resumed and checked as the run's own check after would have been (undone, audited), then removed. Its lines say
// what was undone and why. A file that cannot be read or decoded is removed, with a warning; it never stops a
// session. Called at a session's open, before anything runs in it.
func (s *Service) recoverPending(sess *session) []string {
	dir := s.pendingDir(sess.fs.Real())
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil // none yet
	}
	var lines []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			removeStaleTemp(filepath.Join(dir, e.Name()))
			continue
		}
		if !strings.HasSuffix(e.Name(), ".json") || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		undone, err := s.recoverOne(sess, p)
		switch {
		case errors.Is(err, homefile.ErrLocked), errors.Is(err, errGone):
		case err != nil:
			s.cfg.Log.Warn("removed a pending run of the command guard that could not be read", "file", p, "err", err)
			lines = append(lines, fmt.Sprintf("Warning: Garuda removed %s, the scan before a run of an earlier Garuda that "+
				"ended during it, which could not be read (%v): what that run left in the project is not checked.", p, err))
		case len(undone) > 0:
			s.cfg.Log.Warn("undid what a run of a broker that died left behind", "file", p, "undone", strings.Join(undone, "; "))
			lines = append(lines, strings.Join(undone, " "))
		}
	}
	return lines
}

// removeStaleTemp removes a pending file a broker died writing (before its rename): one no broker holds, written
// over a minute ago (a younger one may be a live broker's, between its creation and its lock).
func removeStaleTemp(p string) {
	f, err := os.OpenFile(p, os.O_RDONLY|homefile.NoFollow, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || time.Since(fi.ModTime()) < time.Minute || homefile.TryLock(f) != nil {
		return
	}
	os.Remove(p)
}

// errGone is a pending file another broker checked and removed between the listing and the lock.
var errGone = errors.New("already checked")

func (s *Service) recoverOne(sess *session, p string) ([]string, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|homefile.NoFollow, 0)
	if err != nil {
		return nil, errGone
	}
	defer f.Close()
	if err := homefile.TryLock(f); err != nil {
		return nil, err // a live broker's run, under way
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Nlink == 0 {
		return nil, errGone
	}
	defer os.Remove(p) // removed while still locked: checked once
	data, err := io.ReadAll(io.LimitReader(f, guard.MaxPending+1))
	if err != nil {
		return nil, err
	}
	st0 := s.state(sess)
	sess.guard.Configure(s.guardOptions(sess, st0, s.secrets(st0)))
	w, err := sess.guard.Resume(data)
	if err != nil {
		return nil, err
	}
	return s.guardAfter(sess.id, guardRecoverOp, "a run of a Garuda broker that ended during it", w)
}

// guardRecoverOp names a pending run's check in the audit log (the guard's record of what it undid).
const guardRecoverOp = "guard_recover"
