package undo

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// project does real file I/O in a temp root, standing in for the broker's confined file operations.
type project struct {
	t      *testing.T
	store  *Store
	writes int
}

func newProject(t *testing.T) (*project, string) {
	s := Open(filepath.Join(t.TempDir(), "undo"))
	clock := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	s.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	return &project{t: t, store: s}, t.TempDir()
}

func (p *project) write(abs string, content []byte, existed bool) error {
	p.writes++
	if !existed {
		return os.Remove(abs)
	}
	return os.WriteFile(abs, content, 0o644)
}

func (p *project) current(abs string) ([32]byte, bool, error) {
	b, err := os.ReadFile(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return [32]byte{}, false, nil
	}
	return sha256.Sum256(b), err == nil, err
}

// edit does what the broker's write tool does: snapshot, then write.
func (p *project) edit(session, abs string, content []byte) {
	p.t.Helper()
	old, err := os.ReadFile(abs)
	existed := err == nil
	if _, err := p.store.Snapshot(session, abs, old, existed, sha256.Sum256(content)); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(abs, content, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *project) undo(session string) (*Entry, error) {
	return p.store.Undo(session, p.write, p.current)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUndoRestoresExactBytes(t *testing.T) {
	p, root := newProject(t)
	f := filepath.Join(root, "a.bin")
	orig := []byte("line1\r\nNUL\x00 invalid \xff\xfe utf-8\nno newline at end")
	if err := os.WriteFile(f, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	p.edit("s1", f, []byte("rewritten\n"))
	e, err := p.undo("s1")
	if err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, f); !bytes.Equal(got, orig) {
		t.Fatalf("after undo: %q, want %q", got, orig)
	}
	if e.Path != f || !e.Existed || e.Size != int64(len(orig)) {
		t.Fatalf("entry = %+v", e)
	}
	if _, err := p.undo("s1"); !errors.Is(err, ErrNothing) {
		t.Fatalf("second undo = %v, want ErrNothing", err)
	}
}

func TestUndoRefusesWhenTheFileChangedSince(t *testing.T) {
	p, root := newProject(t)
	f := filepath.Join(root, "a.txt")
	os.WriteFile(f, []byte("v1"), 0o644)
	p.edit("s1", f, []byte("v2 by garuda"))
	for _, change := range []struct {
		name string
		do   func()
	}{
		{"edited", func() { os.WriteFile(f, []byte("v3 by the user"), 0o644) }},
		{"deleted", func() { os.Remove(f) }},
	} {
		change.do()
		before, _ := os.ReadFile(f)
		_, err := p.undo("s1")
		if !errors.Is(err, ErrChanged) || err.Error() != f+" changed since Garuda wrote it; undo refused" {
			t.Fatalf("%s: undo = %v; want %q", change.name, err, f+" changed since Garuda wrote it; undo refused")
		}
		if after, _ := os.ReadFile(f); !bytes.Equal(before, after) || p.writes != 0 {
			t.Fatalf("%s: a refused undo touched the file", change.name)
		}
	}
	if l, _ := p.store.List("s1"); len(l) != 1 {
		t.Fatalf("refused undo dropped the snapshot: %+v", l)
	}
	// Control: with the file back as Garuda wrote it, the same undo goes through.
	os.WriteFile(f, []byte("v2 by garuda"), 0o644)
	if _, err := p.undo("s1"); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, f); string(got) != "v1" {
		t.Fatalf("after undo: %q", got)
	}
}

func TestUndosStepBackInOrder(t *testing.T) {
	p, root := newProject(t)
	a, b := filepath.Join(root, "a.txt"), filepath.Join(root, "b.txt")
	os.WriteFile(a, []byte("a0"), 0o644)
	os.WriteFile(b, []byte("b0"), 0o644)
	p.edit("s1", a, []byte("a1"))
	p.edit("s1", b, []byte("b1"))
	p.edit("s1", a, []byte("a2"))
	p.edit("s2", b, []byte("b2 other session")) // another session's change is not s1's to undo
	os.WriteFile(b, []byte("b1"), 0o644)        // (put b back so s1's undo of b is allowed)

	list, err := p.store.List("s1")
	if err != nil || len(list) != 3 || list[0].Path != a || list[1].Path != b || list[2].Path != a {
		t.Fatalf("List = %+v, %v; want a, b, a newest first", list, err)
	}
	want := []struct{ a, b string }{{"a1", "b1"}, {"a1", "b0"}, {"a0", "b0"}}
	for i, w := range want {
		if _, err := p.undo("s1"); err != nil {
			t.Fatalf("undo %d: %v", i+1, err)
		}
		if ga, gb := string(mustRead(t, a)), string(mustRead(t, b)); ga != w.a || gb != w.b {
			t.Fatalf("after undo %d: a=%q b=%q, want %q %q", i+1, ga, gb, w.a, w.b)
		}
	}
	if _, err := p.undo("s1"); !errors.Is(err, ErrNothing) {
		t.Fatalf("undo past the first change = %v, want ErrNothing", err)
	}
	if l, _ := p.store.List("s2"); len(l) != 1 {
		t.Fatalf("s2 lost its snapshot: %+v", l)
	}
}

func TestUndoOfACreatedFileRemovesIt(t *testing.T) {
	p, root := newProject(t)
	f := filepath.Join(root, "new.txt")
	p.edit("s1", f, []byte("created"))
	if _, err := p.undo("s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("created file still there after undo: %v", err)
	}
}

func TestSnapshotOfAWriteThatNeverHappened(t *testing.T) {
	p, root := newProject(t)
	f := filepath.Join(root, "a.txt")
	os.WriteFile(f, []byte("v1"), 0o644)
	id, err := p.store.Snapshot("s1", f, []byte("v1"), true, sha256.Sum256([]byte("v2")))
	if err != nil {
		t.Fatal(err)
	}
	// The file still holds its pre-image: undo drops the entry without writing.
	if _, err := p.undo("s1"); err != nil || p.writes != 0 {
		t.Fatalf("undo = %v with %d writes; want nil, 0", err, p.writes)
	}
	// Drop is the explicit way.
	id, _ = p.store.Snapshot("s1", f, []byte("v1"), true, sha256.Sum256([]byte("v2")))
	if err := p.store.Drop("s1", id); err != nil {
		t.Fatal(err)
	}
	if l, _ := p.store.List("s1"); len(l) != 0 {
		t.Fatalf("after Drop: %+v", l)
	}
}

func TestDamagedSnapshotIsNotWritten(t *testing.T) {
	p, root := newProject(t)
	f := filepath.Join(root, "a.txt")
	os.WriteFile(f, []byte("v1"), 0o644)
	p.edit("s1", f, []byte("v2"))
	l, _ := p.store.List("s1")
	os.WriteFile(filepath.Join(p.store.dir, "s1", l[0].ID+".pre"), []byte("evil"), 0o600)
	if _, err := p.undo("s1"); err == nil || !strings.Contains(err.Error(), "damaged") || p.writes != 0 {
		t.Fatalf("undo = %v, writes %d; want a damaged-snapshot error and no write", err, p.writes)
	}
}

func TestSessionsNewestFirstAndModes(t *testing.T) {
	p, root := newProject(t)
	f := filepath.Join(root, "a.txt")
	os.WriteFile(f, []byte("secret-ish"), 0o644)
	p.edit("old", f, []byte("1"))
	p.edit("mid", f, []byte("2"))
	p.edit("new", f, []byte("3"))
	got, err := p.store.Sessions()
	if err != nil || strings.Join(got, ",") != "new,mid,old" {
		t.Fatalf("Sessions = %v, %v", got, err)
	}
	err = filepath.WalkDir(p.store.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestHostileSessionIDs(t *testing.T) {
	p, root := newProject(t)
	f := filepath.Join(root, "a.txt")
	for _, id := range []string{"", ".", "..", "../escape", "a/b", "/abs", "a\x00b", "a b", strings.Repeat("x", 129)} {
		if _, err := p.store.Snapshot(id, f, nil, false, [32]byte{}); !errors.Is(err, ErrBadSession) {
			t.Errorf("Snapshot(%q) = %v, want ErrBadSession", id, err)
		}
		if _, err := p.undo(id); !errors.Is(err, ErrBadSession) {
			t.Errorf("Undo(%q) = %v, want ErrBadSession", id, err)
		}
		if _, err := p.store.List(id); !errors.Is(err, ErrBadSession) {
			t.Errorf("List(%q) = %v, want ErrBadSession", id, err)
		}
	}
	if _, err := os.Stat(filepath.Dir(p.store.dir) + "/escape"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a hostile id created a folder outside the store")
	}
	// Control: a valid id of the maximum length works.
	if _, err := p.store.Snapshot(strings.Repeat("x", 128), f, nil, false, [32]byte{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.store.Snapshot("s1", "relative/a.txt", nil, false, [32]byte{}); err == nil {
		t.Fatal("Snapshot of a relative path succeeded")
	}
}

// A session keeps its newest maxEntries snapshots: the oldest are forgotten with their pre-images, and the newest
// still undo in order.
func TestSnapshotsBeyondTheBoundAreForgotten(t *testing.T) {
	defer func(n int) { maxEntries = n }(maxEntries)
	maxEntries = 3
	p, root := newProject(t)
	a := filepath.Join(root, "a.txt")
	os.WriteFile(a, []byte("v0"), 0o644)
	for i := 1; i <= 5; i++ {
		p.edit("s1", a, []byte(fmt.Sprintf("v%d", i)))
	}
	list, err := p.store.List("s1")
	if err != nil || len(list) != 3 {
		t.Fatalf("List = %d entries, %v; want the newest 3", len(list), err)
	}
	pres, _ := filepath.Glob(filepath.Join(p.store.dir, "s1", "*.pre"))
	if len(pres) != 3 {
		t.Errorf("%d pre-images on disk, want 3 (the forgotten ones removed): %v", len(pres), pres)
	}
	for _, want := range []string{"v4", "v3", "v2"} {
		if _, err := p.undo("s1"); err != nil {
			t.Fatal(err)
		}
		if got := string(mustRead(t, a)); got != want {
			t.Fatalf("undo gave %q, want %q", got, want)
		}
	}
	if _, err := p.undo("s1"); !errors.Is(err, ErrNothing) {
		t.Fatalf("undo past the bound = %v, want ErrNothing", err)
	}
}
