package guard

import (
	"cmp"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/garuda-dev/garuda/broker/openat2"
)

// Open flags of the guard's reads: no link is followed, no FIFO blocks a read.
const (
	oNoFollow  = syscall.O_NOFOLLOW
	oNonblock  = syscall.O_NONBLOCK
	oDirectory = syscall.O_DIRECTORY
)

// statKey is what fingerprint keeps of p itself (not following a link): inode, size, change time and mode, and
// whether p is a folder.
func statKey(p string) (key string, dir, ok bool) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return "", false, false
	}
	return fmt.Sprintf("%d:%d:%d.%d:%o", st.Ino, st.Size, st.Ctim.Sec, st.Ctim.Nsec, st.Mode),
		st.Mode&syscall.S_IFMT == syscall.S_IFDIR, true
}

// ownerAccess gives the owner of the folder rel (root-relative; not following a link to it) read and search
// permission when it lacks them and the owner is this process's user; it reports whether it changed the mode.
// Defends against a command that hides what it planted from the guard by a mode its owner can enter but not list
// (chmod 111): a broker that runs as the user has no capability to read past it, though the user's git can still
// run there.
//
// rel is opened beneath root through no symbolic link: defends against a command still running that swaps a folder
// on the way for a link to outside the project (to $GARUDA_HOME, /etc), whose folder the broker would then chmod.
func ownerAccess(root, rel string) bool {
	rfd, err := syscall.Open(root, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(rfd)
	fd, err := openat2.Open(rfd, cmp.Or(rel, "."), &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o500 == 0o500 {
		return false
	}
	// The descriptor's magic link names that very folder: a swap of abs for a link meanwhile changes nothing else.
	return syscall.Chmod("/proc/self/fd/"+strconv.Itoa(fd), st.Mode&0o7777|0o500) == nil
}

// devOf is the file system p lies on (following links).
func devOf(p string) (uint64, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return 0, false
	}
	return st.Dev, true
}

// openRoot is a handle on the root for openBeneath; -1 when it cannot be opened (openBeneath then opens it each time).
func openRoot(root string) int {
	fd, err := syscall.Open(root, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

// openBeneath opens rel (root-relative) beneath the root, through no symbolic link and no "..": rootFD is a handle
// on the root, or -1 to open root itself. Defends against a command still running that swaps a folder on the way
// for a link to outside the project (a folder a read rule hides), so that the guard would list or read what is
// there as the project's.
func openBeneath(rootFD int, root, rel string, flags int) (*os.File, error) {
	if rootFD < 0 {
		if rootFD = openRoot(root); rootFD < 0 {
			return nil, &fs.PathError{Op: "open", Path: root, Err: syscall.ENOENT}
		}
		defer syscall.Close(rootFD)
	}
	fd, err := openat2.Open(rootFD, cmp.Or(rel, "."), &unix.OpenHow{Flags: uint64(flags | syscall.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), root+"/"+rel), nil
}
