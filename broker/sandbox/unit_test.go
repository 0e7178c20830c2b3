package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBaseEnvAllowlist(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "k1")
	t.Setenv("OPENAI_API_KEY", "k2")
	t.Setenv("SOMEVENDOR_API_KEY", "k3")
	t.Setenv("GARUDA_HOME", "/secret")
	t.Setenv("GITHUB_TOKEN", "k4")
	t.Setenv("LC_ALL", "C.UTF-8")
	t.Setenv("RANDOM_THING", "x")
	env := BaseEnv("/h", "/t", map[string]string{"GOCACHE": "/c/go", "XDG_CACHE_HOME": "/c", "EVIL_API_KEY": "x"})
	joined := strings.Join(env, "\n")
	for _, bad := range []string{"ANTHROPIC", "OPENAI", "SOMEVENDOR", "GARUDA", "GITHUB_TOKEN", "RANDOM_THING", "EVIL"} {
		if strings.Contains(joined, bad) {
			t.Errorf("%s passed into %v", bad, env)
		}
	}
	for _, want := range []string{"HOME=/h", "TMPDIR=/t", "GOCACHE=/c/go", "XDG_CACHE_HOME=/c", "LC_ALL=C.UTF-8"} {
		if !slices.Contains(env, want) {
			t.Errorf("%s missing from %v", want, env)
		}
	}
	if !strings.Contains(joined, "PATH=") {
		t.Errorf("no PATH in %v", env)
	}
}

func TestSnapshotChanged(t *testing.T) {
	d := t.TempDir()
	hooks := filepath.Join(d, "hooks")
	cfg := filepath.Join(d, "config")
	missing := filepath.Join(d, "missing")
	must(t, os.Mkdir(hooks, 0o755))
	must(t, os.WriteFile(cfg, []byte("a"), 0o644))
	paths := []string{hooks, cfg, missing}
	before := SnapshotPaths(paths)
	if ch := Changed(before, SnapshotPaths(paths)); len(ch) != 0 {
		t.Fatalf("unchanged paths reported: %v", ch)
	}
	must(t, os.Mkdir(missing, 0o755))
	if ch := Changed(before, SnapshotPaths(paths)); len(ch) != 0 {
		t.Fatalf("an empty folder where nothing was reported: %v", ch)
	}
	must(t, os.Remove(missing))
	must(t, os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("x"), 0o755))
	must(t, os.WriteFile(cfg, []byte("b"), 0o644))
	must(t, os.Symlink("/etc", missing))
	if ch := Changed(before, SnapshotPaths(paths)); !slices.Equal(ch, []string{cfg, hooks, missing}) {
		t.Fatalf("Changed = %v", ch)
	}
}

func TestOutputSinkHeadTail(t *testing.T) {
	s, err := newOutputSink("", nil)
	must(t, err)
	s.write(bytes.Repeat([]byte("h"), headCap))
	s.write(bytes.Repeat([]byte("m"), 100000))
	s.write(bytes.Repeat([]byte("t"), tailCap))
	out, trunc, _ := s.finish("")
	if !trunc || !bytes.HasPrefix(out, bytes.Repeat([]byte("h"), headCap)) || !bytes.HasSuffix(out, bytes.Repeat([]byte("t"), tailCap)) || !bytes.Contains(out, []byte("[... 100000 bytes cut ...]")) {
		t.Fatalf("bad head/tail (%d bytes)", len(out))
	}
	s, _ = newOutputSink("", nil)
	s.write([]byte("short"))
	if out, trunc, _ := s.finish(""); trunc || string(out) != "short" {
		t.Fatalf("short output: %q %v", out, trunc)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
