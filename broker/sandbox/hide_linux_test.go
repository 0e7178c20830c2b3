// Hidden secrets: out of view by every name, and their folders not renamed away.

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestAttackReadSecrets(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{
		filepath.Join(f.garuda, "credentials"), filepath.Join(f.home, ".ssh", "id_ed25519"), filepath.Join(f.home, ".netrc"),
	} {
		cmd := "cat " + shq(p)
		if r := f.sandboxed(cmd); strings.Contains(string(r.Output), "SECRET") {
			t.Errorf("read %s in the sandbox: %q", p, r.Output)
		}
		if r := f.unsandboxed(cmd); !strings.Contains(string(r.Output), "SECRET") {
			t.Errorf("negative control: could not read %s without the sandbox: %q", p, r.Output)
		}
	}
	if isRoot() {
		// Root-owned system secrets: the command keeps uid 0, so only hiding them keeps them unread.
		if _, err := os.Stat("/etc/shadow"); err == nil {
			if r := f.sandboxed("cat /etc/shadow"); strings.Contains(string(r.Output), "root:") {
				t.Errorf("read /etc/shadow in the sandbox")
			}
			if r := f.unsandboxed("cat /etc/shadow"); !strings.Contains(string(r.Output), "root:") {
				t.Errorf("negative control: /etc/shadow unreadable without the sandbox: %q", r.Output)
			}
		}
	}
	// The folder itself looks empty and cannot be written into.
	r := f.sandboxed("ls -A " + shq(f.garuda) + "; echo x > " + shq(filepath.Join(f.garuda, "new")))
	if r.ExitCode == 0 || strings.Contains(string(r.Output), "credentials") {
		t.Errorf("GARUDA_HOME visible or writable: exit %d %q", r.ExitCode, r.Output)
	}
}

// TestAttackSecretsThroughAnotherMount: the same file system mounted a second time (WSL's /mnt/wslg/distro,
// ostree's /sysroot, a bind mount) shows hidden secrets and protected paths under a second name; they are hidden and
// read-only under every name.
// Found by red team.
func TestAttackSecretsThroughAnotherMount(t *testing.T) {
	if !isRoot() {
		t.Skip("a second mount needs a mount namespace of its own, made as root")
	}
	f, s := gitFixture(t)
	if _, err := EnsureProtectedDirs(f.root, s.EnsureDirs); err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(t.TempDir(), "alias")
	must(t, os.Mkdir(alias, 0o755))
	second := func(p string) string { return filepath.Join(alias, strings.TrimPrefix(p, f.base)) }
	hook := filepath.Join(f.root, ".git", "hooks", "pre-commit")
	cmd := fmt.Sprintf("cat %s %s; echo pwned > %s; echo '[core] fsmonitor = x' >> %s; true",
		shq(second(filepath.Join(f.home, ".ssh", "id_ed25519"))), shq(second(filepath.Join(f.garuda, "credentials"))),
		shq(second(hook)), shq(second(filepath.Join(f.root, ".git", "config"))))
	exe, err := os.Executable()
	must(t, err)
	run := func(unsandboxed string) string { // "unsandboxed", or "" for a sandboxed run
		c := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", `mount --bind "$1" "$2" && shift 2 && exec "$@"`,
			"sh", f.base, alias, exe, attackArg, "broker", f.root, f.tmp, cmd, "hidden="+strings.Join(f.spec("").Hidden, ","),
			"readonly="+strings.Join(append(s.ReadOnly, s.EnsureDirs...), ","), unsandboxed)
		o, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("broker in a mount namespace with a second mount: %v %q", err, o)
		}
		return string(o)
	}
	cfg, _ := os.ReadFile(filepath.Join(f.root, ".git", "config"))
	if o := run(""); strings.Contains(o, "SECRET") {
		t.Errorf("secrets read through a second mount: %q", o)
	}
	if _, err := os.Stat(hook); err == nil {
		t.Errorf("hook written through a second mount")
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, ".git", "config")); string(b) != string(cfg) {
		t.Errorf(".git/config changed through a second mount")
	}
	// Negative control: without the sandbox the second mount shows and writes them.
	if o := run("unsandboxed"); !strings.Contains(o, "SECRET-SSH-KEY") || !strings.Contains(o, "SECRET-CREDENTIALS") {
		t.Errorf("negative control: the second mount did not show the secrets: %q", o)
	}
	if _, err := os.Stat(hook); err != nil {
		t.Errorf("negative control: hook not written through the second mount: %v", err)
	}
}

