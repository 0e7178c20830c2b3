// Mount lockdown: every mount of the command's mount namespace read-only, nosuid and nodev, except the writable
// places and the safe devices; and the bind and mount-attribute steps the init stage builds on.

package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// safeDevices are the only device nodes a command can open; every other mount is nodev.
var safeDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

func writablePlaces(hs *helperSpec) []string {
	var w []string
	if !hs.ReadOnlyRoot {
		w = append(w, hs.Root)
	}
	w = append(w, hs.Writable...)
	// A place inside another is bound after it, on top.
	sort.SliceStable(w, func(i, j int) bool { return strings.Count(w[i], "/") < strings.Count(w[j], "/") })
	return w
}

// lockDown makes every mount read-only, nosuid and nodev, then makes the writable places (and the mounts below
// them that were writable) writable again and lets safeDevices be opened. Landlock covers neither chmod, chown,
// utimes and extended attributes nor opening device nodes for reading: defends against changing files' modes
// and times outside the writable places, and against reading raw disks, consoles, terminals or a device node
// found anywhere.
func lockDown(hs *helperSpec, mounts []mountEntry) error {
	places := writablePlaces(hs)
	var rw []string
	for _, w := range places {
		for _, m := range append([]string{w}, mountPointsBelow(w, mounts)...) {
			var st unix.Statfs_t
			if err := unix.Statfs(m, &st); err == nil && st.Flags&unix.ST_RDONLY == 0 {
				rw = append(rw, m)
			}
		}
	}
	for _, w := range places {
		if err := bindSelf(w); err != nil {
			return err
		}
	}
	var devs []string
	for _, d := range safeDevices {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&fs.ModeCharDevice != 0 {
			if err := bindSelf(d); err != nil {
				return err
			}
			devs = append(devs, d)
		}
	}
	if err := setMountAttr("/", unix.AT_RECURSIVE, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, 0); err != nil {
		return err
	}
	for _, m := range rw {
		if err := setMountAttr(m, 0, 0, unix.MOUNT_ATTR_RDONLY); err != nil {
			return err
		}
	}
	for _, d := range devs {
		if err := setMountAttr(d, 0, 0, unix.MOUNT_ATTR_NODEV); err != nil {
			return err
		}
	}
	return nil
}

func bindSelf(p string) error {
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", p, err)
	}
	return nil
}

func makeReadOnly(p string) error {
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, p, unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("make %s read-only: %w", p, err)
	}
	return nil
}

func setMountAttr(p string, flags uint, set, clear uint64) error {
	attr := unix.MountAttr{Attr_set: set, Attr_clr: clear}
	if err := unix.MountSetattr(unix.AT_FDCWD, p, flags, &attr); err != nil {
		return fmt.Errorf("set mount attributes of %s (set %#x, clear %#x): %w", p, set, clear, err)
	}
	return nil
}
