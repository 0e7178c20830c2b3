//go:build linux

package fsops

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// prepareWrite is PrepareWrite of a path inside the root: it reads the pre-image (if any) and returns the exact bytes that Commit
// will write. path must be inside the root (else ErrEscapes).
func (r *Root) prepareWrite(path string, content []byte) (*Pending, error) {
	return r.prepare("write", path, false, func(old []byte, existed bool) ([]byte, int, error) {
		return bytes.Clone(content), 0, nil
	})
}

// prepareWriteOutside is prepareWrite for a path outside the root, to call only after policy allowed it. The path
// is opened from "/" with the same rules (no symlink in any component, no magic link).
func (r *Root) prepareWriteOutside(path string, content []byte) (*Pending, error) {
	return r.prepare("write", path, true, func(old []byte, existed bool) ([]byte, int, error) {
		return bytes.Clone(content), 0, nil
	})
}

// prepareEdit is PrepareEdit of a path inside the root: oldString must occur exactly once (or at least once with replaceAll);
// otherwise ErrNoMatch or ErrManyMatches with the count.
func (r *Root) prepareEdit(path, oldString, newString string, replaceAll bool) (*Pending, error) {
	return r.prepare("edit", path, false, editFunc(oldString, newString, replaceAll, r.Limits.EditBytes))
}

// prepareEditOutside is prepareEdit for a path outside the root, to call only after policy allowed it.
func (r *Root) prepareEditOutside(path, oldString, newString string, replaceAll bool) (*Pending, error) {
	return r.prepare("edit", path, true, editFunc(oldString, newString, replaceAll, r.Limits.EditBytes))
}

func editFunc(oldString, newString string, replaceAll bool, limit int64) func([]byte, bool) ([]byte, int, error) {
	return func(old []byte, existed bool) ([]byte, int, error) {
		if !existed {
			return nil, 0, ErrNotFound
		}
		if oldString == "" {
			return nil, 0, fmt.Errorf("old_string is empty: %w", ErrNoMatch)
		}
		if oldString == newString {
			return nil, 0, errors.New("old_string and new_string are the same; nothing to change")
		}
		if bytes.IndexByte(old, 0) >= 0 {
			return nil, 0, ErrBinary
		}
		oldString, newString := oldString, newString
		n := bytes.Count(old, []byte(oldString))
		if o, nw, ok := toCRLF(old, oldString, newString); ok {
			// read_file shows a CRLF file's lines without their "\r", so the model's old_string has bare "\n":
			// it is matched with the file's line ends, and new_string written with them (no mixed ends).
			if m := bytes.Count(old, []byte(o)); m > 0 || n == 0 {
				oldString, newString, n = o, nw, m
			}
		}
		switch {
		case n == 0:
			return nil, 0, ErrNoMatch
		case n > 1 && !replaceAll:
			return nil, 0, fmt.Errorf("%d matches: %w", n, ErrManyMatches)
		}
		// The size is known before a byte is allocated: defends against a replace_all that multiplies a small file
		// into terabytes (an allocation the Go runtime cannot survive).
		if size := int64(len(old)) + int64(n)*(int64(len(newString))-int64(len(oldString))); size > limit {
			return nil, 0, fmt.Errorf("the edit would make %d bytes, more than %d MiB: %w", size, limit>>20, ErrTooLarge)
		}
		return bytes.ReplaceAll(old, []byte(oldString), []byte(newString)), n, nil
	}
}

// toCRLF is old_string and new_string with "\r\n" line ends, for a file whose first line ends in "\r\n" when
// old_string has no "\r" and either has a "\n"; ok is false, and nothing changed, otherwise.
func toCRLF(file []byte, oldString, newString string) (string, string, bool) {
	i := bytes.IndexByte(file, '\n')
	if i <= 0 || file[i-1] != '\r' || strings.Contains(oldString, "\r") || !strings.Contains(oldString+newString, "\n") {
		return oldString, newString, false
	}
	crlf := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n") }
	return crlf(oldString), crlf(newString), true
}