// TestAttackHiddenParentRenamed: a hidden path cannot be renamed itself (a mount point), but its parent could be,
// and the next command's rule (naming the old path) would then not hide it. Every folder between a writable place
// and a hidden path is a mount point.
// Found by red team.
func TestAttackHiddenParentRenamed(t *testing.T) {
	f := newFixture(t)
	conf := filepath.Join(f.root, "conf")
	must(t, os.MkdirAll(filepath.Join(conf, "keys"), 0o755))
	must(t, os.WriteFile(filepath.Join(conf, "secret.env"), []byte("SECRET-ENV"), 0o644))
	must(t, os.WriteFile(filepath.Join(conf, "keys", "k"), []byte("SECRET-KEY"), 0o644))
	spec := func(cmd string) Spec {
		s := f.spec(cmd)
		s.Hidden = append(s.Hidden, filepath.Join(conf, "secret.env"), filepath.Join(conf, "keys")) // read-deny rules
		return s
	}
	read := "cat conf/secret.env conf/keys/k conf2/secret.env conf2/keys/k 2>/dev/null"
	if r := f.run(spec(read)); strings.Contains(string(r.Output), "SECRET") {
		t.Fatalf("hidden files read: %q", r.Output)
	}
	f.run(spec("mv conf conf2 || { mkdir x && mv conf x/; }"))
	if r := f.run(spec(read + "; cat x/conf/secret.env x/conf/keys/k")); strings.Contains(string(r.Output), "SECRET") {
		t.Errorf("hidden files read after their folder was renamed in the sandbox: %q", r.Output)
	}
	if _, err := os.Stat(conf); err != nil {
		t.Errorf("the hidden files' folder was renamed: %v", err)
	}
	// Negative control: had the folder been renamed, the same rules would not hide the files.
	expectWorked(t, "rename", f.unsandboxed("rm -rf x conf2; mv conf conf2"))
	if r := f.run(spec(read)); !strings.Contains(string(r.Output), "SECRET-ENV") {
		t.Errorf("negative control: renamed hidden file not read: %q", r.Output)
	}
}

