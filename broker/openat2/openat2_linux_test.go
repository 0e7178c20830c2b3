package openat2

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Open opens what lies beneath the folder, and answers the kernel's refusal of what does not as its errno.
func TestOpenBeneath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH}
	fd, err := Open(dfd, "f", how)
	if err != nil {
		t.Fatalf("a file beneath: %v", err)
	}
	unix.Close(fd)
	if fd, err := Open(dfd, "../"+filepath.Base(dir)+"/f", how); err != unix.EXDEV || fd != -1 {
		t.Fatalf("a path out of the folder: fd %d, %v; want -1, EXDEV", fd, err)
	}
	if fd, err := Open(dfd, "missing", how); err != unix.ENOENT || fd != -1 {
		t.Fatalf("a missing file: fd %d, %v; want -1, ENOENT", fd, err)
	}
}
