// Protected folders made without following a planted link.

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestEnsureDirsRefusesSymlinkedParent(t *testing.T) {
	f, s := gitFixture(t)
	must(t, os.Rename(filepath.Join(f.root, ".git"), filepath.Join(f.outside, "git")))
	must(t, os.Symlink(filepath.Join(f.outside, "git"), filepath.Join(f.root, ".git")))
	s.Command = "true"
	if _, err := Run(context.Background(), s); err == nil {
		t.Error("Run created a protected folder through a symlink")
	}
	if _, err := os.Stat(filepath.Join(f.outside, "git", "hooks")); err == nil {
		t.Error("hooks folder created outside the root")
	}
	// Negative control: a plain MkdirAll follows the planted symlink out of the root.
	must(t, os.MkdirAll(filepath.Join(f.root, ".git", "hooks"), 0o755))
	if _, err := os.Stat(filepath.Join(f.outside, "git", "hooks")); err != nil {
		t.Error("negative control: MkdirAll did not follow the symlink")
	}
}

// TestEnsureDirsRaceWithSymlinkSwap: a command still running swaps a nested repository's .git for a symlink to
// outside the root, over and over, while the broker creates that repository's hooks folder for the next command;
// the folder is never created outside the root.
// Found by red team.
func TestEnsureDirsRaceWithSymlinkSwap(t *testing.T) {
	f := newFixture(t)
	gitDir := filepath.Join(f.root, "sub", ".git")
	must(t, os.MkdirAll(gitDir, 0o755))
	link := filepath.Join(f.root, "sub", "link")
	must(t, os.Symlink(f.outside, link))
	stop := make(chan struct{})
	swapped := make(chan struct{})
	go func() {
		defer close(swapped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			// .git is a folder, then the symlink, then the folder again: one atomic exchange each time.
			_ = unix.Renameat2(unix.AT_FDCWD, gitDir, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
		}
	}()
	escaped := false
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && !escaped {
		_, _ = EnsureProtectedDirs(f.root, []string{filepath.Join(gitDir, "hooks")})
		if _, err := os.Lstat(filepath.Join(f.outside, "hooks")); err == nil {
			escaped = true
		}
		os.Remove(filepath.Join(gitDir, "hooks"))
		os.Remove(filepath.Join(link, "hooks"))
	}
	close(stop)
	<-swapped
	if escaped {
		t.Fatal("the hooks folder was created outside the root through the swapped symlink")
	}
	// Negative control: a plain mkdir through the symlink lands outside.
	target := gitDir
	if fi, _ := os.Lstat(gitDir); fi.Mode()&os.ModeSymlink == 0 {
		target = link
	}
	must(t, os.Mkdir(filepath.Join(target, "hooks"), 0o755))
	if _, err := os.Stat(filepath.Join(f.outside, "hooks")); err != nil {
		t.Error("negative control: mkdir through the symlink did not land outside")
	}
}

// A repository whose .git folder this user may not write (a vendored checkout unpacked read-only, another user's, a
// read-only file system) and that has no hooks folder: commands run (every one failed: "create protected folder
// …: permission denied"), and a command cannot make the folder writable to plant a hook, because the folder that
// refused the hooks folder is read-only in its place. As root the hooks folder is made and covered; the refusal is
// tested as nobody (TestAsNobody).
func TestEverydayGitFolderNotWritable(t *testing.T) {
	f, s := gitFixture(t)
	gitDir := filepath.Join(f.root, ".git")
	must(t, os.Chmod(gitDir, 0o555))
	t.Cleanup(func() { os.Chmod(gitDir, 0o755) })
	s.Command = "git status --short >/dev/null && echo ran"
	r, err := Run(context.Background(), s)
	if err != nil || r.ExitCode != 0 || out(r) != "ran" {
		t.Fatalf("a plain command in a repository with a read-only .git: %v %+v", err, r)
	}
	plant := "chmod u+w .git && mkdir -p .git/hooks && printf '#!/bin/sh\\n' > .git/hooks/pre-commit && echo OK planted"
	s.Command = plant
	r, err = Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	expectDenied(t, "plant a hook in a read-only .git", r)
	if _, err := os.Lstat(filepath.Join(gitDir, "hooks", "pre-commit")); err == nil {
		t.Fatal("a hook was planted")
	}
	// Negative control: with nothing protected, the same command plants it.
	os.Chmod(gitDir, 0o555)
	s.ReadOnly, s.EnsureDirs = nil, nil
	r, err = Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	expectWorked(t, "plant a hook with nothing protected", r)
}
