package guard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReadFileOpensNoFIFOOrSymlink: reading a repository's config or a hook follows no symlink and does not block
// on a FIFO (a command still running could swap the file for either between the walk and the read).
// Found by red team (against the sandbox's former fingerprints of protected files; the guard's reads took over).
func TestReadFileOpensNoFIFOOrSymlink(t *testing.T) {
	root := t.TempDir()
	g := New(root, Options{MaxEntries: 100})
	defer g.Close()
	fifo := filepath.Join(root, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "target"), []byte("x"), 0o644)
	os.Symlink(filepath.Join(root, "target"), filepath.Join(root, "link"))
	done := make(chan error, 1)
	go func() { _, err := g.readFile("fifo", maxConfig); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("read of a FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO blocked")
	}
	if data, err := g.readFile("link", maxConfig); err == nil {
		t.Errorf("reading a symlink followed it: %q", data)
	}
	// Negative control: a plain open of the FIFO blocks until a writer comes.
	opened := make(chan struct{})
	go func() {
		if f, err := os.Open(fifo); err == nil {
			f.Close()
		}
		close(opened)
	}()
	select {
	case <-opened:
		t.Error("negative control: a plain open of the FIFO did not block")
	case <-time.After(200 * time.Millisecond):
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // lets the blocked open return
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	<-opened
	if data, err := os.ReadFile(filepath.Join(root, "link")); err != nil || string(data) != "x" {
		t.Errorf("negative control: a plain read did not follow the link: %q %v", data, err)
	}
}

// Found by red team (against the class-2 pass's "made listable"). The guard makes a folder its owner cannot list
// listable to check it; a command still running could swap a folder on the way to it for a link to outside the
// project, and the broker changed the mode of the folder the link led to (one of $GARUDA_HOME's, /etc's as root).
// Now the folder is opened beneath the root through no link. Control: the same folder inside the root is made
// listable.
func TestOwnerAccessFollowsNoLinkOnTheWay(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(outside, "b"), filepath.Join(root, "c", "b")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o311); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(d, 0o755) })
	}
	if err := os.Symlink(outside, filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	mode := func(p string) os.FileMode {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	if ownerAccess(root, "a/b") || mode(filepath.Join(outside, "b")) != 0o311 {
		t.Errorf("a folder outside the root, reached through a link on the way, was made listable: %o", mode(filepath.Join(outside, "b")))
	}
	if !ownerAccess(root, "c/b") || mode(filepath.Join(root, "c", "b")) != 0o711 {
		t.Errorf("control: a folder inside the root is not made listable: %o", mode(filepath.Join(root, "c", "b")))
	}
}

// Found by red team (class 1 against the guard's walk). The walk opened each folder by its path, following no link
// at its last name only, and read a repository's config the same way: a command still running could swap a folder
// on the way for a link to a hidden one outside the project ($GARUDA_HOME, ~/.ssh), and the guard listed it and
// read its files as the project's, which its answer (what it removed, what it could not) could then name. Now both
// open beneath the root through no link. Control: the same folder and file inside the root are read.
func TestGuardReadsNothingThroughALinkOnTheWay(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{outside, filepath.Join(root, "c")} {
		if err := os.MkdirAll(filepath.Join(d, "b"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "b", "config"), []byte("[core]\n\tfsmonitor = x\n"), 0o644)
	}
	if err := os.Symlink(outside, filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	g := New(root, Options{MaxEntries: 100})
	defer g.Close()
	tr := newTree(root, 100, Options{})
	defer tr.close()
	if nd, ok := tr.read("a/b", false, walkFull, -1); ok {
		t.Errorf("a folder outside the root, through a link on the way, was listed: %d entries", nd.count)
	}
	if data, err := g.readFile("a/b/config", maxConfig); err == nil {
		t.Errorf("a file outside the root, through a link on the way, was read: %q", data)
	}
	if nd, ok := tr.read("c/b", false, walkFull, -1); !ok || nd.count != 1 {
		t.Errorf("control: a folder inside the root is not listed: %v", ok)
	}
	if _, err := g.readFile("c/b/config", maxConfig); err != nil {
		t.Errorf("control: a file inside the root is not read: %v", err)
	}
}
