package attacks

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// lazygitFiles are where lazygit loads its configuration for a repository, besides the user's own: the git folder's
// lazygit.yml (a worktree's own git folder's, a nested repository's, one a command made) and the .lazygit.yml of
// every folder above the repository's top (the project folder, for a nested repository or a submodule). Its
// git.pagers (and the older git.paging.pager) become GIT_PAGER for the diff it shows as it opens, which git runs
// with the shell; its os.edit and customCommands run on a key.
var lazygitFiles = []string{".git/lazygit.yml", "lib/.git/lazygit.yml", ".git/worktrees/wt/lazygit.yml", "made/.git/lazygit.yml",
	".lazygit.yml", "libs/.lazygit.yml"}

// lazygitPlant writes each of lazygitFiles with a pager that leaves PWNED where lazygit runs it.
const lazygitPlant = `y='git: {pagers: [{pager: "touch PWNED; cat"}], paging: {pager: "touch PWNED; cat"}}'; ` +
	`git init -q made && mkdir -p libs && for f in .git/lazygit.yml lib/.git/lazygit.yml .git/worktrees/wt/lazygit.yml ` +
	`made/.git/lazygit.yml .lazygit.yml libs/.lazygit.yml; do printf '%s\n' "$y" > $f; done`

// lazygitProject is the user's project: a repository with a linked worktree beside it (outside the root) and a
// nested one.
func lazygitProject(t *testing.T, root string) {
	setup(t, root, ident+"git init -q && git commit -q --allow-empty -m x && git worktree add -q ../wt && git init -q lib")
}

// Found by red team (class 2: what a command leaves runs later).
// FOUND AND FIXED. The guard knew git's own files in a git folder (config, hooks, info, commondir), not what a git
// front end keeps there: lazygit loads .git/lazygit.yml and the .lazygit.yml of the folders above a repository, and
// runs the pager they name (through git, with the shell) for the diff it shows when the user opens it. A sandboxed
// command wrote them; nothing undid them, and the file tools wrote them under an allow rule without a question. Now
// both are protected: removed when a command creates one (in a git folder too, where git never writes one),
// read-only when the user has one, and always a question for the file tools. Control: outside the sandbox they
// stay.
func TestRedTeamLazygitConfigIsNotLeft(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	for _, sandboxed := range []bool{false, true} {
		e := brokertest.New(t)
		lazygitProject(t, e.Root)
		c := e.Client()
		sid := e.Open(c)
		var res *execv1.Result
		if sandboxed {
			res = brokertest.Sh(t, c, sid, lazygitPlant)
		} else {
			res = unsandboxedSh(t, c, sid, lazygitPlant)
		}
		for _, f := range lazygitFiles {
			left := brokertest.Exists(filepath.Join(e.Root, f))
			switch {
			case !sandboxed && !left:
				t.Fatalf("control: %s not written outside the sandbox: %s", f, res.GetContent())
			case sandboxed && left:
				t.Errorf("%s left by a sandboxed command: %s", f, res.GetContent())
			case sandboxed && !strings.Contains(res.GetContent(), f):
				t.Errorf("the result does not name %s: %s", f, res.GetContent())
			}
		}
		if !sandboxed {
			continue
		}
		// There before: read-only for commands.
		brokertest.MustWrite(t, filepath.Join(e.Root, ".git/lazygit.yml"), "gui: {}\n")
		brokertest.MustWrite(t, filepath.Join(e.Root, ".lazygit.yml"), "gui: {}\n")
		res = brokertest.Sh(t, c, sid, lazygitPlant)
		for _, f := range []string{".git/lazygit.yml", ".lazygit.yml"} {
			if got := brokertest.FileText(filepath.Join(e.Root, f)); got != "gui: {}\n" {
				t.Errorf("a command rewrote the user's %s: %q (%s)", f, got, res.GetContent())
			}
		}
	}
}

// TestRedTeamLazygitConfigAsksTheFileTools: under a rule that allows every write, the file tools ask for lazygit's
// files, and never offer "for this session" (the other half of the find above). Control: the same rule writes an
// ordinary file, and a file of git's data folder, without a question.
func TestRedTeamLazygitConfigAsksTheFileTools(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	e := brokertest.New(t)
	setup(t, e.Root, "git init -q && git init -q lib")
	e.Settings(t, `{"permissions":{"allow":["write_file(**)"]}}`)
	c := e.Client()
	sid := e.Open(c)
	fileToolsAsk(t, c, sid, e.Root, []string{"src/a.go", ".git/description"},
		".git/lazygit.yml", "lib/.git/lazygit.yml", ".lazygit.yml", "lib/.LAZYGIT.yml")
}

// TestRedTeamLazygitConfigIsNotLeftAsNobody reruns the command half as the user nobody.
func TestRedTeamLazygitConfigIsNotLeftAsNobody(t *testing.T) {
	rerunAsNobody(t, "^TestRedTeamLazygitConfigIsNotLeft$", "TestRedTeamLazygitConfigIsNotLeft")
}
