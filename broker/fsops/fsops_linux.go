//go:build linux

package fsops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/garuda-dev/garuda/broker/openat2"
	"github.com/garuda-dev/garuda/internal/pathglob"
)

// Root is a project root held as a directory fd; every path the tools open is resolved by the kernel relative to
// it, never by comparing strings. A Root is safe for concurrent use; Close it after the last call.
//
// What this is a boundary against: .., absolute paths, symlinks leaving the root, /proc magic links, a folder or
// file swapped for a symlink between the question and the write, hard-linked files (writes), FIFOs, devices and
// sockets, huge and sparse files. What it is not: reads of a file hard-linked into the root from outside (the
// sandbox must keep commands from making such links), and a write racing the few microseconds between the pre-image
// check and the rename (the result is then the approved bytes, possibly over a change made in that window).
type Root struct {
	fd     int
	path   string
	real   string // the kernel's name of the root folder (symlinks in path resolved)
	Limits Limits
}

// OpenRoot opens dir (made absolute and clean) as the root of the file tools.
func OpenRoot(dir string) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open root %s: %w", dir, err)
	}
	fd, err := unix.Open(abs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open root %s: %w", abs, mapErrno(err))
	}
	real, err := fdPath(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("open root %s: %w", abs, err)
	}
	return &Root{fd: fd, path: abs, real: real, Limits: defaultLimits}, nil
}

// Close releases the root's fd.
func (r *Root) Close() error {
	if r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	if err != nil {
		return fmt.Errorf("close root %s: %w", r.path, err)
	}
	return nil
}

// Path is the root's absolute path as given to OpenRoot.
func (r *Root) Path() string { return r.path }

// Real is the kernel's name of the root folder when it was opened (Path with its symlinks resolved).
func (r *Root) Real() string { return r.real }

// FDPath names the very folder the root holds open (/proc/self/fd/N): paths below it reach that folder whatever
// has become of Path since, which defends against a symlink on the way swapped after the root was opened.
func (r *Root) FDPath() string { return "/proc/self/fd/" + strconv.Itoa(r.fd) }

// Abs joins p with the root when relative and cleans it; inside says whether the result is the root or below it,
// lexically. It only picks the policy question: confinement is done by openat2 when the file is opened.
func (r *Root) Abs(p string) (abs string, inside bool) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.path, p)
	}
	abs = filepath.Clean(p)
	_, inside = r.rel(abs)
	return abs, inside
}

// rel returns abs relative to the root ("." for the root itself), by either of its names: the path it was opened by,
// or its real one (a root reached through a symlink, whose real name is what commands, which run there, print).
func (r *Root) rel(abs string) (string, bool) {
	for _, base := range []string{r.path, r.real} {
		if rel, in := pathglob.Within(base, abs); in {
			if rel == "" {
				return ".", true
			}
			return rel, true
		}
	}
	return "", false
}

const (
	// Reads: stay beneath the base fd and never follow /proc magic links (which jump anywhere, e.g.
	// /proc/self/root).
	resolveRead = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS
	// Writes: also no symlink in any component, so a folder swapped for a symlink cannot redirect the write.
	resolveWrite = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS
)

// openBelow opens p below dirfd, close-on-exec, through the broker's one openat2 (which retries EAGAIN and EINTR).
func openBelow(dirfd int, p string, flags uint64, mode uint64, resolve uint64) (int, error) {
	return openat2.Open(dirfd, p, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: resolve})
}

// mapErrno turns the kernel's answers to openat2 into the package's sentinels.
func mapErrno(err error) error {
	switch {
	case errors.Is(err, unix.EXDEV):
		return ErrEscapes
	case errors.Is(err, unix.ELOOP):
		return ErrSymlink
	case errors.Is(err, unix.ENOENT):
		return ErrNotFound
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%w (a part of the path is not a folder)", ErrNotFound)
	case errors.Is(err, unix.ENXIO), errors.Is(err, unix.ENODEV):
		return ErrNotRegular // a socket or a device without a driver
	case errors.Is(err, unix.EISDIR):
		return ErrIsDir
	}
	return err
}

// fdPath is the kernel's current name of the file open as fd.
func fdPath(fd int) (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", fmt.Errorf("name of fd %d (is /proc mounted?): %w", fd, err)
	}
	return p, nil
}

