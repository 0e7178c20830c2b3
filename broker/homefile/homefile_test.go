package homefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteAtomic replaces the file whole, with the mode asked for, and leaves no temporary file behind.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "credentials")
	os.WriteFile(p, []byte("old content that is longer"), 0o644)
	if err := WriteAtomic(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(data) != "new" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("got %q mode %v", data, fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
	// A folder that does not exist is an error, not a silent success.
	if err := WriteAtomic(filepath.Join(dir, "missing", "f"), nil, 0o600); err == nil {
		t.Fatal("wrote into a missing folder")
	}
}

// An open with NoFollow refuses a symlink planted in place of a file.
func TestNoFollowRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("x"), 0o600)
	link := filepath.Join(dir, "log")
	os.Symlink(target, link)
	if f, err := os.OpenFile(link, os.O_WRONLY|os.O_APPEND|NoFollow, 0o600); err == nil {
		f.Close()
		t.Fatal("opened through a symlink")
	}
	// Control: without the flag the open follows the link.
	f, err := os.OpenFile(link, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"abc": true, "A-b_9": true, strings.Repeat("x", 128): true,
		"": false, strings.Repeat("x", 129): false, "../x": false, "a/b": false, "a\x00": false, "é": false, "a b": false,
		".": false, "a.b": false,
	} {
		if got := ValidID(id); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", id, got, want)
		}
	}
}
