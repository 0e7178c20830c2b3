package broker

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"path/filepath"

	"github.com/garuda-dev/garuda/broker/conffile"
)

// policyFS is a project's file system as the read policy lets it be seen: a file or folder whose reading is not
// simply allowed is absent, from Open and from every folder listing. Defends against commands, skills and
// instructions loaded from files that a rule hides from the model (their names, bodies or warnings would tell it
// what they hold, or that they exist).
type policyFS struct {
	fsys  fs.FS
	root  string            // the project folder the names are relative to
	allow func(string) bool // decides an absolute path
}

func (p policyFS) allowed(name string) bool {
	return name == "." || p.allow(filepath.Join(p.root, filepath.FromSlash(name)))
}

func (p policyFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) || !p.allowed(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	f, err := p.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	if d, ok := f.(fs.ReadDirFile); ok {
		return &policyDir{ReadDirFile: d, fs: p, dir: name}, nil
	}
	return f, nil
}

// policyDir lists only the entries the policy lets be seen.
type policyDir struct {
	fs.ReadDirFile
	fs  policyFS
	dir string
}

func (d *policyDir) ReadDir(n int) ([]fs.DirEntry, error) {
	var out []fs.DirEntry
	for {
		batch, err := d.ReadDirFile.ReadDir(n)
		for _, e := range batch {
			if d.fs.allowed(path.Join(d.dir, e.Name())) {
				out = append(out, e)
			}
		}
		switch {
		case n <= 0:
			return out, err
		case len(out) > 0 && (err == nil || errors.Is(err, io.EOF)):
			return out, nil
		case err != nil:
			return out, err
		case len(batch) == 0:
			return out, io.EOF
		}
	}
}

// ReadConfig reads a command, skill or agent file when the policy lets it be seen, confined as fsys reads it.
func (p policyFS) ReadConfig(name string, max int64) ([]byte, error) {
	if !fs.ValidPath(name) || !p.allowed(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return conffile.ReadFS(p.fsys, name, max)
}

// Stat, Lstat and ReadLink look at a name without opening it (opening a FIFO would block), when the policy lets it
// be seen.
func (p policyFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) || !p.allowed(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return fs.Stat(p.fsys, name)
}

func (p policyFS) Lstat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) || !p.allowed(name) {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
	}
	return fs.Lstat(p.fsys, name)
}

func (p policyFS) ReadLink(name string) (string, error) {
	if !fs.ValidPath(name) || !p.allowed(name) {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrNotExist}
	}
	return fs.ReadLink(p.fsys, name)
}
