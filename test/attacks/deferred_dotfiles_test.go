package attacks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// TestDeferredWhatTheHomeLinksToTheProject: with the project folder a dotfiles repository that the user's home links
// to (GNU stow's ~/.gitconfig -> dotfiles/gitconfig, ~/.config/git -> dotfiles/git), the files the home's dot
// entries lead to are the user's live configuration: read-only for commands, whose changes would run in every
// repository (git) or every new shell. Controls: outside the sandbox the command's change runs; with no link from the
// home the sandboxed command's change stays.
func TestDeferredWhatTheHomeLinksToTheProject(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	const attack = `printf '#!/bin/sh\ntouch "$HOME/PWNED"\n' > fsm && chmod +x fsm && ` +
		`printf '[core]\n\tfsmonitor = %s/fsm\n' "$PWD" | tee -a gitconfig >> git/config; echo 'touch "$HOME/PWNED2"' >> bashrc`
	run := func(linked, sandboxed bool) (home, root string, res *execv1.Result) {
		home, root = t.TempDir(), filepath.Join(t.TempDir(), "dotfiles")
		setup(t, t.TempDir(), "mkdir -p "+root+"/git && printf '[user]\\n\\tname = me\\n' | tee "+root+"/gitconfig > "+root+
			"/git/config && echo '# rc' > "+root+"/bashrc && git init -q "+home+"/proj")
		if linked {
			os.MkdirAll(filepath.Join(home, ".config"), 0o755)
			for link, target := range map[string]string{".gitconfig": "gitconfig", ".config/git": "git", ".bashrc": "bashrc"} {
				if err := os.Symlink(filepath.Join(root, target), filepath.Join(home, link)); err != nil {
					t.Fatal(err)
				}
			}
		}
		t.Setenv("HOME", home)
		e := brokertest.NewAt(t, root, filepath.Join(t.TempDir(), "garuda"))
		c := e.Client()
		sid := e.Open(c)
		if sandboxed {
			return home, root, brokertest.Sh(t, c, sid, attack)
		}
		return home, root, unsandboxedSh(t, c, sid, attack)
	}
	// ran runs git status in a repository of that home, and a new interactive shell, as the user would.
	ran := func(home string) (git, shell bool) {
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"}
		cmd := exec.Command("git", "status")
		cmd.Dir, cmd.Env = filepath.Join(home, "proj"), env
		cmd.Run()
		cmd = exec.Command("bash", "-ic", "true")
		cmd.Dir, cmd.Env = home, env
		cmd.Run()
		return brokertest.Exists(filepath.Join(home, "PWNED")), brokertest.Exists(filepath.Join(home, "PWNED2"))
	}
	if home, _, res := run(true, false); !all(ran(home)) {
		t.Fatalf("control: outside the sandbox the change did not run: %s", res.GetContent())
	}
	if _, root, res := run(false, true); !strings.Contains(brokertest.FileText(filepath.Join(root, "gitconfig")), "fsmonitor") ||
		!strings.Contains(brokertest.FileText(filepath.Join(root, "bashrc")), "PWNED2") {
		t.Fatalf("control: with no link from the home the command's changes should stay: %s", res.GetContent())
	}
	home, _, res := run(true, true)
	if git, shell := ran(home); git || shell {
		t.Errorf("what a sandboxed command changed in the files the home links to ran (git %v, shell %v): %s", git, shell, res.GetContent())
	}
}

func all(a, b bool) bool { return a && b }

