//go:build linux

package fsops

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxLinkHops bounds the symlinks one path may go through (the kernel's own bound is 40).
const maxLinkHops = 40

// follow resolves the symlinks of rel (a clean path relative to the root) beneath the root by reading them, never by
// opening what they name, and returns the path they lead to, with no symlink in it. Every path the resolution
// reaches through a symlink is decided by allow before it is looked at; the prefixes of rel itself were decided with
// rel. So a link to a file the rules hide says the same whether that file exists or not (defends against a planted
// symlink as an oracle on a hidden file's existence or kind). An absolute link, or ".." above the root, escapes.
func (r *Root) follow(rel string, allow func(abs string) bool) (string, error) {
	if rel == "." || rel == "" {
		return ".", nil
	}
	todo := strings.Split(rel, "/")
	var done []string // resolved components: no symlink among them
	hops := 0
	for len(todo) > 0 {
		part := todo[0]
		todo = todo[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", ErrEscapes
			}
			done = done[:len(done)-1]
			continue
		}
		cand := path.Join(append(append([]string(nil), done...), part)...)
		if hops > 0 && allow != nil && !allow(filepath.Join(r.path, filepath.FromSlash(cand))) {
			return "", fmt.Errorf("a symlink leads to %s: %w", filepath.Join(r.path, filepath.FromSlash(cand)), ErrDenied)
		}
		target, err := r.readlink(done, part)
		switch {
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
			// Not a symlink (or not there): the open that follows says which.
			done = append(done, part)
			continue
		case err != nil:
			return "", mapErrno(err)
		}
		if hops++; hops > maxLinkHops {
			return "", fmt.Errorf("too many symlinks: %w", ErrSymlink)
		}
		if strings.HasPrefix(target, "/") {
			return "", ErrEscapes
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}

// readlink reads the symlink name in the folder dir (resolved components, opened with no symlink followed).
func (r *Root) readlink(dir []string, name string) (string, error) {
	parent := "."
	if len(dir) > 0 {
		parent = path.Join(dir...)
	}
	fd, err := openBelow(r.fd, parent, unix.O_PATH|unix.O_DIRECTORY, 0, resolveWrite)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	buf := make([]byte, unix.PathMax)
	for {
		n, err := unix.Readlinkat(fd, name, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
}
