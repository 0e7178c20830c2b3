package conffile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// within runs f, failing the test if it does not return: an open that blocks on a FIFO never would.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s blocked", what)
		return nil
	}
}

// A FIFO, a device or a folder in place of a configuration file is refused, saying which file and what it is, and
// opening the FIFO does not wait for a writer (O_NONBLOCK).
func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "settings.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "models.json"), 0o755)
	for _, c := range []struct {
		name string
		read func() error
		want string
	}{
		{"home FIFO", func() error { _, err := ReadHome(filepath.Join(dir, "settings.json"), MaxSize); return err }, "a FIFO"},
		{"project FIFO", func() error { _, err := ReadIn(dir, "settings.json", MaxSize); return err }, "a FIFO"},
		{"folder", func() error { _, err := ReadHome(filepath.Join(dir, "models.json"), MaxSize); return err }, "a folder"},
		{"device", func() error { _, err := ReadHome("/dev/null", MaxSize); return err }, "a device"},
	} {
		err := within(t, c.name, c.read)
		// Said once: the sentinel is for callers, not a second time in the words.
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), c.want+", not a regular file") ||
			strings.Count(err.Error(), "not a regular file") != 1 {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// The bound holds on the open file's size, and again while reading a file that grew since it was opened; the error
// names the file and the bound in words. A file of exactly the bound is read.
func TestReadBound(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "settings.json")
	write(t, p, strings.Repeat("x", 1<<20))
	if data, err := ReadHome(p, MaxSize); err != nil || len(data) != 1<<20 {
		t.Fatalf("a file of exactly 1 MiB: %d bytes, %v", len(data), err)
	}
	write(t, p, strings.Repeat("x", 1<<20+1))
	for _, read := range []func() error{
		func() error { _, err := ReadHome(p, MaxSize); return err },
		func() error { _, err := ReadIn(dir, "settings.json", MaxSize); return err },
	} {
		if err := read(); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "settings.json is over 1 MiB") ||
			strings.Contains(err.Error(), "file too large") {
			t.Errorf("a file over 1 MiB: %v", err)
		}
	}
	// Grown after the open: checked while reading (control: the size checked at the open was within the bound).
	write(t, p, "{}")
	f, err := OpenHome(p, 10)
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	if err := os.WriteFile(p, []byte(`{"a": "more than ten bytes"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "is over 10 bytes") {
		t.Errorf("a file grown past its bound after the open: %v", err)
	}
}

// An absent file is fs.ErrNotExist for every reader, so that callers can take it as "no settings".
func TestReadAbsent(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadHome(filepath.Join(dir, "nope"), MaxSize); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadHome: %v", err)
	}
	if _, err := ReadIn(dir, "nope", MaxSize); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadIn: %v", err)
	}
	if _, err := ReadIn(dir, ".garuda/nope", MaxSize); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadIn in a missing folder: %v", err)
	}
}

// The user's own files may be links (dotfiles): ReadHome follows them, as Garuda always has for $GARUDA_HOME.
func TestReadHomeFollowsTheUsersLinks(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "dotfiles", "settings.json"), `{"from": "dotfiles"}`)
	link := filepath.Join(dir, "home", "settings.json")
	os.MkdirAll(filepath.Dir(link), 0o700)
	if err := os.Symlink(filepath.Join(dir, "dotfiles", "settings.json"), link); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadHome(link, MaxSize); err != nil || string(data) != `{"from": "dotfiles"}` {
		t.Errorf("a linked settings.json: %q %v", data, err)
	}
}
