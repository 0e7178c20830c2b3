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
	"strings"

	"github.com/garuda-dev/garuda/internal/pathglob"
)

// SnapshotPaths fingerprints each path without following symlinks: absent (or an empty folder), a symlink and its
// target, a file's mode and content, or a folder's whole tree (names, modes, link targets, contents). Comparing fingerprints taken before
// and after a command catches protected files a mount could not cover (they did not exist yet) and replacements
// of a protected path or of its parent.
func SnapshotPaths(paths []string) map[string]string {
	out := make(map[string]string, len(paths))
	for _, p := range paths {
		out[p] = fingerprint(p)
	}
	return out
}

// EnsureProtectedDirs creates, empty (0755), the protected folders below root that do not exist yet, so that a
// mount can make them read-only. Run calls it too; call it before taking the "before" snapshot, or Changed names
// them. It refuses a folder outside root or reached through a symlink below root: an earlier command could have
// planted .git -> /somewhere to make the broker create folders outside the project.
func EnsureProtectedDirs(root string, dirs []string) error {
	root = filepath.Clean(root)
	if len(dirs) == 0 {
		return nil
	}
	// Folders are made through the root's handle, which never leaves it: defends against a command still running
	// swapping a checked folder for a symlink to outside between the check and the mkdir.
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("create protected folders: %w", err)
	}
	defer r.Close()
	for _, d := range dirs {
		d = filepath.Clean(d)
		rel, in := pathglob.Within(root, d)
		if !in || rel == "" {
			return fmt.Errorf("create protected folder %s: not below the root %s", d, root)
		}
		p, inRoot := root, "."
		for _, part := range strings.Split(rel, "/") {
			p, inRoot = filepath.Join(p, part), filepath.Join(inRoot, part)
			fi, err := os.Lstat(p)
			if errors.Is(err, fs.ErrNotExist) {
				if err := r.Mkdir(inRoot, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
					return fmt.Errorf("create protected folder %s: %w", p, err)
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("create protected folder %s: %w", d, err)
			}
			if !fi.IsDir() {
				return fmt.Errorf("create protected folder %s: %s is not a folder (%v)", d, p, fi.Mode().Type())
			}
		}
	}
	return nil
}

// systemSecrets expands systemSecretGlobs to the paths that exist.
func systemSecrets() []string {
	var out []string
	for _, pat := range systemSecretGlobs {
		m, _ := filepath.Glob(pat)
		out = append(out, m...)
	}
	return out
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

// hashFile hashes the regular file p. It follows no symlink and never blocks on a FIFO: defends the broker against
// a command (another one still running) swapping a protected file for a link to /dev/zero or for a FIFO between the
// listing and the open.
func hashFile(p string) string {
	f, err := openNoFollow(p)
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
