//go:build linux

package fsops

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/garuda-dev/garuda/broker/conffile"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// walker walks a folder of the root in parallel, skipping .git, symlinks and what .gitignore files ignore. Every
// folder and file is opened with openat2 beneath the start folder's fd with no symlinks, so the walk cannot leave it.
type walker struct {
	ctx      context.Context
	startFD  int
	startRel string // start folder relative to the root ("." for the root)
	g        *errgroup.Group
	stopped  atomic.Bool
	// descend says whether a folder (relative to the start) may hold wanted files.
	descend func(rel string) bool
	// allow, if set, decides a folder or a .gitignore by its absolute path (startAbs joined with its name) before
	// it is opened: a folder the read policy hides is not entered, so nothing about the walk depends on it.
	allow    func(abs string) bool
	startAbs string
	// file is called, concurrently, for each regular file not ignored (rel is relative to the start folder). It
	// may keep dir past its return with dir.acquire and dir.release.
	file func(w *walker, dir *dirRef, name, rel string)
}

// dirRef is an open folder fd shared by the searches of its files; the last release closes it.
type dirRef struct {
	fd   int
	refs atomic.Int32
}

func (d *dirRef) acquire() { d.refs.Add(1) }

func (d *dirRef) release() {
	if d.refs.Add(-1) == 0 {
		unix.Close(d.fd)
	}
}

// startWalk opens the folder p (inside the root). Symlinks beneath the root are followed for the start folder only,
// by follow: where they lead is decided by allow before it is opened, and the walk names files by where they are.
func (r *Root) startWalk(op, p string, allow func(abs string) bool) (fd int, rel, abs string, err error) {
	if p == "" {
		p = "."
	}
	t, err := r.resolve(p, false, resolveRead)
	if err != nil {
		return -1, "", "", fmt.Errorf("%s in %s: %w", op, p, err)
	}
	rel, err = r.follow(t.rel, allow)
	if err != nil {
		return -1, "", "", fmt.Errorf("%s in %s: %w", op, t.abs, err)
	}
	abs = filepath.Join(r.path, filepath.FromSlash(rel))
	if rel != t.rel && allow != nil && !allow(abs) {
		return -1, "", "", fmt.Errorf("%s in %s: a symlink leads to %s: %w", op, t.abs, abs, ErrDenied)
	}
	fd, err = openBelow(r.fd, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0, resolveWrite)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) {
			return -1, "", "", fmt.Errorf("%s in %s: not a folder: %w", op, t.abs, ErrNotFound)
		}
		return -1, "", "", fmt.Errorf("%s in %s: %w", op, t.abs, mapErrno(err))
	}
	return fd, rel, abs, nil
}

func (w *walker) run(rootIgnore *ignoreNode) error {
	w.g = &errgroup.Group{}
	w.g.SetLimit(runtime.GOMAXPROCS(0) * 2)
	w.walkDir(".", w.startFD, rootIgnore, false)
	w.g.Wait()
	return w.ctx.Err()
}

// rootRel turns a path relative to the start folder into one relative to the root (lexically).
func (w *walker) rootRel(rel string) string {
	switch {
	case w.startRel == ".":
		return rel
	case rel == ".":
		return w.startRel
	}
	return w.startRel + "/" + rel
}

// allowed asks allow about rel, relative to the start folder.
func (w *walker) allowed(rel string) bool {
	return w.allow == nil || w.allow(path.Join(w.startAbs, rel))
}

func (w *walker) stop() { w.stopped.Store(true) }

func (w *walker) done() bool { return w.stopped.Load() || w.ctx.Err() != nil }

// walkDir reads the folder rel (relative to the start); fd is its open fd, closed here unless borrowed.
func (w *walker) walkDir(rel string, fd int, ign *ignoreNode, closeFD bool) {
	if closeFD {
		d := &dirRef{fd: fd}
		d.refs.Store(1)
		defer d.release()
		w.walkEntries(rel, d, ign)
		return
	}
	d := &dirRef{fd: fd}
	d.refs.Store(2) // borrowed: never reaches zero here
	w.walkEntries(rel, d, ign)
}

