// Fingerprints of protected paths, taken before and after the attacks of protect_linux_test.go, and what changed
// between two: the tests' own check that a protected path stayed as it was, contents included.

package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"golang.org/x/sys/unix"
)

// snapshotPaths fingerprints each path without following symlinks: absent (or an empty folder), a symlink and its
// target, a file's mode and content, or a folder's whole tree (names, modes, link targets, contents). Comparing fingerprints taken before
// and after a command catches protected files a mount could not cover (they did not exist yet) and replacements
// of a protected path or of its parent.
func snapshotPaths(paths []string) map[string]string {
	out := make(map[string]string, len(paths))
	for _, p := range paths {
		out[p] = fingerprint(p)
	}
	return out
}

// changedPaths lists, sorted, the paths whose fingerprints differ (including paths present in only one snapshot).
func changedPaths(before, after map[string]string) []string {
	var out []string
	for p, b := range before {
		if a, ok := after[p]; !ok || a != b {
			out = append(out, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func fingerprint(p string) string {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "absent"
	}
	if err != nil {
		return "error: " + err.Error()
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, _ := os.Readlink(p)
		return "symlink:" + t
	case fi.Mode().IsRegular():
		return fmt.Sprintf("file:%v:%s", fi.Mode(), hashFile(p))
	case fi.IsDir():
		if ents, err := os.ReadDir(p); err == nil && len(ents) == 0 {
			// An empty folder runs nothing: the same as absent, so the folders EnsureDirs creates are no change.
			return "absent"
		}
		h := sha256.New()
		_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			rel, _ := filepath.Rel(p, q)
			if err != nil {
				fmt.Fprintf(h, "%s\x00error %v\x00", rel, err)
				return nil
			}
			info, ierr := d.Info()
			if ierr != nil {
				fmt.Fprintf(h, "%s\x00error %v\x00", rel, ierr)
				return nil
			}
			fmt.Fprintf(h, "%s\x00%v\x00", rel, info.Mode())
			switch {
			case info.Mode()&fs.ModeSymlink != 0:
				t, _ := os.Readlink(q)
				fmt.Fprintf(h, "%s\x00", t)
			case info.Mode().IsRegular():
				fmt.Fprintf(h, "%s\x00", hashFile(q))
			}
			return nil
		})
		return "dir:" + hex.EncodeToString(h.Sum(nil))
	default:
		return fmt.Sprintf("other:%v", fi.Mode())
	}
}

// hashFile hashes the regular file p, following no symlink and never blocking on a FIFO.
func hashFile(p string) string {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return "unreadable " + err.Error()
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Sprintf("not a regular file (%v)", err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unreadable " + err.Error()
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestSnapshotChanged(t *testing.T) {
	d := t.TempDir()
	hooks := filepath.Join(d, "hooks")
	cfg := filepath.Join(d, "config")
	missing := filepath.Join(d, "missing")
	must(t, os.Mkdir(hooks, 0o755))
	must(t, os.WriteFile(cfg, []byte("a"), 0o644))
	paths := []string{hooks, cfg, missing}
	before := snapshotPaths(paths)
	if ch := changedPaths(before, snapshotPaths(paths)); len(ch) != 0 {
		t.Fatalf("unchanged paths reported: %v", ch)
	}
	must(t, os.Mkdir(missing, 0o755))
	if ch := changedPaths(before, snapshotPaths(paths)); len(ch) != 0 {
		t.Fatalf("an empty folder where nothing was reported: %v", ch)
	}
	must(t, os.Remove(missing))
	must(t, os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("x"), 0o755))
	must(t, os.WriteFile(cfg, []byte("b"), 0o644))
	must(t, os.Symlink("/etc", missing))
	if ch := changedPaths(before, snapshotPaths(paths)); !slices.Equal(ch, []string{cfg, hooks, missing}) {
		t.Fatalf("Changed = %v", ch)
	}
}
