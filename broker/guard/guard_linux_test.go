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