func (w *walker) walkEntries(rel string, dir *dirRef, ign *ignoreNode) {
	fd := dir.fd
	if w.done() {
		return
	}
	ents, err := readDirents(fd)
	if err != nil && len(ents) == 0 {
		return
	}
	// A .gitignore of this folder applies to everything below it.
	for _, e := range ents {
		if e.name == ".gitignore" && e.typ == unix.DT_REG && w.allowed(path.Join(rel, ".gitignore")) {
			if data := readSmall(fd, ".gitignore"); data != nil {
				if rules := parseGitignore(data); len(rules) > 0 {
					d := w.rootRel(rel)
					if d == "." {
						d = ""
					}
					ign = &ignoreNode{parent: ign, dir: d, rules: rules}
				}
			}
			break
		}
	}
	for _, e := range ents {
		if w.done() {
			return
		}
		name := e.name
		childRel := name
		if rel != "." {
			childRel = rel + "/" + name
		}
		switch e.typ {
		case unix.DT_DIR:
			if name == ".git" || ign.ignored(w.rootRel(childRel), true) || !w.descend(childRel) || !w.allowed(childRel) {
				continue
			}
			// Beneath the start folder with no symlink in any component: a folder swapped for a symlink is not entered.
			cfd, err := openBelow(w.startFD, childRel, unix.O_RDONLY|unix.O_DIRECTORY, 0, resolveWrite)
			if err != nil {
				continue
			}
			sub := childRel
			if !w.g.TryGo(func() error { w.walkDir(sub, cfd, ign, true); return nil }) {
				w.walkDir(sub, cfd, ign, true)
			}
		case unix.DT_REG:
			if name == ".git" || ign.ignored(w.rootRel(childRel), false) {
				continue
			}
			w.file(w, dir, name, childRel)
		}
		// Symlinks, FIFOs, devices and sockets are never listed or searched.
	}
}

// readSmall reads a small file (a .gitignore) in the folder dirfd, through no symbolic link; nil when it cannot (a
// file over 1 MiB is ignored, not cut).
func readSmall(dirfd int, name string) []byte {
	f, err := conffile.OpenAt(dirfd, name, 1<<20)
	if err != nil {
		return nil
	}
	data, _ := f.Read()
	return data
}

// rootIgnore returns the ignore rules from .git/info/exclude of the root, which apply below every .gitignore.
// A file allow refuses is not read.
func (r *Root) rootIgnore(startRel string, allow func(abs string) bool) *ignoreNode {
	read := func(rel string) []byte {
		if allow != nil && !allow(path.Join(r.path, rel)) {
			return nil
		}
		return readSmall(r.fd, rel)
	}
	var node *ignoreNode
	if data := read(".git/info/exclude"); data != nil {
		if rules := parseGitignore(data); len(rules) > 0 {
			node = &ignoreNode{rules: rules}
		}
	}
	// .gitignore files of the folders between the root and the start folder apply too.
	if startRel == "." {
		return node
	}
	dir := "."
	for _, part := range strings.Split(startRel, "/") {
		if data := read(path.Join(dir, ".gitignore")); data != nil {
			if rules := parseGitignore(data); len(rules) > 0 {
				d := dir
				if d == "." {
					d = ""
				}
				node = &ignoreNode{parent: node, dir: d, rules: rules}
			}
		}
		dir = path.Join(dir, part)
	}
	return node
}

type dirent struct {
	name string
	typ  uint8
}

var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readDirents lists the folder fd with getdents64, keeping each entry's type (no stat per entry). An entry of
// unknown type (file systems without d_type) gets it from fstatat of the one name, not following symlinks.
func readDirents(fd int) ([]dirent, error) {
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	var out []dirent
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return out, fmt.Errorf("getdents: %w", err)
		}
		if n <= 0 {
			return out, nil
		}
		for off := 0; off < n; {
			// struct linux_dirent64 { u64 ino; s64 off; u16 reclen; u8 type; char name[]; }
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			typ := buf[off+18]
			nameb := buf[off+19 : off+reclen]
			if i := bytes.IndexByte(nameb, 0); i >= 0 {
				nameb = nameb[:i]
			}
			off += reclen
			name := string(nameb)
			if name == "." || name == ".." {
				continue
			}
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
					continue
				}
				switch st.Mode & unix.S_IFMT {
				case unix.S_IFDIR:
					typ = unix.DT_DIR
				case unix.S_IFREG:
					typ = unix.DT_REG
				}
			}
			out = append(out, dirent{name: name, typ: typ})
		}
	}
}
