package guard

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/internal/testenv"
)

// userGit runs git in dir as the user would afterwards, outside any sandbox, with no global or system config.
func userGit(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=u", "-c", "user.email=u@x"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sh runs a shell command in dir: the part of the "command" the guard watches.
func sh(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// guarded runs script under a guard of a fresh root (prepared by setup first) and returns the root and the
// report; with guard false, the same without the guard: the negative control.
func guarded(t *testing.T, setup, script string, guard bool) (string, *Report) {
	t.Helper()
	root := t.TempDir()
	if setup != "" {
		sh(t, root, setup)
	}
	g := New(root, Options{MaxEntries: 10000, Writable: []string{os.TempDir() + "/garuda-guard-test-writable"}})
	defer g.Close()
	w, err := g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	sh(t, root, script)
	if !guard {
		return root, nil
	}
	rep, err := w.Check()
	if err != nil {
		t.Fatal(err)
	}
	return root, rep
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// pwn is a program git would run: it leaves a marker file where it runs.
const pwn = `printf '#!/bin/sh\ntouch "$(dirname "$0")/PWNED"\n' > /tmp/x; `

// gitCase is an attack on git as the user runs it later: setup (the user's project before), attack (the command),
// then git run in the folder in, and marker, which appears when the planted program ran.
type gitCase struct {
	name, setup, attack string
	then                []string // git, in the folder below
	in                  string
	marker              string // created when the planted program ran
}

// run runs the attack without the guard (the control: git runs the planted program) and with it (it must not),
// and checks that the guard's report names what it undid.
func (c gitCase) run(t *testing.T) {
	// Control: without the guard git runs the planted program.
	root, _ := guarded(t, c.setup, c.attack, false)
	userGit(t, filepath.Join(root, c.in), c.then...)
	if !exists(filepath.Join(root, c.marker)) {
		t.Fatalf("control: the attack did not work without the guard")
	}
	root, rep := guarded(t, c.setup, c.attack, true)
	out, _ := userGit(t, filepath.Join(root, c.in), c.then...)
	if exists(filepath.Join(root, c.marker)) {
		t.Errorf("git ran the planted program after the guard (report %+v)\n%s", rep, out)
	}
	if len(rep.Undone) == 0 {
		t.Errorf("the report names nothing undone: %+v", rep)
	}
	t.Logf("undone: %s", strings.Join(rep.Undone, "; "))
}

// TestGuardUndoesWhatGitRunsLater runs each attack of the class as a "command" and then git as the user would.
// Each case's control runs the same without the guard and shows the attack works.
func TestGuardUndoesWhatGitRunsLater(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	cases := []gitCase{
		{name: "nested init with fsmonitor", attack: `git init -q nested && printf '#!/bin/sh\ntouch "$PWD/../PWNED"\n' > fsm && ` +
			`chmod +x fsm &&
			git -C nested config core.fsmonitor "$PWD/fsm"`, in: "nested", then: []string{"status"}, marker: "PWNED"},
		{name: "planted bare repository", attack: `mkdir -p planted/objects planted/refs && echo 'ref: refs/heads/main' > planted/HEAD &&
			printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > fsm && chmod +x fsm &&
			printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = %s/fsm\n' "$PWD" > planted/config`,
			in: "planted", then: []string{"status"}, marker: "PWNED"},
		{name: "hook in a new nested repository", attack: `git init -q nested &&
			printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > nested/.git/hooks/pre-commit && chmod +x nested/.git/hooks/pre-commit`,
			in: "nested", then: []string{"commit", "-q", "--allow-empty", "-m", "x"}, marker: "nested/PWNED"},
		{name: "hooksPath in a new nested repository", attack: `git init -q nested && mkdir nested/hk &&
			printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > nested/hk/pre-commit && chmod +x nested/hk/pre-commit &&
			git -C nested config core.hooksPath hk`,
			in: "nested", then: []string{"commit", "-q", "--allow-empty", "-m", "x"}, marker: "nested/PWNED"},
		{name: "alias and pager", attack: `git init -q nested && git -C nested config alias.st '!touch PWNED' && ` +
			`git -C nested config core.pager 'touch PWNED; cat'`,
			in: "nested", then: []string{"-p", "st"}, marker: "nested/PWNED"},
		{name: "include of a file the command wrote", attack: `git init -q nested && ` +
			`printf '#!/bin/sh\ntouch "$PWD/../PWNED"\n' > fsm && chmod +x fsm &&
			printf '[core]\n\tfsmonitor = %s/fsm\n' "$PWD" > inc.cfg && git -C nested config include.path ../../inc.cfg`,
			in: "nested", then: []string{"status"}, marker: "PWNED"},
		{name: "gitdir file to a planted folder", attack: `mkdir -p w && git init -q --bare pl.git && ` +
			`printf '#!/bin/sh\ntouch "$PWD/../PWNED"\n' > fsm && chmod +x fsm &&
			git --git-dir=pl.git config core.bare false && git --git-dir=pl.git config core.fsmonitor "$PWD/fsm" &&
			echo "gitdir: ../pl.git" > w/.git`,
			in: "w", then: []string{"status"}, marker: "PWNED"},
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
}

// TestGuardRemovesCreatedProtectedFiles: editor files and other protected paths a run creates are removed (there
// was nothing to mount over); the same files, there before the run, are left alone.
func TestGuardRemovesCreatedProtectedFiles(t *testing.T) {
	files := []string{".zed/settings.json", ".zed/tasks.json", ".vscode/tasks.json", ".nvim.lua", "sub/.exrc", ".dir-locals.el",
		".envrc", ".lfsconfig", "x.code-workspace", ".lazy.lua", ".idea/x.xml", ".helix/languages.toml", "mise.toml",
		".config/mise/config.toml", "sub/.mise.local.toml", ".devcontainer/devcontainer.json", ".devcontainer.json"}
	script := ""
	for _, f := range files {
		script += "mkdir -p $(dirname " + f + ") && echo x > " + f + "; "
	}
	root, rep := guarded(t, "", script, true)
	for _, f := range files {
		if exists(filepath.Join(root, f)) {
			t.Errorf("%s is still there (report %+v)", f, rep)
		}
	}
	if exists(filepath.Join(root, ".zed")) {
		t.Errorf(".zed is still there")
	}
	// Control: a file there before the run is the user's, and stays.
	root, rep = guarded(t, "mkdir .zed && echo user > .zed/settings.json", "echo x > notes.txt", true)
	if !exists(filepath.Join(root, ".zed/settings.json")) || len(rep.Undone) != 0 {
		t.Errorf("the user's own .zed/settings.json was touched: %+v", rep)
	}
}

// TestGuardLeavesOrdinaryGitWork: git init and a commit, a clone of a local folder, git config user.name in a
// repository the command created: nothing undone, and git works after.
func TestGuardLeavesOrdinaryGitWork(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	setup := "git init -q src && git -C src commit -q --allow-empty -m one"
	script := "git init -q newproj && cd newproj && git commit -q --allow-empty -m x && git config user.name x && " +
		"cd .. && git clone -q src copy"
	root, rep := guarded(t, setup, script, true)
	if len(rep.Undone) != 0 || len(rep.Errors) != 0 {
		t.Errorf("ordinary work undone: %+v", rep)
	}
	if out, err := userGit(t, filepath.Join(root, "newproj"), "config", "--file", ".git/config",
		"user.name"); err != nil || strings.TrimSpace(out) != "x" {
		t.Errorf("user.name in the new repository: %q %v", out, err)
	}
	if out, err := userGit(t, filepath.Join(root, "copy"), "log", "--oneline"); err != nil || !strings.Contains(out, "one") {
		t.Errorf("the clone: %q %v", out, err)
	}
}

// TestGuardLeavesTheUsersOwnRepositories: a nested repository that was there before the run keeps its config, an
// fsmonitor of the user's own included.
func TestGuardLeavesTheUsersOwnRepositories(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	root, rep := guarded(t, "git init -q mine && git -C mine config core.fsmonitor true", "echo x > file", true)
	if out, _ := userGit(t, filepath.Join(root, "mine"), "config",
		"core.fsmonitor"); strings.TrimSpace(out) != "true" || len(rep.Undone) != 0 {
		t.Errorf("the user's own repository was changed: %q %+v", out, rep)
	}
}

// TestGuardPointedPaths: the folder core.hooksPath names and the config of an installed hook manager are pointed
// at (so protected), and creating one is undone.
func TestGuardPointedPaths(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	setup := `git init -q && git config core.hooksPath .githooks && git init -q web &&
		printf '#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\nexec pre-commit\n' > web/.git/hooks/pre-commit &&
		chmod +x web/.git/hooks/pre-commit`
	root, rep := guarded(t, setup, "mkdir .githooks && echo x > .githooks/pre-commit && echo 'repos: []' > web/.pre-commit-config.yaml", true)
	for _, p := range []string{".githooks", "web/.pre-commit-config.yaml"} {
		if exists(filepath.Join(root, p)) {
			t.Errorf("%s created by the command is still there: %+v", p, rep)
		}
	}
	g := New(root, Options{MaxEntries: 1000})
	defer g.Close()
	s, err := g.Scan()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".githooks", "web/.pre-commit-config.yaml"} {
		if !slices.Contains(s.Pointed(), p) {
			t.Errorf("%s is not pointed at: %v", p, s.Pointed())
		}
	}
}

// TestGuardWalkLimit: past its limit the scan refuses, naming the limit.
func TestGuardWalkLimit(t *testing.T) {
	root := t.TempDir()
	for i := 0; i < 30; i++ {
		os.WriteFile(filepath.Join(root, "f"+strings.Repeat("x", i)), nil, 0o644)
	}
	g := New(root, Options{MaxEntries: 10})
	defer g.Close()
	if _, err := g.Scan(); err == nil || !strings.Contains(err.Error(), "more than 10") {
		t.Errorf("scan past the limit: %v", err)
	}
	g.Configure(Options{MaxEntries: 100})
	if _, err := g.Scan(); err != nil {
		t.Errorf("with a raised limit: %v", err)
	}
}

// TestGuardChecksAgainAndAgain: a long-running process is checked every few seconds against the scan before it
// started; each check undoes what was left since. This is how background processes, MCP servers and hooks use it.
func TestGuardChecksAgainAndAgain(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	root := t.TempDir()
	g := New(root, Options{MaxEntries: 1000})
	defer g.Close()
	w, err := g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i, script := range []string{"git init -q a && git -C a config core.fsmonitor /x", "git -C a config core.fsmonitor /y",
		"mkdir .zed && echo {} > .zed/tasks.json"} {
		sh(t, root, script)
		rep, err := w.Check()
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Undone) == 0 {
			t.Errorf("check %d undid nothing after %q", i, script)
		}
	}
	if out, _ := userGit(t, filepath.Join(root, "a"), "config", "core.fsmonitor"); strings.TrimSpace(out) != "" {
		t.Errorf("core.fsmonitor is %q", out)
	}
}

// TestGuardRemovesLinksIntoWritablePlaces: a repository planted in the session's temp folder (writable, outside
// the root) and linked into the root would run in the root's name; the new link is removed. Control: a link to
// elsewhere stays.
func TestGuardRemovesLinksIntoWritablePlaces(t *testing.T) {
	root, writable := t.TempDir(), t.TempDir()
	g := New(root, Options{MaxEntries: 1000, Writable: []string{writable}})
	defer g.Close()
	w, err := g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(writable, "evil"), 0o755)
	os.Symlink(filepath.Join(writable, "evil"), filepath.Join(root, "tool"))
	os.Symlink("/usr/share", filepath.Join(root, "share"))
	rep, _ := w.Check()
	if exists(filepath.Join(root, "tool")) {
		t.Errorf("the link into the writable place stays: %+v", rep)
	}
	if !exists(filepath.Join(root, "share")) {
		t.Errorf("control: an ordinary link was removed: %+v", rep)
	}
}

// TestGuardIncrementalWalkEqualsFullWalk: the walk that re-reads only changed folders and the full walk find the
// same; a rename of a folder holding a repository is followed.
func TestGuardIncrementalWalkEqualsFullWalk(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	root := t.TempDir()
	sh(t, root, "mkdir -p a/b && git init -q a/b/r")
	g := New(root, Options{MaxEntries: 1000})
	defer g.Close()
	g.Scan()
	sh(t, root, "mv a/b a/c && mkdir -p x/y && git init -q x/y/s")
	inc, _ := g.Scan()
	full, _ := New(root, Options{MaxEntries: 1000}).Scan()
	if got, want := sortedKeysRepo(inc), sortedKeysRepo(full); !slices.Equal(got, want) {
		t.Errorf("incremental scan found %v, a full walk %v", got, want)
	}
}

func sortedKeysRepo(s *Snapshot) []string {
	var out []string
	for k := range s.repos {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestGuardUndoesPastTheLimit: a command that floods the tree past the walk's limit does not keep what it planted;
// the scan after a run walks past the limit, and the next run is refused. Control: a bounded scan stops.
func TestGuardUndoesPastTheLimit(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	root := t.TempDir()
	g := New(root, Options{MaxEntries: 50})
	defer g.Close()
	w, err := g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	sh(t, root, "mkdir flood && for i in $(seq 200); do : > flood/f$i; done; git init -q z && git -C z config core.fsmonitor /x")
	if _, err := g.Scan(); err == nil {
		t.Fatal("control: a bounded scan past the limit did not stop")
	}
	rep, err := w.Check()
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := userGit(t, filepath.Join(root, "z"), "config", "core.fsmonitor"); strings.TrimSpace(out) != "" {
		t.Errorf("core.fsmonitor kept past the limit: %q %+v", out, rep)
	}
	if _, err := g.Begin(); err == nil {
		t.Errorf("the next run was not refused")
	}
}

// TestGuardBareRepositoryHooksFolder: a bare repository without a hooks folder gets one made (empty, to be covered)
// before a run; the guard does not take it for the command's. A file the root's config includes, which did not
// exist, is removed when a command creates it, though it lies inside .git.
func TestGuardBareRepositoryHooksFolder(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	root := t.TempDir()
	sh(t, root, "git init -q && git config include.path extra.cfg && git init -q --bare tools/x.git && rm -rf tools/x.git/hooks")
	g := New(root, Options{MaxEntries: 1000})
	defer g.Close()
	w, err := g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range w.Before().EnsureDirs() {
		os.Mkdir(d, 0o755) // what the broker does before the run
	}
	sh(t, root, "printf '[core]\\n\\tfsmonitor = /x\\n' > .git/extra.cfg")
	rep, _ := w.Check()
	if !exists(filepath.Join(root, "tools/x.git/hooks")) {
		t.Errorf("the hooks folder made before the run was removed: %+v", rep)
	}
	if exists(filepath.Join(root, ".git/extra.cfg")) {
		t.Errorf("the included file the command created stays: %+v", rep)
	}
}

// TestGuardPointsAtWhatTheUsersGitConfigNames: with the home outside the root, what the user's global git config
// (a plain file, or a link into the root) includes, names as its hooks folder or as a program inside the root, and
// what the home's dot entries link to there, are what the guard protects. Control: with no home, none is.
func TestGuardPointsAtWhatTheUsersGitConfigNames(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "nvim"), 0o755))
	must(t, os.MkdirAll(filepath.Join(home, ".config/git"), 0o755))
	must(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[include]\n\tpath = "+root+"/inc.cfg\n"+
		"[credential]\n\thelper = "+root+"/tools/cred\n[init]\n\ttemplateDir = "+root+"/tmpl\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "inc.cfg"), []byte("[core]\n\thooksPath = "+root+"/hooks\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "gitconfig2"), []byte("[include]\n\tpath = more.cfg\n"), 0o644))
	must(t, os.Symlink(filepath.Join(root, "gitconfig2"), filepath.Join(home, ".config/git/config")))
	must(t, os.Symlink(filepath.Join(root, "nvim"), filepath.Join(home, ".config/nvim")))
	for _, h := range []string{home, ""} {
		g := New(root, Options{MaxEntries: 1000, UserHome: h})
		s, err := g.Scan()
		g.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"inc.cfg", "hooks", "tools/cred", "tmpl", "gitconfig2", "more.cfg", "nvim"} {
			if got := slices.Contains(s.Pointed(), want); got != (h != "") {
				t.Errorf("home %q: %s pointed %v: %v", h, want, got, s.Pointed())
			}
		}
	}
}