func (r *Root) prepare(op, path string, outside bool, change func(old []byte, existed bool) ([]byte, int, error)) (*Pending, error) {
	t, err := r.resolve(path, outside, resolveWrite)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, path, err)
	}
	defer t.close()
	if t.rel == "." {
		return nil, fmt.Errorf("%s %s: %w", op, t.abs, ErrIsDir)
	}
	old, st, err := r.loadPreimage(t)
	if err != nil {
		if errors.Is(err, ErrSymlink) && !t.outside { // CLAUDE.md -> AGENTS.md: name the path to write instead
			err = fmt.Errorf("%w%s", err, linkHint(r.path, t.rel))
		}
		return nil, fmt.Errorf("%s %s: %w", op, t.abs, err)
	}
	p := &Pending{Abs: t.abs, Existed: st != nil, Mode: 0o644, root: r, outside: t.outside, uid: -1, gid: -1}
	if !t.outside {
		p.rel = t.rel
	}
	if st != nil {
		p.Old = old
		// Permission bits only: setuid/setgid/sticky are dropped, so new content never runs with a file's privileges.
		p.Mode = fs.FileMode(st.Mode & 0o777)
		p.uid, p.gid = int(st.Uid), int(st.Gid)
	}
	p.OldHash = sha256.Sum256(p.Old)
	p.New, p.Matches, err = change(p.Old, p.Existed)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, t.abs, err)
	}
	if int64(len(p.New)) > r.Limits.EditBytes {
		return nil, fmt.Errorf("%s %s: %d bytes, more than %d MiB: %w", op, t.abs, len(p.New), r.Limits.EditBytes>>20, ErrTooLarge)
	}
	p.Hidden = HasHidden(p.New)
	return p, nil
}

