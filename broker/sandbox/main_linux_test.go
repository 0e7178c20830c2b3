package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	MaybeRunHelper()
	if len(os.Args) > 2 && os.Args[1] == attackArg {
		os.Exit(runAttack(os.Args[2:])) // the one helper process of this package's tests
	}
	restore := isolateMemoryCgroup()
	code := m.Run()
	restore()
	os.Exit(code)
}

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

func out(r *Result) string { return strings.TrimSpace(string(r.Output)) }

func TestRunEcho(t *testing.T) {
	f := newFixture(t)
	r := f.sandboxed("echo hello; echo err >&2; exit 3")
	if r.ExitCode != 3 || out(r) != "hello\nerr" {
		t.Fatalf("got exit %d output %q notices %v", r.ExitCode, r.Output, r.Notices)
	}
}

func TestProbe(t *testing.T) {
	rep := Probe()
	for _, f := range rep.Features {
		t.Logf("%-22s %-5v %s", f.Name, f.Enforced, f.Detail)
	}
	if m := rep.Missing(); len(m) > 0 {
		t.Errorf("missing on this machine: %v", m)
	}
}