// Found by red team (class 2: what a command leaves runs later).
// FOUND AND FIXED. What the user's global git config names by a relative path is, to git, a path in each repository
// (relative to its work tree's top): `core.hooksPath = .githooks` (a team's versioned hooks, in every repository),
// a program (`core.fsmonitor = tools/fsm`). The guard read only the absolute ones, so a sandboxed command that
// created the project's .githooks/pre-commit, or replaced tools/fsm, had its program run by the user's next commit or
// git status. Now each repository below the root takes them as its own (read-only when they exist, removed when a
// command creates them), in a nested repository too. Nor did it read the configs git finds elsewhere than
// ~/.gitconfig and ~/.config/git/config: $XDG_CONFIG_HOME/git/config, $GIT_CONFIG_GLOBAL, the system's
// ($GIT_CONFIG_SYSTEM, /etc/gitconfig); now it reads them where git does. Controls: outside the sandbox git runs
// each plant.
func TestRedTeamWhatTheGlobalConfigNamesRelatively(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	const planter = `printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > F && chmod +x F`
	type global struct{ env, file string } // the variable that makes git read the file (relative to the home), if any
	for _, tc := range []struct {
		name, global, before, attack, in string
		git                              []string
		where                            global
	}{
		{name: "a hooks folder in $XDG_CONFIG_HOME/git/config", global: "[core]\n\thooksPath = .githooks\n", before: "git init -q",
			attack: "mkdir -p .githooks && " + strings.ReplaceAll(planter, "F", ".githooks/pre-commit"),
			git:    []string{"commit", "-q", "--allow-empty", "-m", "x"}, where: global{"XDG_CONFIG_HOME", "xdg/git/config"}},
		{name: "a hooks folder in $GIT_CONFIG_GLOBAL", global: "[core]\n\thooksPath = .githooks\n", before: "git init -q",
			attack: "mkdir -p .githooks && " + strings.ReplaceAll(planter, "F", ".githooks/pre-commit"),
			git:    []string{"commit", "-q", "--allow-empty", "-m", "x"}, where: global{"GIT_CONFIG_GLOBAL", "my.gitconfig"}},
		{name: "a program in the system's config", global: "[core]\n\tfsmonitor = tools/fsm\n", before: "git init -q",
			attack: "mkdir -p tools && " + strings.ReplaceAll(planter, "F", "tools/fsm"), git: []string{"status"},
			where: global{"GIT_CONFIG_SYSTEM", "etc/gitconfig"}},
		{name: "a hooks folder that is missing", global: "[core]\n\thooksPath = .githooks\n", before: "git init -q",
			attack: "mkdir -p .githooks && " + strings.ReplaceAll(planter, "F", ".githooks/pre-commit"),
			git:    []string{"commit", "-q", "--allow-empty", "-m", "x"}},
		{name: "a hooks folder there before", global: "[core]\n\thooksPath = .githooks\n",
			before: "git init -q && mkdir .githooks && echo '# hooks' > .githooks/README",
			attack: strings.ReplaceAll(planter, "F", ".githooks/pre-commit"), git: []string{"commit", "-q", "--allow-empty", "-m", "x"}},
		{name: "a nested repository's hooks folder", global: "[core]\n\thooksPath = .githooks\n", before: "git init -q lib",
			attack: "mkdir -p lib/.githooks && " + strings.ReplaceAll(planter, "F", "lib/.githooks/pre-commit"), in: "lib",
			git: []string{"commit", "-q", "--allow-empty", "-m", "x"}},
		{name: "a program there before", global: "[core]\n\tfsmonitor = tools/fsm\n",
			before: "git init -q && mkdir tools && printf '#!/bin/sh\\n' > tools/fsm && chmod +x tools/fsm",
			attack: strings.ReplaceAll(planter, "F", "tools/fsm"), git: []string{"status"}},
		{name: "a program that is missing", global: "[core]\n\tfsmonitor = tools/fsm\n", before: "git init -q",
			attack: "mkdir -p tools && " + strings.ReplaceAll(planter, "F", "tools/fsm"), git: []string{"status"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, sandboxed := range []bool{false, true} {
				home := t.TempDir()
				env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=u",
					"GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@x"}
				file := filepath.Join(home, ".gitconfig")
				t.Setenv("HOME", home)
				if tc.where.env != "" {
					file = filepath.Join(home, tc.where.file)
					val := file
					if tc.where.env == "XDG_CONFIG_HOME" {
						val = filepath.Join(home, "xdg")
					}
					if tc.where.env == "GIT_CONFIG_SYSTEM" {
						env[2] = "GIT_CONFIG_NOSYSTEM=" // the user's git reads the system's config
						t.Setenv("GIT_CONFIG_NOSYSTEM", "")
					}
					env = append(env, tc.where.env+"="+val)
					t.Setenv(tc.where.env, val) // the broker's environment, which is the user's
				}
				os.MkdirAll(filepath.Dir(file), 0o755)
				if err := os.WriteFile(file, []byte(tc.global), 0o644); err != nil {
					t.Fatal(err)
				}
				e := brokertest.New(t)
				setup(t, e.Root, tc.before)
				c := e.Client()
				sid := e.Open(c)
				res := shIn(t, c, sid, tc.attack, sandboxed)
				cmd := exec.Command("git", tc.git...)
				cmd.Dir, cmd.Env = filepath.Join(e.Root, tc.in), env
				out, _ := cmd.CombinedOutput()
				ran := brokertest.Exists(filepath.Join(e.Root, tc.in, "PWNED"))
				switch {
				case !sandboxed && !ran:
					t.Fatalf("control: outside the sandbox git did not run the plant: %s\n%s", res.GetContent(), out)
				case sandboxed && ran:
					t.Errorf("git ran what a sandboxed command left where the global config points: %s\n%s", res.GetContent(), out)
				}
			}
		})
	}
}

// TestRedTeamWhatTheGlobalConfigNamesRelativelyAsksTheFileTools: the file tools ask, under a rule that allows every
// write, for the hooks folder the global config names relatively, before the session's first command too. Control:
// the same rule writes an ordinary file without a question.
func TestRedTeamWhatTheGlobalConfigNamesRelativelyAsksTheFileTools(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\thooksPath = .githooks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	e := brokertest.New(t)
	setup(t, e.Root, "git init -q")
	e.Settings(t, `{"permissions":{"allow":["write_file(**)"]}}`)
	c := e.Client()
	sid := e.Open(c)
	for _, w := range []struct {
		path string
		asks bool
	}{{"src/a.go", false}, {".githooks/pre-commit", true}} {
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write(w.path, "x")),
			execv1.Choice_CHOICE_DENY)
		if err != nil || (len(qs) == 1) != w.asks {
			t.Errorf("%s: %v, %d questions, %v (want a question: %v)", w.path, err, len(qs), res.GetStatus(), w.asks)
		}
	}
}

// TestRedTeamWhatTheGlobalConfigNamesRelativelyAsNobody reruns the test above as the user nobody.
func TestRedTeamWhatTheGlobalConfigNamesRelativelyAsNobody(t *testing.T) {
	rerunAsNobody(t, "^TestRedTeamWhatTheGlobalConfigNamesRelatively$", "TestRedTeamWhatTheGlobalConfigNamesRelatively")
}
