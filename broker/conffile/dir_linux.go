package conffile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/garuda-dev/garuda/broker/openat2"
)

// resolve keeps an open beneath its folder with no symbolic link in any component and no /proc magic link: defends
// against a hostile project pointing its configuration, or a folder on the way to it, at a file elsewhere or at a
// file of the project that a read rule hides (each link would have to be decided; none is followed instead).
const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// Dir is a folder held open (a project, $GARUDA_HOME for its commands and skills) whose files are read confined to
// it.
type Dir struct {
	fd   int
	path string // how errors name the folder
	root *os.Root
}

// OpenDir holds the folder path open. The path itself may pass through symbolic links: it is the folder chosen.
func OpenDir(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{fd: fd, path: path}, nil
}

// Close releases the folder and the file system FS made of it.
func (d *Dir) Close() error {
	if d.root != nil {
		d.root.Close()
	}
	return unix.Close(d.fd)
}

// Open opens rel (below the folder) as a configuration file of at most max bytes; see OpenAt.
func (d *Dir) Open(rel string, max int64) (*File, error) {
	return openAt(d.fd, rel, filepath.Join(d.path, rel), max)
}

// Read reads rel (below the folder) as a configuration file of at most max bytes.
func (d *Dir) Read(rel string, max int64) ([]byte, error) {
	f, err := d.Open(rel, max)
	if err != nil {
		return nil, err
	}
	return f.Read()
}

// ReadIn reads rel below the folder dir as a configuration file of at most max bytes (OpenDir, Read, Close).
func ReadIn(dir, rel string, max int64) ([]byte, error) {
	d, err := OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Read(rel, max)
}

// OpenAt opens rel below the folder dirfd, confined to it with no symbolic link followed, without blocking on a FIFO
// (O_NONBLOCK) or taking a terminal (O_NOCTTY); it must be a regular file of at most max bytes. An absent file is an
// error that wraps fs.ErrNotExist.
func OpenAt(dirfd int, rel string, max int64) (*File, error) { return openAt(dirfd, rel, rel, max) }

func openAt(dirfd int, rel, name string, max int64) (*File, error) {
	f, err := open(dirfd, rel, name)
	if err != nil {
		return nil, err
	}
	return check(f, name, max)
}

// open opens rel below dirfd for reading, with resolve, O_NONBLOCK and O_NOCTTY; errors name the file as name.
func open(dirfd int, rel, name string) (*os.File, error) {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC, Resolve: resolve}
	fd, err := openat2.Open(dirfd, rel, &how)
	switch err {
	case nil:
		return os.NewFile(uintptr(fd), name), nil
	case unix.ELOOP:
		return nil, fmt.Errorf("%s is a symbolic link or lies behind one: Garuda follows no link in a project's configuration; "+
			"put the file itself there: %w", name, ErrLink)
	case unix.EXDEV:
		return nil, fmt.Errorf("%s leads out of its folder: %w", name, fs.ErrPermission)
	case unix.ENOSYS:
		return nil, fmt.Errorf("read %s: this kernel has no openat2 (Linux 5.6 or later is needed to read it confined)", name)
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: err}
}

// FS is the folder as a file system whose Open and ReadConfig go through no symbolic link and never block, and whose
// Stat, Lstat and ReadLink go through os.Root (no "..", no link out). It lives until Close.
func (d *Dir) FS() (fs.FS, error) {
	if d.root == nil {
		r, err := os.OpenRoot("/proc/self/fd/" + strconv.Itoa(d.fd)) // the very folder held open
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", d.path, err)
		}
		d.root = r
	}
	return dirFS{fsys: d.root.FS(), d: d}, nil
}

type dirFS struct {
	fsys fs.FS
	d    *Dir
}

func (f dirFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return open(f.d.fd, name, name)
}

func (f dirFS) Stat(name string) (fs.FileInfo, error)  { return fs.Stat(f.fsys, name) }
func (f dirFS) Lstat(name string) (fs.FileInfo, error) { return fs.Lstat(f.fsys, name) }
func (f dirFS) ReadLink(name string) (string, error)   { return fs.ReadLink(f.fsys, name) }

// ReadConfig reads name (a slash path of the file system) as a configuration file of at most max bytes.
func (f dirFS) ReadConfig(name string, max int64) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	file, err := openAt(f.d.fd, name, name, max)
	if err != nil {
		return nil, err
	}
	return file.Read()
}
