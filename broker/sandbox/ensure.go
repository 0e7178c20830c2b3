// The protected folders a command must find covered (git's hooks and info folders that do not exist yet), made
// before it runs without following a link a command planted.

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/garuda-dev/garuda/internal/pathglob"
)

// EnsureProtectedDirs creates, empty (0755), the protected folders below root that do not exist yet, so that a
// mount can make them read-only. Run calls it too (the broker calls it first, after the command guard's scan). It
// refuses a folder outside root or reached through a symlink below root: an earlier command could have
// planted .git -> /somewhere to make the broker create folders outside the project.
// A folder whose parent refuses it (a nested repository's .git of another user or without write permission, a
// read-only file system) is not an error: the parent is returned in cover, to be made read-only in its place, so
// that a command cannot make it writable and plant the folder either.
func EnsureProtectedDirs(root string, dirs []string) (cover []string, err error) {
	root = filepath.Clean(root)
	if len(dirs) == 0 {
		return nil, nil
	}
	// Folders are made through the root's handle, which never leaves it: defends against a command still running
	// swapping a checked folder for a symlink to outside between the check and the mkdir.
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("create protected folders: %w", err)
	}
	defer r.Close()
	// A root reached through a symlink (~/code -> /data/code): the guard names folders by their real path.
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("create protected folders: %w", err)
	}
	for _, d := range dirs {
		d = filepath.Clean(d)
		rel, in := pathglob.Within(root, d)
		if !in {
			rel, in = pathglob.Within(real, d)
		}
		if !in || rel == "" {
			return nil, fmt.Errorf("create protected folder %s: not below the root %s", d, root)
		}
		p, inRoot := root, "."
		for _, part := range strings.Split(rel, "/") {
			parent := p
			p, inRoot = filepath.Join(p, part), filepath.Join(inRoot, part)
			fi, err := os.Lstat(p)
			if errors.Is(err, fs.ErrNotExist) {
				err := r.Mkdir(inRoot, 0o755)
				if refused(err) {
					cover = append(cover, parent)
					break
				}
				if err != nil && !errors.Is(err, fs.ErrExist) {
					return nil, fmt.Errorf("create protected folder %s: %w", p, err)
				}
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("create protected folder %s: %w", d, err)
			}
			if !fi.IsDir() {
				return nil, fmt.Errorf("create protected folder %s: %s is not a folder (%v)", d, p, fi.Mode().Type())
			}
		}
	}
	return cover, nil
}

// refused is a mkdir's error where the folder's parent does not let this user make it: its permissions, an
// immutable flag, a read-only file system.
func refused(err error) bool {
	return errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EROFS)
}
