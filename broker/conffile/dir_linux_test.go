package conffile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A project's configuration is read from the folder only, through no symbolic link: not a link out of it, not a
// link to another file of it (which a read rule may hide), not a folder on the way that is a link, not "..", not
// an absolute path. Negative control: os.Root, which the project's settings, instructions and MCP files were read
// with, follows the link inside the folder, and a plain open follows the link out.
func TestReadInFollowsNoLink(t *testing.T) {
	base := t.TempDir()
	proj, outside := filepath.Join(base, "project"), filepath.Join(base, "outside")
	write(t, filepath.Join(outside, "settings.json"), "outside")
	write(t, filepath.Join(proj, "secret.md"), "hidden by a read rule")
	write(t, filepath.Join(proj, "real", "settings.json"), "through a linked folder")
	write(t, filepath.Join(proj, "ok.json"), "ok")
	for link, to := range map[string]string{
		"out.json":    filepath.Join(outside, "settings.json"),
		"AGENTS.md":   "secret.md",
		".garuda":     "real",
		"dotdot.json": "../outside/settings.json",
	} {
		if err := os.Symlink(to, filepath.Join(proj, link)); err != nil {
			t.Fatal(err)
		}
	}
	if data, err := ReadIn(proj, "ok.json", MaxSize); err != nil || string(data) != "ok" {
		t.Fatalf("control: a regular file: %q %v", data, err)
	}
	for _, rel := range []string{"out.json", "AGENTS.md", ".garuda/settings.json", "dotdot.json"} {
		data, err := ReadIn(proj, rel, MaxSize)
		if !errors.Is(err, ErrLink) || !strings.Contains(err.Error(), filepath.Join(proj, rel)+" is a symbolic link") {
			t.Errorf("%s: read %q, error %v", rel, data, err)
		}
	}
	for _, rel := range []string{"../outside/settings.json", filepath.Join(outside, "settings.json")} {
		if data, err := ReadIn(proj, rel, MaxSize); err == nil || !strings.Contains(err.Error(), "leads out of its folder") {
			t.Errorf("%s: read %q, error %v", rel, data, err)
		}
	}
	// Negative controls: what the readers used before.
	r, err := os.OpenRoot(proj)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if f, err := r.Open("AGENTS.md"); err != nil {
		t.Errorf("control: os.Root refused the link inside the folder: %v", err)
	} else {
		data, _ := io.ReadAll(f)
		f.Close()
		if string(data) != "hidden by a read rule" {
			t.Errorf("control: os.Root read %q", data)
		}
	}
	if data, err := os.ReadFile(filepath.Join(proj, "out.json")); err != nil || string(data) != "outside" {
		t.Errorf("control: a plain open of the link out: %q %v", data, err)
	}
}

// The file system of a Dir opens and reads through no link: a name listed as a regular file and swapped for a link
// before it is read is refused (control: os.Root's file system, which commands were read from, follows it).
func TestDirFSReadsNoLink(t *testing.T) {
	base := t.TempDir()
	write(t, filepath.Join(base, "outside.md"), "outside")
	proj := filepath.Join(base, "project")
	write(t, filepath.Join(proj, "cmd", "ok.md"), "ok")
	write(t, filepath.Join(proj, "secret.md"), "secret")
	os.Symlink("../secret.md", filepath.Join(proj, "cmd", "swapped.md"))
	d, err := OpenDir(proj)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fsys, err := d.FS()
	if err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFS(fsys, "cmd/ok.md", MaxSize); err != nil || string(data) != "ok" {
		t.Fatalf("control: %q %v", data, err)
	}
	if fi, err := fs.Lstat(fsys, "cmd/swapped.md"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat does not see the link: %v %v", fi, err)
	}
	if data, err := ReadFS(fsys, "cmd/swapped.md", MaxSize); !errors.Is(err, ErrLink) {
		t.Errorf("read through a link: %q %v", data, err)
	}
	if f, err := fsys.Open("cmd/swapped.md"); !errors.Is(err, ErrLink) {
		t.Errorf("Open through a link: %v", err)
		if f != nil {
			f.Close()
		}
	}
	if ents, err := fs.ReadDir(fsys, "cmd"); err != nil || len(ents) != 2 {
		t.Errorf("list: %v %v", ents, err)
	}
	r, _ := os.OpenRoot(proj)
	defer r.Close()
	if data, err := fs.ReadFile(r.FS(), "cmd/swapped.md"); err != nil || string(data) != "secret" {
		t.Errorf("control: os.Root follows the link: %q %v", data, err)
	}
}