// TestGuardPutsBackAProtectedLink: a protected path that is a link (.envrc -> envrc.d/dev, the user's) is put back
// when a command replaced it, since the read-only mount covers the link's target, not the link; a link it left as
// it was is not touched. Control: without the guard the replacement stays.
func TestGuardPutsBackAProtectedLink(t *testing.T) {
	const setup = "mkdir envrc.d && echo 'export A=1' > envrc.d/dev && ln -s envrc.d/dev .envrc && ln -s envrc.d/dev .nvim.lua"
	const attack = "rm .envrc && echo 'touch PWNED' > .envrc"
	root, _ := guarded(t, setup, attack, false)
	if fi, err := os.Lstat(filepath.Join(root, ".envrc")); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("control: the replacement did not stay: %v", err)
	}
	root, rep := guarded(t, setup, attack, true)
	if target, err := os.Readlink(filepath.Join(root, ".envrc")); err != nil || target != "envrc.d/dev" {
		t.Errorf(".envrc is not the link it was: %q %v (report %+v)", target, err, rep)
	}
	if len(rep.Changed) != 0 || len(rep.Undone) != 1 {
		t.Errorf("the report: %+v", rep)
	}
}

// TestGuardHiddenFolderChangedByTheBroker: a project that holds the home folder holds $GARUDA_HOME, a protected name
// (.garuda) which the sandbox hides whole and the broker writes while a command runs (its audit log): no "the
// command changed protected paths" warning after every command. The controls: not hidden, the change is reported;
// hidden but created during the run (no cover existed), it is removed as before.
func TestGuardHiddenFolderChangedByTheBroker(t *testing.T) {
	for _, c := range []struct {
		hidden, existed, reported, removed bool
	}{{true, true, false, false}, {false, true, true, false}, {true, false, false, true}} {
		root := t.TempDir()
		if c.existed {
			must(t, os.MkdirAll(filepath.Join(root, ".garuda", "audit"), 0o700))
		}
		o := Options{MaxEntries: 1000}
		if c.hidden {
			o.Hidden = []string{".garuda"}
		}
		g := New(root, o)
		w, err := g.Begin()
		if err != nil {
			t.Fatal(err)
		}
		must(t, os.MkdirAll(filepath.Join(root, ".garuda", "audit"), 0o700))
		must(t, os.WriteFile(filepath.Join(root, ".garuda", "audit", "log.jsonl"), []byte("{}\n"), 0o600))
		rep, err := w.Check()
		if err != nil {
			t.Fatal(err)
		}
		if reported := slices.Contains(rep.Changed, ".garuda"); reported != c.reported {
			t.Errorf("%+v: changed %v", c, rep.Changed)
		}
		if removed := !exists(filepath.Join(root, ".garuda")); removed != c.removed {
			t.Errorf("%+v: removed %v (%+v)", c, removed, rep)
		}
		g.Close()
	}
}

