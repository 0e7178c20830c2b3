//go:build linux

package fsops

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadNumberedAndNotes(t *testing.T) {
	r, root, _ := fixture(t)
	var sb strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&sb, "line %d\n", i)
	}
	writeFile(t, filepath.Join(root, "a.txt"), sb.String())
	ctx := context.Background()

	res, err := r.read(ctx, ReadRequest{Path: "a.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Lines != 2000 || !strings.HasPrefix(res.Text, "     1\tline 1\n     2\tline 2\n") ||
		!strings.HasSuffix(res.Text, "  2000\tline 2000\n") || !res.More {
		t.Fatalf("default read: lines=%d more=%v text starts %q", res.Lines, res.More, res.Text[:40])
	}
	if !strings.Contains(res.Note, "offset=2001") {
		t.Fatalf("note %q does not say how to read on", res.Note)
	}
	if res.Location != (Location{Path: filepath.Join(root, "a.txt"), Line: 1}) {
		t.Fatalf("location %+v", res.Location)
	}

	res, err = r.read(ctx, ReadRequest{Path: "a.txt", Offset: 2499, Limit: 10})
	if err != nil || res.Text != "  2499\tline 2499\n  2500\tline 2500\n" || res.More || res.Note != "" {
		t.Fatalf("tail read = %+v, %v", res, err)
	}
	res, err = r.read(ctx, ReadRequest{Path: "a.txt", Offset: 3000})
	if err != nil || res.Lines != 0 || !strings.Contains(res.Note, "only 2500 lines") {
		t.Fatalf("read past the end = %+v, %v", res, err)
	}

	// The byte cap: 2000 lines of 1000 characters are ~2 MB, more than 256 KiB.
	long := strings.Repeat(strings.Repeat("x", 1000)+"\n", 2000)
	writeFile(t, filepath.Join(root, "wide.txt"), long)
	res, err = r.read(ctx, ReadRequest{Path: "wide.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Text) > r.Limits.ReadBytes || res.Lines == 0 || !res.More ||
		!strings.Contains(res.Note, "256 KiB") || !strings.Contains(res.Note, fmt.Sprintf("offset=%d", res.Lines+1)) {
		t.Fatalf("byte cap: %d bytes, %d lines, note %q", len(res.Text), res.Lines, res.Note)
	}

	writeFile(t, filepath.Join(root, "empty"), "")
	res, err = r.read(ctx, ReadRequest{Path: "empty"})
	if err != nil || res.Text != "" || res.Note != "the file is empty" {
		t.Fatalf("empty file = %+v, %v", res, err)
	}
	_, err = r.read(ctx, ReadRequest{Path: "missing"})
	wantErr(t, "read a missing file", err, ErrNotFound)
}

func TestReadInvalidUTF8(t *testing.T) {
	r, root, _ := fixture(t)
	writeFile(t, filepath.Join(root, "latin1"), "ok\ncaf\xe9 \xff\xfe\n")
	res, err := r.read(context.Background(), ReadRequest{Path: "latin1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "     1\tok\n     2\tcaf\uFFFD \uFFFD\n" || !strings.Contains(res.Note, "U+FFFD") {
		t.Fatalf("invalid UTF-8: text %q note %q", res.Text, res.Note)
	}
}

func TestReadOneHugeLine(t *testing.T) {
	r, root, _ := fixture(t)
	line := strings.Repeat("é", 5<<20) // 10 MB, 5 Mi characters, one line
	writeFile(t, filepath.Join(root, "min.js"), line+"\nnext\n")
	res, err := r.read(context.Background(), ReadRequest{Path: "min.js"})
	if err != nil {
		t.Fatal(err)
	}
	want := "     1\t" + strings.Repeat("é", 2000) + "\n     2\tnext\n"
	if res.Text != want {
		t.Fatalf("huge line: got %d bytes, want %d", len(res.Text), len(want))
	}
	if !strings.Contains(res.Note, "cut") || !strings.Contains(res.Note, "line 1") {
		t.Fatalf("note %q does not say line 1 was cut", res.Note)
	}
}

func TestWriteAndEdit(t *testing.T) {
	r, root, _ := fixture(t)
	// A new file in a new folder.
	p, err := r.prepareWrite("new/dir/a.go", []byte("package a\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Existed || p.Old != nil || p.OldHash != sha256.Sum256(nil) || p.Abs != filepath.Join(root, "new/dir/a.go") {
		t.Fatalf("pending for a new file: %+v", p)
	}
	if err := r.commit(p, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(root, "new/dir/a.go")); got != "package a\n" {
		t.Fatalf("wrote %q", got)
	}

	// The mode is kept.
	script := filepath.Join(root, "run.sh")
	writeFile(t, script, "echo a\necho a\necho b\n")
	os.Chmod(script, 0o750)
	_, err = r.prepareEdit("run.sh", "echo c", "x", false)
	wantErr(t, "edit with no match", err, ErrNoMatch)
	_, err = r.prepareEdit("run.sh", "echo a", "x", false)
	wantErr(t, "edit with two matches", err, ErrManyMatches)
	if !strings.Contains(err.Error(), "2 matches") {
		t.Fatalf("error %q does not say how many matches", err)
	}
	p, err = r.prepareEdit("run.sh", "echo a", "echo z", true)
	if err != nil || p.Matches != 2 || string(p.New) != "echo z\necho z\necho b\n" || string(p.Old) != "echo a\necho a\necho b\n" {
		t.Fatalf("replace_all = %+v, %v", p, err)
	}
	var snap []byte
	if err := r.commit(p, func(abs string, old []byte, existed bool) error {
		if abs != script || !existed {
			return fmt.Errorf("snapshot of %s existed=%v", abs, existed)
		}
		snap = bytes.Clone(old)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(script)
	if st.Mode().Perm() != 0o750 || readFile(t, script) != "echo z\necho z\necho b\n" {
		t.Fatalf("after edit: mode %v content %q", st.Mode(), readFile(t, script))
	}
	// Undo: the snapshot is the pre-image, and writing it back restores the file.
	if string(snap) != "echo a\necho a\necho b\n" {
		t.Fatalf("snapshot %q", snap)
	}
	p, _ = r.prepareWrite("run.sh", snap)
	if err := r.commit(p, nil); err != nil || readFile(t, script) != string(snap) {
		t.Fatalf("undo: %v", err)
	}
	_, err = r.prepareEdit("missing.go", "a", "b", false)
	wantErr(t, "edit a missing file", err, ErrNotFound)
	_, err = r.prepareWrite("new", []byte("x"))
	wantErr(t, "write over a folder", err, ErrIsDir)

	// No temp file is left behind.
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".garuda-") {
			t.Fatalf("temp file left: %s", e.Name())
		}
	}
}

func TestCommitRefusesChangedFile(t *testing.T) {
	r, root, _ := fixture(t)
	f := filepath.Join(root, "f.txt")
	writeFile(t, f, "v1\n")

	p, _ := r.prepareEdit("f.txt", "v1", "v2", false)
	writeFile(t, f, "someone else\n")
	wantErr(t, "commit after the file changed", r.commit(p, nil), ErrChanged)
	if !strings.Contains(r.commit(p, nil).Error(), "the file changed since the question; ask again") {
		t.Fatal("ErrChanged message")
	}
	if got := readFile(t, f); got != "someone else\n" {
		t.Fatalf("file overwritten: %q", got)
	}

	p, _ = r.prepareWrite("g.txt", []byte("mine\n"))
	writeFile(t, filepath.Join(root, "g.txt"), "theirs\n")
	wantErr(t, "commit after the file appeared", r.commit(p, nil), ErrChanged)

	p, _ = r.prepareWrite("f.txt", []byte("mine\n"))
	os.Remove(f)
	wantErr(t, "commit after the file was deleted", r.commit(p, nil), ErrChanged)

	// An undo snapshot that fails stops the write.
	writeFile(t, f, "v1\n")
	p, _ = r.prepareWrite("f.txt", []byte("v2\n"))
	err := r.commit(p, func(string, []byte, bool) error { return errors.New("disk full") })
	if err == nil || readFile(t, f) != "v1\n" {
		t.Fatalf("commit with a failing snapshot: %v, file %q", err, readFile(t, f))
	}
}

const (
	helperEnv  = "GARUDA_FSOPS_HELPER"
	helperSize = 64 << 20
)

// TestHelperCommit is not a test: it is the child process of TestKilledMidWrite, which kills it during Commit.
func TestHelperCommit(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper process only")
	}
	mode := os.Getenv(helperEnv + "_MODE")
	newContent := bytes.Repeat([]byte("N"), helperSize)
	if mode == "naive" {
		fmt.Println("ready")
		os.WriteFile(filepath.Join(dir, "big"), newContent, 0o644)
		os.Exit(0)
	}
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Limits.EditBytes = 2 * helperSize
	p, err := r.prepareWrite("big", newContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.commit(p, func(string, []byte, bool) error { fmt.Println("ready"); return nil }); err != nil {
		t.Fatal(err)
	}
	os.Exit(0)
}

// killDuringWrite runs the helper and SIGKILLs it as soon as it says it is about to write.
func killDuringWrite(t *testing.T, dir, mode string) []byte {
	t.Helper()
	old := bytes.Repeat([]byte("O"), helperSize)
	if err := os.WriteFile(filepath.Join(dir, "big"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCommit$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir, helperEnv+"_MODE="+mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if line != "ready\n" {
		t.Fatalf("helper said %q", line)
	}
	b, err := os.ReadFile(filepath.Join(dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestKilledMidWrite(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("in the helper")
	}
	dir := t.TempDir()
	got := killDuringWrite(t, dir, "atomic")
	isOld := bytes.Equal(got, bytes.Repeat([]byte("O"), helperSize))
	isNew := bytes.Equal(got, bytes.Repeat([]byte("N"), helperSize))
	if !isOld && !isNew {
		t.Fatalf("after SIGKILL during Commit the file is a mix: %d bytes, %d 'O', %d 'N'",
			len(got), bytes.Count(got, []byte("O")), bytes.Count(got, []byte("N")))
	}
	t.Logf("after SIGKILL during Commit: old=%v new=%v", isOld, isNew)

	// Negative control: a plain os.WriteFile (truncate, then write) killed the same way leaves a torn file.
	got = killDuringWrite(t, t.TempDir(), "naive")
	if len(got) == helperSize && (bytes.Count(got, []byte("O")) == helperSize || bytes.Count(got, []byte("N")) == helperSize) {
		t.Log("control inconclusive: the kill landed before or after the naive write")
	} else {
		t.Logf("control: the naive write left %d bytes (of %d)", len(got), helperSize)
	}
}

func TestCommitOnlyOnceAndOnItsRoot(t *testing.T) {
	r, root, _ := fixture(t)
	writeFile(t, filepath.Join(root, "f"), "v1\n")
	p, err := r.prepareWrite("f", []byte("v2\n"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.commit(p, nil); err == nil {
		t.Fatal("a pending write was committed by another root")
	}
	if err := r.commit(p, nil); err != nil {
		t.Fatal(err)
	}
	// Replaying the same approval fails: the pre-image is gone.
	wantErr(t, "commit twice", r.commit(p, nil), ErrChanged)
}

// A file with CRLF line ends, edited with what read_file shows of it (lines without their "\r"): the edit matches,
// and what it writes keeps the file's CRLF ends. A file with LF ends takes new_string as it is.
func TestEditOfACRLFFileWithWhatReadShows(t *testing.T) {
	r, root, _ := fixture(t)
	writeFile(t, filepath.Join(root, "w.txt"), "one\r\ntwo\r\nthree\r\n")
	res, err := r.read(context.Background(), ReadRequest{Path: "w.txt"})
	if err != nil || strings.Contains(res.Text, "\r") {
		t.Fatalf("read = %q, %v; want the lines without \\r", res.Text, err)
	}
	for _, c := range []struct{ old, new, want string }{
		{"one\ntwo", "1\n2\n2b", "1\r\n2\r\n2b\r\nthree\r\n"},
		{"2b", "x\ny", "1\r\n2\r\nx\r\ny\r\nthree\r\n"},
		{"x\r\ny\r\n", "z\r\n", "1\r\n2\r\nz\r\nthree\r\n"},
	} {
		p, err := r.prepareEdit("w.txt", c.old, c.new, false)
		if err != nil {
			t.Fatalf("edit %q -> %q: %v", c.old, c.new, err)
		}
		if err := r.commit(p, nil); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, filepath.Join(root, "w.txt")); got != c.want {
			t.Fatalf("edit %q -> %q: file %q, want %q", c.old, c.new, got, c.want)
		}
	}
	writeFile(t, filepath.Join(root, "lf.txt"), "one\ntwo\n")
	p, err := r.prepareEdit("lf.txt", "one\ntwo", "a\r\nb", false)
	if err != nil || string(p.New) != "a\r\nb\n" {
		t.Fatalf("edit of an LF file = %q, %v", p.New, err)
	}
}
