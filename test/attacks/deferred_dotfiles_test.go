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
