package attacks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// TestDeferredWhatTheEnclosingRepositoryNames: with the project folder a part of a larger repository (a package of
// a monorepo), what that repository's config points git at inside the project — its core.hooksPath folder, a program
// it names — is read-only for commands, as the root's own repository's is: git runs them on the user's next commit
// or status anywhere in the repository. Controls: outside the sandbox the plant runs; with the config pointing
// elsewhere the sandboxed command's plant stays.
func TestDeferredWhatTheEnclosingRepositoryNames(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	const attack = `mkdir -p hooks tools && printf '#!/bin/sh\ntouch "$(git rev-parse --show-toplevel)/PWNED"\n' > hooks/pre-commit && ` +
		`chmod +x hooks/pre-commit && printf '#!/bin/sh\ntouch "$PWD/PWNED2"\n' > tools/fsm && chmod +x tools/fsm`
	run := func(pointed, sandboxed bool) (mono, root string, res *execv1.Result) {
		mono = t.TempDir()
		root = filepath.Join(mono, "packages", "app")
		os.MkdirAll(root, 0o755)
		script := "git init -q"
		if pointed {
			script += " && git config core.hooksPath packages/app/hooks && git config core.fsmonitor packages/app/tools/fsm"
		}
		setup(t, mono, script)
		e := brokertest.NewAt(t, root, filepath.Join(t.TempDir(), "garuda"))
		c := e.Client()
		sid := e.Open(c)
		if sandboxed {
			return mono, root, brokertest.Sh(t, c, sid, attack)
		}
		return mono, root, unsandboxedSh(t, c, sid, attack)
	}
	ran := func(mono string) (commit, status bool) {
		asUser(t, mono, "commit", "-q", "--allow-empty", "-m", "x")
		asUser(t, mono, "status")
		return brokertest.Exists(filepath.Join(mono, "PWNED")), brokertest.Exists(filepath.Join(mono, "PWNED2"))
	}
	if mono, _, res := run(true, false); !all(ran(mono)) {
		t.Fatalf("control: outside the sandbox git did not run the plants: %s", res.GetContent())
	}
	if _, root, res := run(false, true); !brokertest.Exists(filepath.Join(root, "hooks/pre-commit")) {
		t.Fatalf("control: with nothing pointed there the command's files should stay: %s", res.GetContent())
	}
	mono, _, res := run(true, true)
	if commit, status := ran(mono); commit || status {
		t.Errorf("git ran what a sandboxed command left where the enclosing repository points (hook %v, fsmonitor %v): %s",
			commit, status, res.GetContent())
	}
}

// TestDeferredWhatAWorktreesRepositoryNames: with the project folder a worktree of a repository kept elsewhere (git
// worktree add: its .git is a file naming a folder outside), what that repository points git at inside the worktree
// — a core.hooksPath relative to the work tree, the config of the hook manager whose hook it has installed — is
// read-only for commands as in the repository itself. Controls: outside the sandbox the plant runs.
func TestDeferredWhatAWorktreesRepositoryNames(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	for _, tc := range []struct{ name, before, attack string }{
		{"core.hooksPath", "git config core.hooksPath .githooks",
			`mkdir -p .githooks && printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > .githooks/pre-commit && chmod +x .githooks/pre-commit`},
		{"the installed hook manager's config", "echo 'echo ok > OK' > .pre-commit-config.yaml && git add . && " + preCommitHook,
			"echo 'touch PWNED' > .pre-commit-config.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(sandboxed bool) (string, *execv1.Result) {
				main := t.TempDir()
				root := filepath.Join(filepath.Dir(main), "wt-"+filepath.Base(main))
				t.Cleanup(func() { os.RemoveAll(root) })
				setup(t, main, "git init -q && "+tc.before+" && git commit -q --allow-empty -m x && git worktree add -q "+root)
				e := brokertest.NewAt(t, root, filepath.Join(t.TempDir(), "garuda"))
				c := e.Client()
				sid := e.Open(c)
				if sandboxed {
					return root, brokertest.Sh(t, c, sid, tc.attack)
				}
				return root, unsandboxedSh(t, c, sid, tc.attack)
			}
			root, res := run(false)
			if asUser(t, root, "commit", "-q", "--allow-empty", "-m", "y"); !brokertest.Exists(filepath.Join(root, "PWNED")) {
				t.Fatalf("control: outside the sandbox the plant did not run: %s", res.GetContent())
			}
			root, res = run(true)
			asUser(t, root, "commit", "-q", "--allow-empty", "-m", "y")
			if brokertest.Exists(filepath.Join(root, "PWNED")) {
				t.Errorf("git ran what a sandboxed command planted where the worktree's repository points: %s", res.GetContent())
			}
		})
	}
}