// Found by red team (against the class-2 pass's "put back a replaced link"). Two runs under one guard (a background
// process and a command): the background process plants .envrc -> payload, the command's scan before sees that
// link, the background process's check removes it (created), the command writes .envrc anew; the command's check
// put back the link it had seen, the background process's plant, for good (the next scans took it for the user's).
// Now a path the guard removed since a run began counts as absent before it: what is there is removed as created.
// Control: with the command's run alone (the link there before it, the user's), the link is put back.
func TestGuardPutsBackNoLinkAnotherRunPlanted(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "payload"), []byte("touch PWNED\n"), 0o644)
	g := New(root, Options{MaxEntries: 1000})
	defer g.Close()
	background, err := g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("payload", filepath.Join(root, ".envrc")); err != nil {
		t.Fatal(err)
	}
	command, err := g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := background.Check(); err != nil || !undoneSays(rep, "removed .envrc") {
		t.Fatalf("the background process's plant was not removed: %+v %v", rep, err)
	}
	os.WriteFile(filepath.Join(root, ".envrc"), []byte("touch PWNED\n"), 0o644)
	rep, err := command.Check()
	if err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(root, ".envrc")) {
		target, _ := os.Readlink(filepath.Join(root, ".envrc"))
		t.Errorf(".envrc stays (a link to %q) after both checks: %+v", target, rep)
	}
	// Control: the link there before the command (the user's), replaced by it, is put back.
	os.Remove(filepath.Join(root, ".envrc"))
	os.Symlink("payload", filepath.Join(root, ".envrc"))
	w, _ := g.Begin()
	os.Remove(filepath.Join(root, ".envrc"))
	os.WriteFile(filepath.Join(root, ".envrc"), []byte("x\n"), 0o644)
	w.Check()
	if target, err := os.Readlink(filepath.Join(root, ".envrc")); err != nil || target != "payload" {
		t.Errorf("control: a link there before the run is not put back: %q %v", target, err)
	}
}

func undoneSays(rep *Report, s string) bool {
	return rep != nil && strings.Contains(strings.Join(rep.Undone, "\n"), s)
}
