// Landlock: no write outside the writable places, by any name, link or device node; plan mode's read-only root.

package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestAttackWriteOutsideRoot(t *testing.T) {
	f := newFixture(t)
	target := filepath.Join(f.outside, "pwned")
	cmd := "echo x > " + shq(target)
	expectDenied(t, "write outside the root", f.sandboxed(cmd))
	if _, err := os.Stat(target); err == nil {
		t.Fatal("file written outside the root")
	}
	expectWorked(t, "write outside the root", f.unsandboxed(cmd))
}

func TestAttackHardLinkEscape(t *testing.T) {
	f := newFixture(t)
	victim := filepath.Join(f.outside, "victim")
	must(t, os.WriteFile(victim, []byte("orig\n"), 0o644))
	cmd := "ln " + shq(victim) + " hl && echo pwned >> hl"
	expectDenied(t, "write through a hard link", f.sandboxed(cmd))
	if b, _ := os.ReadFile(victim); string(b) != "orig\n" {
		t.Fatalf("victim changed through a hard link: %q", b)
	}
	os.Remove(filepath.Join(f.root, "hl"))
	if isRoot() {
		expectWorked(t, "write through a hard link", f.unsandboxed(cmd))
	} else {
		t.Log("no negative control: protected_hardlinks stops an unprivileged user linking a file it cannot write")
	}
}

func TestAttackSymlinkEscape(t *testing.T) {
	f := newFixture(t)
	must(t, os.Symlink(f.outside, filepath.Join(f.root, "link")))
	cmd := "echo x > link/pwned"
	expectDenied(t, "write through a symlink", f.sandboxed(cmd))
	if _, err := os.Stat(filepath.Join(f.outside, "pwned")); err == nil {
		t.Fatal("file written through the symlink")
	}
	expectWorked(t, "write through a symlink", f.unsandboxed(cmd))
}

func TestAttackMknod(t *testing.T) {
	f := newFixture(t)
	for _, dir := range []string{f.root, f.tmp} {
		cmd := attackCmd(t, "mknod", filepath.Join(dir, "null"))
		expectDenied(t, "mknod in "+dir, f.sandboxed(cmd))
	}
	if isRoot() {
		expectWorked(t, "mknod", f.unsandboxed(attackCmd(t, "mknod", filepath.Join(f.root, "null"))))
	} else {
		t.Log("no negative control: an unprivileged user cannot mknod even without the sandbox")
	}
}

// TestAttackWriteElsewhere: no write outside the writable places by any other name of a folder (/proc/self/root,
// the init's /proc/1/cwd) nor in the host's shared temp and run folders or the home's caches.
// Found by red team.
func TestAttackWriteElsewhere(t *testing.T) {
	f := newFixture(t)
	name := "garuda-redteam-" + strconv.Itoa(os.Getpid())
	targets := []string{
		"/proc/self/root" + filepath.Join(f.outside, name), "/proc/1/cwd/" + name, "/proc/1/root" + filepath.Join(f.outside, name),
		filepath.Join(f.home, ".cache", name), "/var/tmp/" + name, "/run/" + name, "/tmp/" + name,
	}
	must(t, os.MkdirAll(filepath.Join(f.home, ".cache"), 0o755))
	for _, p := range targets {
		expectDenied(t, "write "+p, f.sandboxed("echo x > "+shq(p)))
	}
	for _, p := range []string{
		filepath.Join(f.outside, name), filepath.Join(f.root, name), filepath.Join(f.home, ".cache", name),
		"/var/tmp/" + name, "/run/" + name, "/tmp/" + name,
	} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s written from the sandbox", p)
			os.Remove(p)
		}
	}
	// Negative control: /proc/self/root reaches the outside folder without the sandbox.
	expectWorked(t, "write through /proc/self/root", f.unsandboxed("echo x > "+shq(targets[0])))
}

func TestPlanModeRootReadOnly(t *testing.T) {
	f := newFixture(t)
	s := f.spec("echo x > inroot; echo y > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"")
	s.ReadOnlyRoot = true
	r := f.run(s)
	if _, err := os.Stat(filepath.Join(f.root, "inroot")); err == nil {
		t.Error("plan mode: wrote in the root")
	}
	if !strings.Contains(string(r.Output), "y") {
		t.Errorf("plan mode: TMPDIR not writable: %q", r.Output)
	}
	r = f.sandboxed("echo x > inroot")
	if _, err := os.Stat(filepath.Join(f.root, "inroot")); err != nil {
		t.Errorf("build mode: could not write in the root: %q", r.Output)
	}
}
