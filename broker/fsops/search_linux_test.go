//go:build linux

package fsops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tree writes files (path → content) under root and gives each an mtime in the order given, the last newest.
func tree(t *testing.T, root string, files [][2]string) {
	t.Helper()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, f := range files {
		p := filepath.Join(root, f[0])
		writeFile(t, p, f[1])
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
}

func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func TestGlobGitignoreAndOrder(t *testing.T) {
	r, root, outside := fixture(t)
	tree(t, root, [][2]string{
		{".gitignore", "*.log\n!keep.log\nbuild/\n/top.txt\n"},
		{"a.go", "package a\n"},
		{"debug.log", "x\n"},
		{"keep.log", "x\n"},
		{"build/out.go", "package out\n"},
		{"top.txt", "x\n"},
		{"pkg/top.txt", "x\n"},
		{"pkg/.gitignore", "secret*\n!secret-ok.txt\n"},
		{"pkg/secret.txt", "x\n"},
		{"pkg/secret-ok.txt", "x\n"},
		{"pkg/b.go", "package b\n"},
		{".git/config", "[core]\n"},
		{".git/info/exclude", "excluded.txt\n"},
		{"excluded.txt", "x\n"},
		{".hidden/c.go", "package c\n"},
	})
	os.Symlink(outside, filepath.Join(root, "link")) // never followed by the walk

	res, err := r.glob(context.Background(), "**/*", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".hidden/c.go", "pkg/b.go", "pkg/secret-ok.txt", "pkg/.gitignore", "pkg/top.txt", "keep.log", "a.go", ".gitignore"}
	if got := lines(res.Text); !slices.Equal(got, want) {
		t.Fatalf("glob **/* (newest first) =\n%q\nwant\n%q", got, want)
	}
	if res.Locations[0].Path != filepath.Join(root, ".hidden/c.go") {
		t.Fatalf("location %+v", res.Locations[0])
	}

	res, err = r.glob(context.Background(), "*.go", "pkg", nil)
	if err != nil || res.Text != "pkg/b.go\n" {
		t.Fatalf("glob *.go in pkg = %q, %v", res.Text, err)
	}
	res, err = r.glob(context.Background(), "**/*.{go,log}", "", nil)
	if err != nil || res.Count != 4 {
		t.Fatalf("glob with braces = %q, %v", res.Text, err)
	}
	res, _ = r.glob(context.Background(), "**/nothing", "", nil)
	if res.Note != "no files found" {
		t.Fatalf("note %q", res.Note)
	}
	_, err = r.glob(context.Background(), "**/*", "../outside", nil)
	wantErr(t, "glob outside the root", err, ErrEscapes)
	_, err = r.glob(context.Background(), "**/*", "link", nil)
	wantErr(t, "glob in a symlink to outside", err, ErrEscapes)
}

func TestGlobCapAndSkipNote(t *testing.T) {
	r, root, _ := fixture(t)
	var files [][2]string
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		files = append(files, [2]string{n + ".txt", n})
	}
	tree(t, root, files)
	r.Limits.ListEntries = 3
	res, err := r.glob(context.Background(), "*.txt", "", func(abs string) bool {
		return filepath.Base(abs) != "d.txt"
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "e.txt\nc.txt\nb.txt\n" || !res.Truncated || res.Count != 4 {
		t.Fatalf("glob cap: %+v", res)
	}
	// A refused file is not counted or mentioned: the answer must not say that it exists.
	if !strings.Contains(res.Note, "showing the 3 newest of 4 files") || strings.Contains(res.Note, "skipped") {
		t.Fatalf("note %q", res.Note)
	}
}

func TestGrep(t *testing.T) {
	r, root, outside := fixture(t)
	writeFile(t, filepath.Join(outside, "leak.txt"), "needle outside\n")
	tree(t, root, [][2]string{
		{".gitignore", "ignored/\n"},
		{"a.go", "package a\n\nfunc Needle() {}\n// needle in lower case\n"},
		{"b/c.txt", "one\ntwo\nneedle here\nthree\nfour\nfive\nsix\nneedle again\n"},
		{"ignored/x.go", "needle\n"},
		{"bin.dat", "needle\x00binary\n"},
		{"denied.txt", "needle\n"},
	})
	os.Symlink(outside, filepath.Join(root, "link"))
	os.Symlink(filepath.Join(outside, "leak.txt"), filepath.Join(root, "leak.txt"))
	ctx := context.Background()
	allow := func(abs string) bool { return filepath.Base(abs) != "denied.txt" }

	res, err := r.grep(ctx, GrepRequest{Pattern: "needle", OutputMode: "content"}, allow)
	if err != nil {
		t.Fatal(err)
	}
	want := "a.go:4:// needle in lower case\nb/c.txt:3:needle here\nb/c.txt:8:needle again\n"
	if res.Text != want {
		t.Fatalf("grep content =\n%s\nwant\n%s", res.Text, want)
	}
	if strings.Contains(res.Note, "skipped") || strings.Contains(res.Note, "denied") {
		t.Fatalf("the note tells of a refused file: %q", res.Note)
	}
	if !slices.Contains(res.Locations, Location{Path: filepath.Join(root, "b/c.txt"), Line: 8}) {
		t.Fatalf("locations %+v", res.Locations)
	}

	res, _ = r.grep(ctx, GrepRequest{Pattern: "needle", CaseInsensitive: true, OutputMode: "count"}, allow)
	if res.Text != "a.go:2\nb/c.txt:2\n" || res.Count != 4 {
		t.Fatalf("grep -i count = %q (%d)", res.Text, res.Count)
	}
	res, _ = r.grep(ctx, GrepRequest{Pattern: "needle", CaseInsensitive: true}, allow)
	if res.Text != "b/c.txt\na.go\n" { // files mode, newest first
		t.Fatalf("grep files = %q", res.Text)
	}
	res, _ = r.grep(ctx, GrepRequest{Pattern: `^needle \w+$`, Glob: "*.txt", Context: 1, OutputMode: "content"}, allow)
	want = "b/c.txt-2-two\nb/c.txt:3:needle here\nb/c.txt-4-three\n--\nb/c.txt-7-six\nb/c.txt:8:needle again\n"
	if res.Text != want {
		t.Fatalf("grep with context =\n%s\nwant\n%s", res.Text, want)
	}
	res, _ = r.grep(ctx, GrepRequest{Pattern: "needle", Path: "b", OutputMode: "files"}, allow)
	if res.Text != "b/c.txt\n" {
		t.Fatalf("grep in b = %q", res.Text)
	}
	res, _ = r.grep(ctx, GrepRequest{Pattern: "nothing here"}, allow)
	if !strings.HasPrefix(res.Note, "no matches") || res.Text != "" {
		t.Fatalf("no match: %+v", res)
	}
	_, err = r.grep(ctx, GrepRequest{Pattern: "("}, nil)
	wantErr(t, "grep with a bad pattern", err, ErrBadPattern)
	_, err = r.grep(ctx, GrepRequest{Pattern: "x", Path: "/etc"}, nil)
	wantErr(t, "grep outside the root", err, ErrEscapes)
}

// TestGrepCRLFLines: in a file with CRLF line ends, which read_file shows without the "\r", a pattern anchored at
// the line's end finds its line, whichever way the pattern is scanned (a literal, the multi-line scan, line by
// line); "\r$" still finds the CRLF lines, and no "\r" is shown.
func TestGrepCRLFLines(t *testing.T) {
	r, root, _ := fixture(t)
	tree(t, root, [][2]string{{"w.txt", "alpha 1\r\nbeta 22\r\ngamma\r\n"}, {"u.txt", "alpha 1\nbeta 22\n"}})
	ctx := context.Background()
	for pattern, want := range map[string]string{
		`alpha 1$`:   "u.txt:1:alpha 1\nw.txt:1:alpha 1\n",
		`\d\d$`:      "u.txt:2:beta 22\nw.txt:2:beta 22\n",
		`^gamma$`:    "w.txt:3:gamma\n",
		`[a-z]+ \d$`: "u.txt:1:alpha 1\nw.txt:1:alpha 1\n",
		`\r$`:        "w.txt:1:alpha 1\nw.txt:2:beta 22\nw.txt:3:gamma\n",
	} {
		res, err := r.grep(ctx, GrepRequest{Pattern: pattern, OutputMode: "content"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSuffix(res.Text, "\n"), "\n")
		slices.Sort(got)
		if strings.Join(got, "\n")+"\n" != want {
			t.Errorf("grep %q =\n%q\nwant\n%q", pattern, res.Text, want)
		}
	}
}

func TestGrepCap(t *testing.T) {
	r, root, _ := fixture(t)
	writeFile(t, filepath.Join(root, "many.txt"), strings.Repeat("match\n", 50))
	r.Limits.ListEntries = 10
	res, err := r.grep(context.Background(), GrepRequest{Pattern: "match", OutputMode: "content"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines(res.Text)) != 10 || !res.Truncated || res.Count != 50 ||
		!strings.Contains(res.Note, "showing 10 of 50 matching lines") {
		t.Fatalf("grep cap: %d lines, note %q", len(lines(res.Text)), res.Note)
	}
	// Long lines are cut in results.
	writeFile(t, filepath.Join(root, "long.txt"), "match"+strings.Repeat("x", 10000)+"\n")
	res, _ = r.grep(context.Background(), GrepRequest{Pattern: "matchx", OutputMode: "content"}, nil)
	if len(res.Text) > 600 || !strings.Contains(res.Text, "[...]") {
		t.Fatalf("long line not cut: %d bytes", len(res.Text))
	}
}

func TestGrepSurvivesTruncatedMapping(t *testing.T) {
	_, root, _ := fixture(t)
	p := filepath.Join(root, "shrunk.txt")
	writeFile(t, p, strings.Repeat("a", os.Getpagesize())) // a full page: no NUL padding to stop early
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, _ := compileMatcher("nomatch", false)
	// The file is one page but is searched as if it were 8 MiB, as when it shrinks after fstat: the pages past its
	// end raise SIGBUS. Without SetPanicOnFault this would kill the test binary, so no negative control runs here.
	if _, ok := searchFD(context.Background(), int(f.Fd()), 2*mmapAbove, 0, "shrunk.txt", m, "files", 0, 500); ok {
		t.Fatal("a file with a fault reported a match")
	}
}

func TestGrepOneFile(t *testing.T) {
	r, root, _ := fixture(t)
	writeFile(t, filepath.Join(root, "d/a.txt"), "x\nneedle\n")
	writeFile(t, filepath.Join(root, "d/b.txt"), "needle\n")
	res, err := r.grep(context.Background(), GrepRequest{Pattern: "needle", Path: "d/a.txt", OutputMode: "content"}, nil)
	if err != nil || res.Text != "d/a.txt:2:needle\n" {
		t.Fatalf("grep one file = %q, %v", res.Text, err)
	}
	res, err = r.grep(context.Background(), GrepRequest{Pattern: "needle", Path: "d/a.txt"}, func(string) bool { return false })
	if err != nil || res.Text != "" || res.Note != "no matches" {
		t.Fatalf("grep one denied file = %+v, %v", res, err)
	}
	_, err = r.grep(context.Background(), GrepRequest{Pattern: "needle", Path: "missing"}, nil)
	wantErr(t, "grep in a missing folder", err, ErrNotFound)
}

func TestCancelled(t *testing.T) {
	r, root, _ := fixture(t)
	writeFile(t, filepath.Join(root, "a.txt"), "needle\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.grep(ctx, GrepRequest{Pattern: "needle"}, nil)
	wantErr(t, "grep with a cancelled context", err, context.Canceled)
	_, err = r.glob(ctx, "**/*", "", nil)
	wantErr(t, "glob with a cancelled context", err, context.Canceled)
	_, err = r.read(ctx, ReadRequest{Path: "a.txt"})
	wantErr(t, "read with a cancelled context", err, context.Canceled)
}

func TestGitignoreAboveTheSearchFolder(t *testing.T) {
	r, root, _ := fixture(t)
	tree(t, root, [][2]string{
		{".gitignore", "*.log\n"},
		{".hidden/.gitignore", "*.tmp\n"},
		{".hidden/sub/a.tmp", "x\n"},
		{".hidden/sub/b.log", "x\n"},
		{".hidden/sub/c.go", "x\n"},
	})
	res, err := r.glob(context.Background(), "**/*", ".hidden/sub", nil)
	if err != nil || res.Text != ".hidden/sub/c.go\n" {
		t.Fatalf("glob in .hidden/sub = %q, %v; the .gitignore files of the root and of .hidden apply", res.Text, err)
	}
	res, err = r.grep(context.Background(), GrepRequest{Pattern: "x", Path: ".hidden/sub"}, nil)
	if err != nil || res.Text != ".hidden/sub/c.go\n" {
		t.Fatalf("grep in .hidden/sub = %q, %v", res.Text, err)
	}
}

func TestSearchThroughSymlinkSeesRealPaths(t *testing.T) {
	r, root, _ := fixture(t)
	writeFile(t, filepath.Join(root, ".git/config"), "url = secret\n")
	writeFile(t, filepath.Join(root, ".env"), "secret=1\n")
	os.Symlink(".git", filepath.Join(root, "docs"))
	os.Symlink(".env", filepath.Join(root, "notes"))
	var asked []string
	// Folders may be searched, files may not; the .gitignore files the walk would read are asked about too, and
	// what matters here is the files.
	allow := func(abs string) bool {
		if abs == filepath.Join(root, ".git") {
			return true
		}
		if base := filepath.Base(abs); base != ".gitignore" && base != "exclude" {
			asked = append(asked, abs)
		}
		return false
	}
	ctx := context.Background()

	res, err := r.grep(ctx, GrepRequest{Pattern: "secret", Path: "docs"}, allow)
	if err != nil || res.Text != "" || !slices.Equal(asked, []string{filepath.Join(root, ".git/config")}) {
		t.Fatalf("grep in a symlink to .git: %+v, %v, allow asked %q", res, err, asked)
	}
	// A link to a file the rules hide is refused before the file is looked at, and says so whether it exists or
	// not.
	for _, exists := range []bool{true, false} {
		if !exists {
			os.Remove(filepath.Join(root, ".env"))
		}
		asked = nil
		_, err = r.grep(ctx, GrepRequest{Pattern: "secret", Path: "notes"}, allow)
		if !errors.Is(err, ErrDenied) || len(asked) == 0 || slices.ContainsFunc(asked,
			func(a string) bool { return a != filepath.Join(root, ".env") }) {
			t.Fatalf("grep of a symlink to .env (exists: %v): %v, allow asked %q", exists, err, asked)
		}
		if _, err := r.read(ctx, ReadRequest{Path: "notes", Recheck: allow}); !errors.Is(err, ErrDenied) {
			t.Fatalf("read of a symlink to .env (exists: %v): %v", exists, err)
		}
	}
	asked = nil
	res, err = r.glob(ctx, "*", "docs", allow)
	if err != nil || res.Text != "" || !slices.Equal(asked, []string{filepath.Join(root, ".git/config")}) {
		t.Fatalf("glob in a symlink to .git: %+v, %v, allow asked %q", res, err, asked)
	}
}

// A cancelled grep stops inside one huge file: a slow pattern (no literal to look for first) over 64 MiB would take
// far longer than the test. Control: the same search without the cancel is still running when the cancelled one has
// returned.
func TestGrepStopsInsideAHugeFile(t *testing.T) {
	dir := t.TempDir()
	line := strings.Repeat("7", 999) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "digits.txt"), []byte(strings.Repeat(line, 64<<10)), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// One pattern is scanned over the buffer, the other (it can match a line break) line by line.
	for _, pat := range []string{`\d{200}[xy]`, `[^x]{200}[yz]`} {
		t.Run(pat, func(t *testing.T) { grepStopsWhenCancelled(t, r, pat) })
	}
}

func grepStopsWhenCancelled(t *testing.T, r *Root, pattern string) {
	req := GrepRequest{Pattern: pattern, OutputMode: "content"}
	all := func(string) bool { return true }

	control, stopControl := context.WithCancel(context.Background())
	defer stopControl()
	controlDone := make(chan struct{})
	go func() { r.grep(control, req, all); close(controlDone) }()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.grep(ctx, req, all); close(done) }()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled grep did not stop inside the file")
	}
	select {
	case <-controlDone:
		t.Skip("control: the search ended by itself this fast; the check above shows nothing here")
	default:
	}
	stopControl()
	<-controlDone
}
