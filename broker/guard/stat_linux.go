package guard

import (
	"fmt"
	"syscall"
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
