// The command's own terminals (a devpts instance on /dev/pts, its ptmx on /dev/ptmx) and the place of its private
// shared memory (/dev/shm).

package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

const shmDir = "/dev/shm"

// privatePts mounts a devpts instance of the sandbox's own on /dev/pts and its ptmx on /dev/ptmx, so that programs
// that need a terminal (script, expect, a test runner's pty) work; it shows only the terminals made inside, never
// the host's (defends against reading or writing other sessions' terminals). Where the kernel refuses it, the
// command has no terminal at all: the host's stay unreachable (nodev) either way.
func privatePts() bool {
	if fi, err := os.Stat(ptsDir); err != nil || !fi.IsDir() {
		return false
	}
	fi, err := os.Lstat(ptmxPath)
	if err != nil {
		return false
	}
	// /dev/ptmx is a device node, or a link to pts/ptmx that reaches the new instance by itself.
	link := fi.Mode()&fs.ModeSymlink != 0
	if target, _ := os.Readlink(ptmxPath); link && target != "pts/ptmx" && target != "/dev/pts/ptmx" {
		return false
	}
	if !link && fi.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	if unix.Mount("devpts", ptsDir, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") != nil {
		return false
	}
	if !link && unix.Mount(filepath.Join(ptsDir, "ptmx"), ptmxPath, "", unix.MS_BIND, "") != nil {
		_ = unix.Unmount(ptsDir, unix.MNT_DETACH)
		return false
	}
	return true
}

const (
	ptsDir   = "/dev/pts"
	ptmxPath = "/dev/ptmx"
)