// inRoot turns the kernel's name of a file below the root into the same file under the root's path as given.
func (r *Root) inRoot(real string) string {
	if real == r.real {
		return r.path
	}
	prefix := r.real
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if rest, ok := strings.CutPrefix(real, prefix); ok {
		return filepath.Join(r.path, rest)
	}
	return real
}

// target is where a path is opened: a base fd and a path relative to it that the kernel resolves beneath it.
type target struct {
	abs     string
	base    int    // fd the path is resolved beneath
	rel     string // path relative to base
	closeFn func() // closes base when it is not the root's
	outside bool
	flags   uint64 // RESOLVE_* flags for opening rel beneath base
}

func (t *target) close() {
	if t.closeFn != nil {
		t.closeFn()
	}
}

// resolve picks the base fd for p. Inside the root: the root's fd, and the given resolve flags. Outside (only when
// allowed): the fd of the target's folder, itself opened from "/", with no symlink in any component for reads too,
// so that the file opened is the very path policy was asked about.
func (r *Root) resolve(p string, allowOutside bool, resolveFlags uint64) (*target, error) {
	if r.fd < 0 {
		return nil, fmt.Errorf("root %s: closed", r.path)
	}
	if p == "" {
		return nil, fmt.Errorf("empty path: %w", ErrNotFound)
	}
	abs, inside := r.Abs(p)
	if inside {
		rel, _ := r.rel(abs)
		return &target{abs: abs, base: r.fd, rel: rel, flags: resolveFlags}, nil
	}
	if !allowOutside {
		return nil, fmt.Errorf("%s: %w", abs, ErrEscapes)
	}
	dir, base := filepath.Split(abs)
	if base == "" {
		return nil, fmt.Errorf("%s: %w", abs, ErrIsDir)
	}
	slash, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /: %w", err)
	}
	defer unix.Close(slash)
	rd := strings.TrimPrefix(filepath.Clean(dir), "/")
	if rd == "" {
		rd = "."
	}
	dfd, err := openBelow(slash, rd, unix.O_PATH|unix.O_DIRECTORY, 0, resolveWrite)
	if err != nil {
		err = mapErrno(err)
		if errors.Is(err, ErrSymlink) {
			err = fmt.Errorf("%w%s", err, realPathHint(abs))
		}
		return nil, fmt.Errorf("open folder %s: %w", dir, err)
	}
	return &target{abs: abs, base: dfd, rel: base, closeFn: func() { unix.Close(dfd) }, outside: true, flags: resolveWrite}, nil
}

// realPathHint tells which path to ask for instead of one that goes through a symlink (outside the root, the
// path asked about must be the file itself): the first component of the path asked that is a symlink, and the text
// of that link. Nothing behind the link is looked at: the policy decided the path asked, not where its links lead,
// so the hint must not depend on what is there (defends against a link into a hidden folder as an oracle on what
// the folder holds, which resolving the whole path would be). The hint is only a message: nothing is opened by it.
func realPathHint(abs string) string { return linkHint("/", strings.TrimPrefix(abs, "/")) }

// linkHint is realPathHint of rel below base, looking at nothing above base (a root reached through a symlink is no
// hint for a path below it).
func linkHint(base, rel string) string {
	p := base
	for _, part := range strings.Split(rel, "/") {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			return ""
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		to, err := os.Readlink(p)
		if err != nil {
			return ""
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(p), to)
		}
		return fmt.Sprintf("; %s is a symlink to %s: ask for the path by that name", p, to)
	}
	return ""
}

// openRegular opens t read-only without blocking (a FIFO with no writer would block a plain open) and refuses
// anything that is not a regular file before a byte is read.
func openRegular(t *target) (*os.File, *unix.Stat_t, error) {
	fd, err := openBelow(t.base, t.rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0, t.flags)
	if err != nil {
		err = mapErrno(err)
		if t.outside && errors.Is(err, ErrSymlink) {
			err = fmt.Errorf("%w%s", err, realPathHint(t.abs))
		}
		return nil, nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("fstat: %w", err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		unix.Close(fd)
		return nil, nil, ErrIsDir
	default:
		unix.Close(fd)
		return nil, nil, fmt.Errorf("%w: %s", ErrNotRegular, fileKind(st.Mode))
	}
	// Back to blocking reads: a regular file never blocks, and os.File then reads it directly.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("clear O_NONBLOCK: %w", err)
	}
	return os.NewFile(uintptr(fd), t.abs), &st, nil
}

func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symlink"
	}
	return "not a regular file"
}
