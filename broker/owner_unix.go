//go:build unix

package broker

import (
	"io/fs"
	"os"
	"syscall"
)

func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

func ownedBy(fi fs.FileInfo, uid uint32) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == uid
}

func umask(m int) int { return syscall.Umask(m) }

// hardLinked lists the protected regular files that have more than one name.
func hardLinked(paths []string) []string {
	var out []string
	for _, p := range paths {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Nlink > 1 {
			out = append(out, p)
		}
	}
	return out
}
