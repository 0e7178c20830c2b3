package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input is refused with a clear error before anything is written: the output folder does not appear, and
// nothing is left beside it.
func TestReleaseBadInput(t *testing.T) {
	for _, c := range []struct {
		version, want string
	}{
		{"", "no version given: run make release VERSION=x.y.z"},
		{"0.16", `version "0.16" is not MAJOR.MINOR.PATCH`},
		{"v0.16.0", `give it without the v (VERSION=0.16.0)`},
		{"0.16.0-rc.1", "without a pre-release or build suffix"},
		{"0.16.0+build", "without a pre-release or build suffix"},
		{"00.16.0", "is not MAJOR.MINOR.PATCH"},
		{"0.16.0 ", "is not MAJOR.MINOR.PATCH"},
		{"latest", "is not MAJOR.MINOR.PATCH"},
	} {
		t.Run(c.version, func(t *testing.T) {
			parent := t.TempDir()
			err := run(options{root: moduleRoot, version: c.version, out: filepath.Join(parent, "dist"), log: &bytes.Buffer{}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("release %q: error %v, want one saying %q", c.version, err, c.want)
			}
			assertNothingWritten(t, parent)
		})
	}
}

// A tree with uncommitted changes to tracked files is refused; untracked files are not changes of the commit, and
// a release that then fails (here: the build) writes nothing either.
func TestReleaseDirtyTree(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull) // the release's own git calls: never the home's configuration
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		if err := gitIn(repo, args...); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module "+module+"\n\ngo 1.26\n")
	write("LICENSE", "license\n")
	write("README.md", "readme\n")
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "first")

	parent := t.TempDir()
	out := filepath.Join(parent, "dist")
	write("README.md", "changed\n")
	err := run(options{root: repo, version: testVersion, out: out, log: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "uncommitted changes to tracked files") || !strings.Contains(err.Error(), "README.md") {
		t.Fatalf("release from a changed tree: error %v, want one naming the uncommitted change", err)
	}
	assertNothingWritten(t, parent)

	// Negative control: the same tree with the change committed and only an untracked file passes the check and
	// gets as far as the build (the repository has no cmd/garuda).
	git("commit", "-q", "-am", "second")
	write("untracked.txt", "x\n")
	err = run(options{root: repo, version: testVersion, out: out, log: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "build for "+buildOrder()[0].name) {
		t.Fatalf("release from a clean tree without sources: error %v, want the build's", err)
	}
	assertNothingWritten(t, parent)
}

// An output folder that is not a previous release is not replaced.
func TestReleaseKeepsOtherFolders(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "docs")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "notes.md"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(options{root: moduleRoot, version: testVersion, out: out, log: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "holds no previous release") {
		t.Fatalf("error %v, want a refusal to replace the folder", err)
	}
	if data, err := os.ReadFile(filepath.Join(out, "notes.md")); err != nil || string(data) != "mine" {
		t.Fatalf("the folder's file is gone or changed: %q, %v", data, err)
	}
	root, _ := filepath.Abs(moduleRoot)
	err = run(options{root: moduleRoot, version: testVersion, out: root, log: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "holds the module itself") {
		t.Fatalf("release into the module's root: error %v, want a refusal", err)
	}
}

// assertNothingWritten fails if parent holds anything: neither the output folder nor a staging folder beside it.
func assertNothingWritten(t *testing.T, parent string) {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("the failed release left %s", filepath.Join(parent, e.Name()))
	}
}
