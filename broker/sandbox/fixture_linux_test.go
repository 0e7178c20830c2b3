// The fixture of the sandbox's tests (a project root, a private temp folder, a home with secrets) and the checks
// of an attack and its negative control.

package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is a project root, a private temp folder and a fake home with secrets, all under t.TempDir().
type fixture struct {
	t                             *testing.T
	base, root, tmp, home, garuda string
	outside                       string // a folder outside every writable place
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{t: t, base: base, root: filepath.Join(base, "proj"), tmp: filepath.Join(base, "tmp"),
		home: filepath.Join(base, "home"), outside: filepath.Join(base, "outside")}
	f.garuda = filepath.Join(f.home, ".garuda")
	for _, d := range []string{f.root, f.tmp, f.outside, filepath.Join(f.home, ".ssh"), f.garuda} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(f.home, ".ssh", "id_ed25519"), []byte("SECRET-SSH-KEY"), 0o600))
	must(t, os.WriteFile(filepath.Join(f.garuda, "credentials"), []byte("SECRET-CREDENTIALS"), 0o600))
	must(t, os.WriteFile(filepath.Join(f.home, ".netrc"), []byte("SECRET-NETRC"), 0o600))
	t.Setenv("GARUDA_HOME", f.garuda)
	return f
}

// spec is the sandboxed spec the broker would build for a command in this fixture.
func (f *fixture) spec(command string) Spec {
	return Spec{
		Command:  command,
		Dir:      f.root,
		Root:     f.root,
		Writable: []string{f.tmp},
		Hidden:   []string{f.garuda, filepath.Join(f.home, ".ssh"), filepath.Join(f.home, ".netrc")},
		Env:      BaseEnv(f.home, f.tmp, nil),
	}
}

func (f *fixture) run(s Spec) *Result {
	f.t.Helper()
	res, err := Run(context.Background(), s)
	if err != nil {
		f.t.Fatalf("Run(%q): %v", s.Command, err)
	}
	return res
}

// sandboxed and unsandboxed run the same command with and without the sandbox (the negative control).
func (f *fixture) sandboxed(command string) *Result { return f.run(f.spec(command)) }

func (f *fixture) unsandboxed(command string) *Result {
	s := f.spec(command)
	s.Unsandboxed = true
	return f.run(s)
}

// gitFixture is a repository whose .git/config and .git/hooks are protected as the broker protects them.
func gitFixture(t *testing.T) (*fixture, Spec) {
	f := newFixture(t)
	git := exec.Command("git", "init", "-q", f.root)
	git.Env = []string{"HOME=" + f.home, "PATH=" + os.Getenv("PATH")}
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	must(t, os.RemoveAll(filepath.Join(f.root, ".git", "hooks")))
	s := f.spec("")
	s.ReadOnly = []string{filepath.Join(f.root, ".git", "config")}
	s.EnsureDirs = []string{filepath.Join(f.root, ".git", "hooks")}
	return f, s
}

func out(r *Result) string { return strings.TrimSpace(string(r.Output)) }

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func expectDenied(t *testing.T, what string, r *Result) {
	t.Helper()
	if r.ExitCode == 0 || strings.Contains(string(r.Output), "OK ") {
		t.Errorf("%s: the attack worked in the sandbox: exit %d output %q", what, r.ExitCode, r.Output)
	}
}

func expectWorked(t *testing.T, what string, r *Result) {
	t.Helper()
	if r.ExitCode != 0 {
		t.Errorf("%s (negative control): the attack failed without the sandbox, so the test proves nothing: exit %d output %q",
			what, r.ExitCode, r.Output)
	}
}

func isRoot() bool { return os.Geteuid() == 0 }

// plain runs a command with no sandbox and no pid namespace: the negative control for attacks a pid namespace stops.
func plain(_ *testing.T, command string) (string, error) {
	out, err := exec.Command("/bin/bash", "-c", command).CombinedOutput()
	return string(out), err
}

// inNewNetNS wraps argv to run in a network namespace of its own (with a user namespace when not root): what a
// network namespace alone gives, without the rest of the sandbox.
func inNewNetNS(argv ...string) *exec.Cmd {
	pre := []string{"--net"}
	if !isRoot() {
		pre = append(pre, "--map-root-user")
	}
	return exec.Command("unshare", append(pre, argv...)...)
}
