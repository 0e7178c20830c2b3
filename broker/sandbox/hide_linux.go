// Covering a secret: a file by /dev/null bound over it, a folder by an empty read-only tmpfs, with the folders it
// reveals (Spec.Reveal) bound back on top, read-only.

package sandbox

import (
	"errors"
	"fmt"
	"os"

	"github.com/garuda-dev/garuda/internal/pathglob"
	"golang.org/x/sys/unix"
)

func hideFile(p string) error {
	if err := unix.Mount(os.DevNull, p, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("hide file %s: %w", p, err)
	}
	if err := makeReadOnly(p); err != nil {
		return err
	}
	return nil
}

// revealedIn lists the folders of reveal that lie strictly inside dir, relative to it.
func revealedIn(dir string, reveal []string) []string {
	var out []string
	for _, r := range reveal {
		if rel, in := pathglob.Within(dir, r); in && rel != "" {
			out = append(out, rel)
		}
	}
	return out
}

// hideFolder covers the folder dir with an empty read-only tmpfs and binds each folder of reveal (relative to dir)
// back on top of it, read-only. Covering the folder whole, instead of each entry it holds when the command starts,
// defends against reading what appears in it during the run (credentials `garuda setup` writes, a new settings
// file) and anything not listed; each revealed folder is opened below dir through no symbolic link and cloned
// before the cover goes on, so that nothing can be swapped in between to reveal something else. A revealed path
// that does not exist, or is not a folder, stays hidden; one that is a symbolic link, and anything else that cannot
// be done, fails the set-up (closed).
func hideFolder(dir string, reveal []string) error {
	if len(reveal) == 0 {
		flags := uintptr(unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
		if err := unix.Mount("tmpfs", dir, "tmpfs", flags, "size=4k,mode=0555"); err != nil {
			return fmt.Errorf("hide folder %s: %w", dir, err)
		}
		return nil
	}
	fail := func(what string, err error) error { return fmt.Errorf("hide folder %s: %s: %w", dir, what, err) }
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail("open", err)
	}
	defer unix.Close(dfd)
	type shown struct {
		rel  string
		tree int // a detached clone of the folder's mounts
	}
	var trees []shown
	defer func() {
		for _, t := range trees {
			unix.Close(t.tree)
		}
	}()
	for _, rel := range reveal {
		// O_PATH with O_NOFOLLOW opens a link itself, so that what is opened is known by its type.
		fd, err := unix.Openat2(dfd, rel, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			continue // no folder to show: it stays hidden
		}
		if err != nil {
			return fail("show "+rel, err) // ELOOP: a link on the way
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return fail("show "+rel, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
		case unix.S_IFLNK:
			unix.Close(fd)
			return fail("show "+rel, errors.New("it is a symbolic link, which could point anywhere; keep a folder there"))
		default:
			unix.Close(fd)
			continue // not a folder: it stays hidden
		}
		tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
		unix.Close(fd)
		if err != nil {
			return fail("clone "+rel, err)
		}
		trees = append(trees, shown{rel, tree})
		// Read-only before it is in view; it keeps its exec bits (hook scripts run from it).
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			return fail("make "+rel+" read-only", err)
		}
	}
	// The cover: a new tmpfs on the folder opened above, writable only until the revealed folders have their mount
	// points in it (nothing runs in the namespace yet), then read-only.
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fail("fsopen tmpfs", err)
	}
	defer unix.Close(fsfd)
	for _, kv := range [][2]string{{"size", "4k"}, {"mode", "0555"}} {
		if err := unix.FsconfigSetString(fsfd, kv[0], kv[1]); err != nil {
			return fail("tmpfs "+kv[0], err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return fail("create tmpfs", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fail("mount tmpfs", err)
	}
	defer unix.Close(mfd)
	if err := unix.MoveMount(mfd, "", dfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fail("cover", err)
	}
	for _, t := range trees {
		if err := mkdirAllAt(mfd, t.rel); err != nil {
			return fail("make the mount point of "+t.rel, err)
		}
		if err := unix.MoveMount(t.tree, "", mfd, t.rel, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fail("show "+t.rel, err)
		}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(mfd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fail("make the cover read-only", err)
	}
	return nil
}

// mkdirAllAt makes the folder rel and its parents below the folder dfd.
func mkdirAllAt(dfd int, rel string) error {
	for i := 0; i <= len(rel); i++ {
		if i < len(rel) && rel[i] != '/' {
			continue
		}
		if err := unix.Mkdirat(dfd, rel[:i], 0o555); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
	}
	return nil
}
