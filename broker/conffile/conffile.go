package conffile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxSize bounds a settings file (settings.json, models.json, credentials, mcp.json, trust.json, ...): a larger one
// is malformed.
const MaxSize = 1 << 20

// Errors a read wraps, so that callers can tell the cases apart; the message says which file and what to do.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file too large")
	ErrLink       = errors.New("symbolic link")
)

// refusal is a file refused, in words that name it and say what to do; it is its sentinel (ErrNotRegular,
// ErrTooLarge) for errors.Is without saying it a second time.
type refusal struct {
	words string
	is    error
}

func (r *refusal) Error() string        { return r.words }
func (r *refusal) Is(target error) bool { return target == r.is }

// File is an open file of configuration, checked to be a regular file no larger than its bound.
type File struct {
	f    fs.File
	name string
	max  int64
	Info fs.FileInfo // of the open file, not of the path: the file read is the file checked
}

// check wraps an open file: a FIFO, device, folder or socket, or a file over max bytes, is refused (and closed).
func check(f fs.File, name string, max int64) (*File, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &refusal{fmt.Sprintf("%s is %s, not a regular file: replace it with a regular file", name, kind(fi.Mode())),
			ErrNotRegular}
	}
	if fi.Size() > max {
		f.Close()
		return nil, tooLarge(name, max)
	}
	return &File{f: f, name: name, max: max, Info: fi}, nil
}

// Read reads the whole file and closes it. A file that grew past its bound since it was opened is refused too.
func (f *File) Read() ([]byte, error) {
	defer f.f.Close()
	data, err := io.ReadAll(io.LimitReader(f.f, f.max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.name, err)
	}
	if int64(len(data)) > f.max {
		return nil, tooLarge(f.name, f.max)
	}
	return data, nil
}

// Close closes a file that is not read.
func (f *File) Close() error { return f.f.Close() }

// OpenHome opens a file of the user's own configuration ($GARUDA_HOME, the managed policy) by its path, following
// symbolic links: users keep such files in their dotfiles and link them (the folder is the user's, not a
// project's). O_NONBLOCK and O_NOCTTY: a FIFO or a terminal in its place does not hang or take over the broker.
func OpenHome(path string, max int64) (*File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return check(f, path, max)
}

// ReadHome reads a file of the user's own configuration (see OpenHome). An absent file is an error that wraps
// fs.ErrNotExist.
func ReadHome(path string, max int64) ([]byte, error) {
	f, err := OpenHome(path, max)
	if err != nil {
		return nil, err
	}
	return f.Read()
}

// ReadFS reads name of fsys as a configuration file of at most max bytes. A file system of this package (Dir.FS)
// reads it confined, with no link followed and without blocking; any other (an in-memory fstest.MapFS) is read
// through Open with the same checks.
func ReadFS(fsys fs.FS, name string, max int64) ([]byte, error) {
	if r, ok := fsys.(ReaderFS); ok {
		return r.ReadConfig(name, max)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	cf, err := check(f, name, max)
	if err != nil {
		return nil, err
	}
	return cf.Read()
}

// ReaderFS is a file system that reads configuration files itself: Dir.FS, and wrappers that pass it on (the
// broker's read-policy view of a project).
type ReaderFS interface {
	fs.FS
	ReadConfig(name string, max int64) ([]byte, error)
}

func tooLarge(name string, max int64) error {
	return &refusal{fmt.Sprintf("%s is over %s: Garuda reads at most that much of it; make it smaller", name, size(max)), ErrTooLarge}
}

// size says a bound the way a user reads it: "1 MiB", "256 KiB", "100 bytes".
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}