// loadPreimage opens t for reading with the write rules; a missing file is (nil, nil, nil).
func (r *Root) loadPreimage(t *target) ([]byte, *unix.Stat_t, error) {
	f, st, err := openRegular(t)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	// A second name elsewhere (possibly outside the root) would keep the old content or, for in-place writers,
	// get the new one: refuse rather than guess which the user meant.
	if st.Nlink > 1 {
		return nil, nil, fmt.Errorf("%w (%d links)", ErrHardLinked, st.Nlink)
	}
	if st.Size > r.Limits.EditBytes {
		return nil, nil, fmt.Errorf("%d bytes, more than %d MiB: %w", st.Size, r.Limits.EditBytes>>20, ErrTooLarge)
	}
	old, err := io.ReadAll(io.LimitReader(f, r.Limits.EditBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read pre-image: %w", err)
	}
	if int64(len(old)) > r.Limits.EditBytes {
		return nil, nil, ErrTooLarge
	}
	return old, st, nil
}

// commit writes p.New if the file is still what Prepare saw (same existence and hash, else ErrChanged). before is
// called with the pre-image first (the undo snapshot) and the file's real path (its folder as the kernel names the
// one opened: no symlink on the way, so that undo can reach it again without following one); an error from it stops
// the write. The write is atomic: a temp file created with O_EXCL in the same folder (by its fd), fsync, renameat
// over the target, fsync of the folder. Missing parent folders of a new file are created (inside the root only).
func (r *Root) commit(p *Pending, before func(abs string, old []byte, existed bool) error) error {
	if p == nil || p.root != r {
		// A Pending names a path relative to the root that prepared it; another root would write elsewhere.
		return errors.New("commit: the pending write was not prepared by this root")
	}
	dir, base := filepath.Split(p.Abs)
	var (
		dfd int
		err error
	)
	if p.outside {
		t, rerr := r.resolve(p.Abs, true, resolveWrite)
		if rerr != nil {
			return fmt.Errorf("write %s: %w", p.Abs, rerr)
		}
		// Re-open the folder for writing and syncing: resolve gave an O_PATH fd.
		dfd, err = openBelow(t.base, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0, resolveWrite)
		t.close()
		if err != nil {
			err = mapErrno(err)
		}
	} else {
		relDir := filepath.Dir(p.rel)
		dfd, err = r.openDirForWrite(relDir, !p.Existed)
	}
	if errors.Is(err, ErrNotFound) && p.Existed {
		err = fmt.Errorf("%w (the folder is gone)", ErrChanged)
	}
	if err != nil {
		return fmt.Errorf("write %s: open folder %s: %w", p.Abs, dir, err)
	}
	defer unix.Close(dfd)

	// The file must be what the question showed: same existence, same bytes.
	t := &target{abs: p.Abs, base: dfd, rel: base, flags: resolveWrite, outside: p.outside}
	cur, st, err := r.loadPreimage(t)
	if err != nil {
		return fmt.Errorf("write %s: %w", p.Abs, err)
	}
	if (st != nil) != p.Existed || sha256.Sum256(cur) != p.OldHash {
		return fmt.Errorf("write %s: %w", p.Abs, ErrChanged)
	}
	if before != nil {
		real := p.Abs
		if d, err := fdPath(dfd); err == nil && filepath.IsAbs(d) && !strings.HasSuffix(d, " (deleted)") {
			real = filepath.Join(d, base)
		}
		if err := before(real, cur, p.Existed); err != nil {
			return fmt.Errorf("write %s: undo snapshot: %w", p.Abs, err)
		}
	}
	if err := writeAtomic(dfd, base, p); err != nil {
		return fmt.Errorf("write %s: %w", p.Abs, err)
	}
	return nil
}

// openDirForWrite opens the folder rel (relative to the root) with the write rules, creating missing folders one
// component at a time relative to the fd of their parent when create is set.
func (r *Root) openDirForWrite(rel string, create bool) (int, error) {
	fd, err := openBelow(r.fd, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0, resolveWrite)
	if err == nil || !create || !errors.Is(err, unix.ENOENT) {
		if err != nil {
			return -1, mapErrno(err)
		}
		return fd, nil
	}
	cur, err := openBelow(r.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0, resolveWrite)
	if err != nil {
		return -1, mapErrno(err)
	}
	for _, part := range strings.Split(rel, "/") {
		if err := unix.Mkdirat(cur, part, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(cur)
			return -1, fmt.Errorf("create folder %s: %w", part, err)
		}
		next, err := openBelow(cur, part, unix.O_RDONLY|unix.O_DIRECTORY, 0, resolveWrite)
		unix.Close(cur)
		if err != nil {
			return -1, mapErrno(err)
		}
		cur = next
	}
	return cur, nil
}

// writeAtomic writes p.New to base in the folder dfd through a temp file and a rename, so that a crash or a full
// disk leaves the old content or the new one, never a mix.
func writeAtomic(dfd int, base string, p *Pending) error {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("random temp name: %w", err)
	}
	tmp := "." + base + ".garuda-" + hex.EncodeToString(rnd[:]) + ".tmp"
	if len(tmp) > 255 {
		tmp = ".garuda-" + hex.EncodeToString(rnd[:]) + ".tmp"
	}
	// O_EXCL|O_NOFOLLOW relative to the folder's fd: a planted file or symlink of that name is never opened.
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("cannot create a file in its folder: %w", err) // the temp file; its name means nothing to a user
	}
	ok := false
	defer func() {
		if !ok {
			unix.Unlinkat(dfd, tmp, 0)
		}
	}()
	werr := writeAll(fd, p.New)
	if werr == nil && p.uid >= 0 && (p.uid != unix.Geteuid() || p.gid != unix.Getegid()) {
		// Keep the owner when we may (root); an unprivileged broker cannot give files away, which is fine.
		if err := unix.Fchown(fd, p.uid, p.gid); err != nil && !errors.Is(err, unix.EPERM) {
			werr = fmt.Errorf("keep owner: %w", err)
		}
	}
	if werr == nil {
		if err := unix.Fchmod(fd, uint32(p.Mode.Perm())); err != nil {
			werr = fmt.Errorf("keep mode %v: %w", p.Mode, err)
		}
	}
	if werr == nil {
		if err := unix.Fsync(fd); err != nil {
			werr = fmt.Errorf("fsync temp file: %w", err)
		}
	}
	if err := unix.Close(fd); err != nil && werr == nil {
		werr = fmt.Errorf("close temp file: %w", err)
	}
	if werr != nil {
		return werr
	}
	if err := unix.Renameat(dfd, tmp, dfd, base); err != nil {
		return fmt.Errorf("rename temp file over %s: %w", base, err)
	}
	ok = true
	if err := unix.Fsync(dfd); err != nil {
		return fmt.Errorf("fsync folder: %w", err)
	}
	return nil
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("write temp file: %w", err)
		}
		b = b[n:]
	}
	return nil
}
