package broker

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/garuda-dev/garuda/broker/fsops"
	"github.com/garuda-dev/garuda/broker/permit"
	"github.com/garuda-dev/garuda/policy"
)

// openParent opens the folder of abs from "/" following no symlink in any component: defends against a folder
// swapped for a symlink since Garuda wrote the file, which would carry an undo outside the project (or into
// $GARUDA_HOME).
func openParent(abs string) (int, string, error) {
	dir, base := filepath.Split(filepath.Clean(abs))
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ELOOP) {
		return -1, "", fmt.Errorf("%s: a folder on the way is now a symlink; undo refused", abs)
	}
	if err != nil {
		return -1, "", fmt.Errorf("%s: %w", dir, err)
	}
	return fd, base, nil
}

// restoreFile puts a pre-image back (or removes a file Garuda created) at the permit's path, with no symlink
// followed anywhere.
func restoreFile(p permit.Permit, content []byte, existed bool) error {
	abs := p.Path()
	if err := p.CheckAct(abs, policy.KindWrite, policy.KindEdit); err != nil {
		return err
	}
	if !existed {
		fd, base, err := openParent(abs)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.Unlinkat(fd, base, 0); err != nil {
			return fmt.Errorf("remove %s: %w", abs, err)
		}
		return nil
	}
	r, err := fsops.OpenRoot("/")
	if err != nil {
		return err
	}
	defer r.Close()
	pend, err := r.PrepareWrite(p, content)
	if err != nil {
		return err
	}
	return r.Commit(p, pend, nil)
}

// currentFile hashes the file at the permit's path as it is now, with no symlink followed anywhere.
func currentFile(p permit.Permit) ([32]byte, bool, error) {
	abs := p.Path()
	if err := p.CheckPreview(abs, policy.KindWrite, policy.KindEdit); err != nil {
		return [32]byte{}, false, err
	}
	fd, base, err := openParent(abs)
	if errors.Is(err, unix.ENOENT) {
		return [32]byte{}, false, nil
	}
	if err != nil {
		return [32]byte{}, false, err
	}
	defer unix.Close(fd)
	ffd, err := unix.Openat(fd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return [32]byte{}, false, nil
	}
	if err != nil {
		return [32]byte{}, false, fmt.Errorf("%s: %w", abs, err)
	}
	f := os.NewFile(uintptr(ffd), abs)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return [32]byte{}, false, err
	}
	if !fi.Mode().IsRegular() {
		return [32]byte{}, false, fmt.Errorf("%s is not a regular file; undo refused", abs)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return [32]byte{}, false, err
	}
	return [32]byte(h.Sum(nil)), true, nil
}