// TestDeferredWhatANestedWorktreesRepositoryNames: the same for a worktree nested in the project (vendor/lib, whose
// .git file names a repository outside): what that repository points git at inside it is read-only for commands.
// Control: outside the sandbox the planted hook runs.
func TestDeferredWhatANestedWorktreesRepositoryNames(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	const attack = `mkdir -p vendor/lib/.githooks && printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > vendor/lib/.githooks/pre-commit && ` +
		`chmod +x vendor/lib/.githooks/pre-commit`
	for _, sandboxed := range []bool{false, true} {
		e := brokertest.New(t)
		repo := t.TempDir()
		setup(t, repo, "git init -q && git config core.hooksPath .githooks && git commit -q --allow-empty -m x && "+
			"git worktree add -q "+e.Root+"/vendor/lib")
		c := e.Client()
		sid := e.Open(c)
		var res *execv1.Result
		if sandboxed {
			res = brokertest.Sh(t, c, sid, attack)
		} else {
			res = unsandboxedSh(t, c, sid, attack)
		}
		asUser(t, filepath.Join(e.Root, "vendor/lib"), "commit", "-q", "--allow-empty", "-m", "y")
		switch ran := brokertest.Exists(filepath.Join(e.Root, "vendor/lib/PWNED")); {
		case !sandboxed && !ran:
			t.Fatalf("control: outside the sandbox the planted hook did not run: %s", res.GetContent())
		case sandboxed && ran:
			t.Errorf("git ran a hook a sandboxed command planted where a nested worktree's repository points: %s", res.GetContent())
		}
	}
}

// Found by red team (against the class-2 pass's enclosing repository). What the repository the project lies in
// points git at was read only while the project had no .git of its own: a first command's `git init` (its new
// repository neutralised, but there) made the guard forget the enclosing repository, and a second command's hook in
// the folder the monorepo's core.hooksPath names stayed, to run on the user's next commit anywhere else in the
// monorepo. Now the enclosing repository is read whether the project has a .git or not. Control:
// TestDeferredWhatTheEnclosingRepositoryNames (outside the sandbox the hook runs).
func TestRedTeamEnclosingRepositoryNotForgottenAfterGitInit(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	mono := t.TempDir()
	root := filepath.Join(mono, "packages", "app")
	os.MkdirAll(root, 0o755)
	setup(t, mono, "git init -q && git config core.hooksPath packages/app/hooks")
	e := brokertest.NewAt(t, root, filepath.Join(t.TempDir(), "garuda"))
	c := e.Client()
	sid := e.Open(c)
	brokertest.Sh(t, c, sid, "git init -q")
	res := brokertest.Sh(t, c, sid, `mkdir -p hooks && printf '#!/bin/sh\ntouch "$(git rev-parse --show-toplevel)/PWNED"\n' > `+
		`hooks/pre-commit && chmod +x hooks/pre-commit`)
	asUser(t, mono, "commit", "-q", "--allow-empty", "-m", "x")
	if brokertest.Exists(filepath.Join(mono, "PWNED")) {
		t.Errorf("git ran a hook a command left where the monorepo points, after a git init in the project: %s", res.GetContent())
	}
}
