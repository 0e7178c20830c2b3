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

	"github.com/garuda-dev/garuda/internal/pathglob"
)

// EnsureProtectedDirs creates, empty (0755), the protected folders below root that do not exist yet, so that a
// mount can make them read-only. Run calls it too (the broker calls it first, after the command guard's scan). It
// refuses a folder outside root or reached through a symlink below root: an earlier command could have
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
	// A root reached through a symlink (~/code -> /data/code): the guard names folders by their real path.
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("create protected folders: %w", err)
	}
	for _, d := range dirs {
		d = filepath.Clean(d)
		rel, in := pathglob.Within(root, d)
		if !in {
			rel, in = pathglob.Within(real, d)
		}
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
