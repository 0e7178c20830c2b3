// Protected paths: git's hooks and config read-only for commands, ordinary git work unhindered.

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAttackGitHooksAndConfig(t *testing.T) {
	f, s := gitFixture(t)
	protected := append(append([]string{}, s.ReadOnly...), s.EnsureDirs...)
	if _, err := EnsureProtectedDirs(f.root, s.EnsureDirs); err != nil {
		t.Fatal(err)
	}
	before := snapshotPaths(protected)
	attacks := map[string]string{
		"write .git/hooks/pre-commit": "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit",
		"git config core.fsmonitor":   "git config core.fsmonitor 'echo pwned'",
		"append to .git/config":       "printf '[core]\\n\\tfsmonitor = echo pwned\\n' >> .git/config",
		"replace .git/config": "cp .git/config /tmp/c 2>/dev/null; cp .git/config \"$TMPDIR/c\" && " +
			"echo '[core] fsmonitor = x' >> \"$TMPDIR/c\" && mv -f \"$TMPDIR/c\" .git/config",
		"rename .git/hooks away": "mv .git/hooks .git/hooks.old && mkdir .git/hooks && echo x > .git/hooks/pre-commit",
		"rename .git away":       "mv .git .git.old && cp -a .git.old .git && echo x > .git/hooks/pre-commit",
		"remove .git/config":     "rm -f .git/config && echo '[core] fsmonitor = x' > .git/config",
	}
	for name, cmd := range attacks {
		s.Command = cmd
		r := f.run(s)
		if r.ExitCode == 0 {
			t.Errorf("%s: exit 0 in the sandbox, output %q", name, r.Output)
		}
	}
	if ch := changedPaths(before, snapshotPaths(protected)); len(ch) > 0 {
		t.Errorf("protected paths changed by the sandboxed attacks: %v", ch)
	}
	if _, err := os.Stat(filepath.Join(f.root, ".git.old")); err == nil {
		t.Errorf(".git was renamed away")
	}
	// Negative control: without the sandbox the same hook write works and changedPaths reports it.
	s.Command, s.Unsandboxed = attacks["write .git/hooks/pre-commit"], true
	expectWorked(t, "write .git/hooks/pre-commit", f.run(s))
	if ch := changedPaths(before, snapshotPaths(protected)); len(ch) != 1 || !strings.HasSuffix(ch[0], "hooks") {
		t.Errorf("changedPaths after an unsandboxed hook write = %v, want the hooks folder", ch)
	}
}

func TestEverydayGitMv(t *testing.T) {
	f, s := gitFixture(t)
	must(t, os.WriteFile(filepath.Join(f.root, "a.txt"), []byte("a"), 0o644))
	s.Command = "git add a.txt && mkdir -p sub && git mv a.txt sub/b.txt && git status --short"
	r := f.run(s)
	if r.ExitCode != 0 || !strings.Contains(string(r.Output), "sub/b.txt") {
		t.Fatalf("git mv in the sandbox: exit %d output %q", r.ExitCode, r.Output)
	}
}
