package broker

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListenUnix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run", "garuda.sock")
	ln, err := listenUnix(path, "")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o660 || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("socket mode %v, want a socket 0660", fi.Mode())
	}
	di, _ := os.Stat(filepath.Dir(path))
	if di.Mode().Perm() != 0o750 {
		t.Errorf("folder mode %v, want 0750", di.Mode().Perm())
	}
	// A live socket is never replaced.
	if _, err := listenUnix(path, ""); err == nil || !strings.Contains(err.Error(), "another broker is serving") {
		t.Fatalf("second broker on a live socket: %v", err)
	}
	ln.Close()

	// A stale socket (its listener gone without unlinking) is replaced.
	stale := filepath.Join(dir, "stale.sock")
	l2, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l2.(*net.UnixListener).SetUnlinkOnClose(false)
	l2.Close()
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("stale socket file should still exist: %v", err)
	}
	l3, err := listenUnix(stale, "")
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	l3.Close()
}

func TestListenUnixBadInput(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "file")
	os.WriteFile(plain, nil, 0o600)
	for name, tc := range map[string]struct{ path, want string }{
		"abstract":     {"@garuda", "abstract sockets are never used"},
		"too long":     {filepath.Join(dir, strings.Repeat("x", 120)), "over the kernel's limit"},
		"not a socket": {plain, "not a socket is in the way"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := listenUnix(tc.path, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("listenUnix(%q) = %v, want an error containing %q", tc.path, err, tc.want)
			}
		})
	}
}
