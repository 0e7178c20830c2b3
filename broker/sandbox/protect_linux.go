// Protected paths made read-only, and secrets and the host's unix sockets covered, by the init stage after the
// lockdown.

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/garuda-dev/garuda/internal/pathglob"
	"golang.org/x/sys/unix"
)

// protectPaths makes protected paths read-only and hides secrets and outside unix sockets.
func protectPaths(hs *helperSpec, mounts []mountEntry) error {
	writable := writablePlaces(hs)
	// The same file system mounted a second time (WSL's /mnt/wslg/distro, ostree's /sysroot, a bind mount) shows
	// each path under another name too: defends against reading a secret, or reaching a socket, by that name.
	hs.ReadOnly = withOtherNames(hs.ReadOnly, mounts)
	hs.Hidden = withOtherNames(hs.Hidden, mounts)
	hs.Sockets = withOtherNames(hs.Sockets, mounts)
	// A read-only or hiding mount inside a writable tree can be dodged by renaming its parent away (and putting a
	// copy in its place, or letting the next command's rules miss it at its new path); every folder between a
	// writable place and a protected, hidden or covered path becomes a mount point, which cannot be renamed or
	// removed (EBUSY).
	anc := map[string]bool{}
	for _, p := range slices.Concat(hs.ReadOnly, hs.Hidden, hs.Sockets) {
		for _, w := range writable {
			if rel, in := pathglob.Within(w, p); !in || rel == "" {
				continue
			}
			for a := filepath.Dir(p); ; a = filepath.Dir(a) {
				if rel, in := pathglob.Within(w, a); !in || rel == "" {
					break
				}
				if fi, err := os.Lstat(a); err == nil && fi.IsDir() {
					anc[a] = true
				}
			}
		}
	}
	ancs := make([]string, 0, len(anc))
	for a := range anc {
		ancs = append(ancs, a)
	}
	sort.Slice(ancs, func(i, j int) bool { return strings.Count(ancs[i], "/") < strings.Count(ancs[j], "/") })
	for _, a := range ancs {
		if err := bindSelf(a); err != nil {
			return err
		}
	}
	// Protected paths (.git/hooks, .git/config, .garuda/, …) become read-only mounts: defends against a command
	// planting hooks or config that run code later outside the sandbox.
	for _, p := range hs.ReadOnly {
		// Missing, or below a file (.git/config where .git is a worktree's gitdir file): nothing to cover.
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err := bindSelf(p); err != nil {
			return err
		}
		if err := makeReadOnly(p); err != nil {
			return err
		}
	}
	// Secrets disappear behind an empty read-only tmpfs or /dev/null: defends against reading credentials.
	for _, h := range hs.Hidden {
		fi, err := os.Stat(h)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			continue
		}
		if err != nil {
			return fmt.Errorf("hide %s: %w", h, err)
		}
		if fi.IsDir() {
			if err := hideFolder(h, revealedIn(h, hs.Reveal)); err != nil {
				return err
			}
			continue
		}
		if err := hideFile(h); err != nil {
			return err
		}
	}
	// A private /dev/shm (POSIX semaphores and shared memory: Python multiprocessing, browsers) that the command
	// may write; the host's shared memory objects stay out of view.
	if fi, err := os.Stat(shmDir); err == nil && fi.IsDir() {
		if err := unix.Mount("tmpfs", shmDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=256m,mode=1777"); err != nil {
			return fmt.Errorf("mount a private %s: %w", shmDir, err)
		}
		hs.PrivateShm = true
	}
	hs.PrivatePts = privatePts()
	// Pathname unix sockets of the host (the broker's socket, docker.sock, dbus…) are not covered by Landlock before
	// ABI 9 nor by the network namespace: cover each with /dev/null. Defends against talking to host daemons.
	for _, s := range hs.Sockets {
		fi, err := os.Lstat(s)
		if err != nil || fi.Mode()&fs.ModeSocket == 0 {
			continue // gone, unreachable, or not a socket any more
		}
		err = hideFile(s)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			// Unlinked by the host during the cover (another session's proxy socket, a program's temp socket): the
			// kernel detaches the cover, whose read-only step then fails (EINVAL) while the name still shows for a
			// moment. A second cover fails with ENOENT on a name being unlinked, and covers one still there.
			err = hideFile(s)
		}
		if err != nil {
			// Removed since the Lstat: the mount fails with ENOENT. Nothing is left to reach.
			if _, lerr := os.Lstat(s); errors.Is(err, unix.ENOENT) || errors.Is(lerr, fs.ErrNotExist) {
				continue
			}
			return err
		}
	}
	return nil
}