// TestAttackHiddenFolderGrowsDuringTheRun: a folder hidden whole with a folder of it revealed ($GARUDA_HOME with its
// hooks/, as hooks run) shows the revealed folder read-only and nothing else of it, not even a file that appears at
// its top while the command runs (credentials `garuda setup` writes then). The command waits until the test has
// written the file, then tries to read it. Control: the same folder hidden entry by entry (each entry that exists
// when the command starts, hooks/ excepted) shows the new file.
func TestAttackHiddenFolderGrowsDuringTheRun(t *testing.T) {
	f := newFixture(t)
	hooks := filepath.Join(f.garuda, "hooks")
	must(t, os.MkdirAll(hooks, 0o755))
	must(t, os.WriteFile(filepath.Join(hooks, "lib.sh"), []byte("echo from-lib\n"), 0o755))
	late := filepath.Join(f.garuda, "late.txt")
	cmd := fmt.Sprintf(`touch started; for i in $(seq 1000); do [ -e written ] && break; sleep 0.02; done; `+
		`cat %[1]s/late.txt %[1]s/credentials; %[1]s/hooks/lib.sh; echo x > %[1]s/hooks/new || echo hooks-read-only`, shq(f.garuda))
	run := func(s Spec) string {
		t.Helper()
		for _, p := range []string{filepath.Join(f.root, "started"), filepath.Join(f.root, "written"), late} {
			os.Remove(p)
		}
		done := make(chan *Result, 1)
		go func() {
			r, err := Run(context.Background(), s)
			if err != nil {
				t.Error(err)
				r = &Result{}
			}
			done <- r
		}()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(f.root, "started")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the command never started")
			}
		}
		must(t, os.WriteFile(late, []byte("LATE-SECRET\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(f.root, "written"), nil, 0o644))
		return string((<-done).Output)
	}
	s := f.spec(cmd)
	s.Reveal = []string{hooks}
	o := run(s)
	if strings.Contains(o, "SECRET") || !strings.Contains(o, "from-lib") || !strings.Contains(o, "hooks-read-only") {
		t.Errorf("a folder hidden whole with hooks/ revealed: %q", o)
	}
	if _, err := os.Stat(filepath.Join(hooks, "new")); err == nil {
		t.Error("the revealed folder was written from the sandbox")
	}
	// Negative control: the entry-by-entry cover hides what existed at the start and not what came after.
	old := f.spec(cmd)
	old.Hidden = slices.DeleteFunc(old.Hidden, func(p string) bool { return p == f.garuda })
	entries, err := os.ReadDir(f.garuda)
	must(t, err)
	for _, e := range entries {
		if e.Name() != "hooks" && e.Name() != "late.txt" {
			old.Hidden = append(old.Hidden, filepath.Join(f.garuda, e.Name()))
		}
	}
	if o := run(old); !strings.Contains(o, "LATE-SECRET") || strings.Contains(o, "SECRET-CREDENTIALS") || !strings.Contains(o, "from-lib") {
		t.Errorf("negative control: the entry-by-entry cover did not show the new file: %q", o)
	}
}

// TestAttackRevealedFolderIsALink: a revealed folder that is a symbolic link (to ~/.ssh here) would bind its target
// back into view; the run is refused. Control: the link reaches the key outside the sandbox.
func TestAttackRevealedFolderIsALink(t *testing.T) {
	f := newFixture(t)
	hooks := filepath.Join(f.garuda, "hooks")
	must(t, os.Symlink(filepath.Join(f.home, ".ssh"), hooks))
	s := f.spec("cat " + shq(filepath.Join(hooks, "id_ed25519")))
	s.Reveal = []string{hooks}
	r, err := Run(context.Background(), s)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a revealed folder that is a link: %v %+v", err, r)
	}
	if r != nil && strings.Contains(string(r.Output), "SECRET") {
		t.Errorf("the key was read through the revealed link: %q", r.Output)
	}
	if r := f.unsandboxed(s.Command); !strings.Contains(string(r.Output), "SECRET-SSH-KEY") {
		t.Errorf("negative control: the link did not reach the key: %q", r.Output)
	}
}

// A revealed folder that does not exist, or a file in its place, leaves its hidden folder empty; a folder hidden
// twice (root's /root/.garuda is among the system's secrets, and may be $GARUDA_HOME too) still shows what it
// reveals; a revealed path outside every hidden folder is refused.
func TestRevealEdges(t *testing.T) {
	f := newFixture(t)
	hooks := filepath.Join(f.garuda, "hooks")
	s := f.spec("ls -A " + shq(f.garuda) + "; echo listed")
	s.Reveal = []string{hooks}
	if r := f.run(s); out(r) != "listed" {
		t.Errorf("a missing revealed folder: %q", r.Output)
	}
	must(t, os.WriteFile(hooks, []byte("SECRET-FILE"), 0o644))
	if r := f.run(s); out(r) != "listed" {
		t.Errorf("a file where the revealed folder would be: %q", r.Output)
	}
	must(t, os.Remove(hooks))
	must(t, os.MkdirAll(hooks, 0o755))
	must(t, os.WriteFile(filepath.Join(hooks, "lib.sh"), []byte("echo from-lib\n"), 0o755))
	s = f.spec(shq(filepath.Join(hooks, "lib.sh")))
	s.Hidden = append(s.Hidden, f.garuda+"/")
	s.Reveal = []string{hooks}
	if r := f.run(s); out(r) != "from-lib" {
		t.Errorf("a folder hidden twice: %q", r.Output)
	}
	s = f.spec("true")
	s.Reveal = []string{filepath.Join(f.outside, "x")}
	if _, err := Run(context.Background(), s); err == nil || !strings.Contains(err.Error(), "not inside a hidden folder") {
		t.Errorf("a revealed path outside the hidden folders: %v", err)
	}
}
