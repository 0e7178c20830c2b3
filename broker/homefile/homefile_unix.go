//go:build unix

package homefile

import (
	"os"

	"golang.org/x/sys/unix"
)

// NoFollow makes an open fail on a symlink: defends against a link planted in place of a log file.
const NoFollow = unix.O_NOFOLLOW | unix.O_CLOEXEC

// Lock takes an exclusive lock on f, waiting for other processes that hold it.
func Lock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX) }

// LockShared takes a shared lock on f, waiting while another process holds it exclusively.
func LockShared(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_SH) }

// Unlock releases the lock.
func Unlock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// TryLock takes an exclusive lock on f without waiting; held elsewhere, it fails with ErrLocked.
func TryLock(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == unix.EWOULDBLOCK {
		return ErrLocked
	}
	return err
}
