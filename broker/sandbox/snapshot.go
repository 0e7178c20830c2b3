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
	"sort"
)

// SnapshotPaths fingerprints each path without following symlinks: absent, a symlink and its target, a file's mode
// and content, or a folder's whole tree (names, modes, link targets, contents). Comparing fingerprints taken before
// and after a command catches protected files a mount could not cover (they did not exist yet) and replacements
// of a protected path or of its parent.
func SnapshotPaths(paths []string) map[string]string {
	out := make(map[string]string, len(paths))
	for _, p := range paths {
		out[p] = fingerprint(p)
	}
	return out
}

// EnsureProtectedDirs creates the protected folders that do not exist yet (empty, 0755) so that a mount can make
// them read-only. Run calls it too; call it before taking the "before" snapshot, or Changed names them.
func EnsureProtectedDirs(dirs []string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create protected folder %s: %w", d, err)
		}
	}
	return nil
}

// Changed lists, sorted, the paths whose fingerprints differ (including paths present in only one snapshot).
func Changed(before, after map[string]string) []string {
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

func hashFile(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return "unreadable " + err.Error()
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unreadable " + err.Error()
	}
	return hex.EncodeToString(h.Sum(nil))
}
