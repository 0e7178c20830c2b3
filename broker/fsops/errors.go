package fsops

import "errors"

// Sentinel errors. Callers match them with errors.Is; the wrapped message names the operation and the path, and the
// sentinel's own text says what a user or a model can do about it.
var (
	ErrEscapes = errors.New("the path leads outside the project root (through .., an absolute path or a symlink)")
	ErrSymlink = errors.New("the path goes through a symlink, which is not followed here (writes, and reads " +
		"outside the root, follow no symlinks; /proc magic links are never followed)")
	ErrNotRegular  = errors.New("not a regular file (directories, FIFOs, devices and sockets are refused)")
	ErrIsDir       = errors.New("is a directory; use glob to list it")
	ErrHardLinked  = errors.New("the file has more than one hard link; it is not written, because the other names would be affected")
	ErrBinary      = errors.New("the file looks binary (it contains NUL bytes); it is not shown as text")
	ErrChanged     = errors.New("the file changed since the question; ask again")
	ErrNotFound    = errors.New("no such file or directory")
	ErrNoMatch     = errors.New("old_string was found 0 times; it must match the file exactly (whitespace and indentation too)")
	ErrManyMatches = errors.New("old_string was found more than once; add surrounding lines to make it unique, or set replace_all")
	ErrTooLarge    = errors.New("the file is too large for this operation")
	ErrBadPattern  = errors.New("invalid pattern")
	ErrDenied      = errors.New("the permission rules do not allow reading that file")
)
