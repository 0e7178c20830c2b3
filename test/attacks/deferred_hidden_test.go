package attacks

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// hidingRules are the two kinds of read rule that hide a folder: a name at any depth (the guard's walk asks the
// policy of every entry) and a path from the root (the sandbox's hidden list); none, the control.
var hidingRules = []struct{ name, deny string }{
	{"no rule", ``}, {"a name at any depth", `"Read(secret)"`}, {"a folder and all below it", `"Read(secret/**)"`},
	{"a path from the root", `"Read(/secret)"`},
}

// Found by red team (where the class-1 and class-2 passes meet). The guard's walk enters no folder a read rule
// hides (class 1), and the sandbox covers such a folder whole, so that a command cannot write in it. But a hidden
// folder that does not exist when the command starts is not covered: the command made it and planted a repository
// in it, and the walk after the run, which entered no hidden folder, never saw it. Now a hidden folder the run made
// is walked whole after it (all in it is the command's own). Control: outside the sandbox git runs the program.
func TestRedTeamDeferredInAHiddenFolderACommandMade(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	attack := planter("fsm") + `git init -q secret/nested && git -C secret/nested config core.fsmonitor "$PWD/fsm" && ` +
		`git init -q node_modules/p && git -C node_modules/p config core.fsmonitor "$PWD/fsm"`
	rules := append(hidingRules, struct{ name, deny string }{"node_modules hidden too", `"Read(secret)", "Read(node_modules)"`})
	for _, rule := range rules {
		t.Run(rule.name, func(t *testing.T) {
			for _, sandboxed := range []bool{false, true} {
				e := brokertest.New(t)
				e.Settings(t, `{"permissions": {"deny": [`+rule.deny+`]}}`)
				c := e.Client()
				sid := e.Open(c)
				brokertest.Sh(t, c, sid, "true") // the session's first walk: the folder is not there
				var res *execv1.Result
				if sandboxed {
					res = brokertest.Sh(t, c, sid, attack)
				} else {
					res = unsandboxedSh(t, c, sid, attack)
				}
				out := asUser(t, filepath.Join(e.Root, "secret/nested"), "status") +
					asUser(t, filepath.Join(e.Root, "node_modules/p"), "status")
				ran := brokertest.Exists(filepath.Join(e.Root, "secret/nested/PWNED")) ||
					brokertest.Exists(filepath.Join(e.Root, "node_modules/p/PWNED"))
				switch {
				case !sandboxed && !ran:
					t.Fatalf("control: outside the sandbox the attack did not work (%s)\n%s", res.GetContent(), out)
				case sandboxed && ran:
					t.Errorf("git ran a repository a command planted in a hidden folder it made: %s", res.GetContent())
				case sandboxed && !strings.Contains(res.GetContent(), "secret/nested/.git/config"):
					t.Errorf("the result does not say what was undone: %s", res.GetContent())
				}
			}
		})
	}
}

// Found by red team (where the class-1 and class-2 passes meet). A write of a file a read rule hides is blind
// (class 1) and checked by the guard like a command (class 2); but the guard's walk enters no hidden folder, so a
// repository the file tools assembled there, file by file, under a rule that allows every write, was never seen.
// Now the git folders among a blind write's folders are checked, and what is undone there is not said (it would
// tell what the folder held): the answers are the same as where nothing is undone. Controls: the same files run
// when written with no guard (TestDeferredByTheFileTools); with no rule, the answer says what was undone.
func TestRedTeamDeferredByTheFileToolsInAHiddenFolder(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	for _, rule := range hidingRules {
		t.Run(rule.name, func(t *testing.T) {
			e := brokertest.New(t)
			e.Settings(t, `{"permissions": {"deny": [`+rule.deny+`], "allow": ["write_file(**)"]}}`)
			brokertest.MustWrite(t, filepath.Join(e.Root, "secret", "notes.txt"), "the user's\n") // there before the session
			c := e.Client()
			sid := e.Open(c)
			brokertest.Sh(t, c, sid, "true")
			var said []string
			for _, f := range plantedByFileTools {
				p := strings.Replace(f[0], "planted/", "secret/", 1)
				res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write(p, f[1])),
					execv1.Choice_CHOICE_ONCE)
				if err != nil {
					t.Fatal(err)
				}
				said = append(said, strings.ReplaceAll(res.GetContent(), e.Root, "$ROOT"))
			}
			asUser(t, filepath.Join(e.Root, "secret/sub"), "status")
			if brokertest.Exists(filepath.Join(e.Root, "secret/PWNED")) {
				t.Errorf("git ran a repository the file tools assembled in a hidden folder:\n%s", strings.Join(said, "\n"))
			}
			audited := false
			for _, r := range brokertest.AuditRecords(t, e.Home) {
				audited = audited || r.Event == audit.EventGuardUndone && strings.Contains(r.Detail["hidden"], "core.fsmonitor")
			}
			if audited != (rule.deny != "") {
				t.Errorf("what was undone quietly in the hidden folder is audited: %v, want %v", audited, rule.deny != "")
			}
			if undone := strings.Contains(strings.Join(said, "\n"), "Undone"); undone != (rule.deny == "") {
				t.Errorf("the answers say what was undone where a read rule hides it, or not where none does:\n%s",
					strings.Join(said, "\n"))
			}
		})
	}
}

// Found by red team (where the class-1 and class-2 passes meet). The guard reads the repository a worktree's .git
// file names outside the project, for what it points git at inside it. A command may write such a file naming any
// folder, one a read rule hides among them: the scan after it read that folder's config, and until the next scan
// a write's question depended on it (here on whether it names core.hooksPath). The pointer itself is removed
// (a .git pointer to outside), so its repository need not be read: now only those of the .git files there at the
// session's first scan (the user's own worktrees) are, as TestDeferredWhatAWorktreesRepositoryNames shows.
func TestRedTeamPlantedPointerReadsNoHiddenRepository(t *testing.T) {
	observe := func(hooksPath bool) string {
		outside := filepath.Join(t.TempDir(), "secret.git")
		cfg := "[core]\n\tbare = false\n"
		if hooksPath {
			cfg += "\thooksPath = tools\n"
		}
		brokertest.MustWrite(t, filepath.Join(outside, "config"), cfg)
		brokertest.MustWrite(t, filepath.Join(outside, "HEAD"), "ref: refs/heads/main\n")
		e := brokertest.New(t)
		e.Settings(t, `{"permissions": {"deny": ["Read(`+filepath.Dir(outside)+`/**)"], "allow": ["write_file(w/**)"]}}`)
		c := e.Client()
		sid := e.Open(c)
		res := brokertest.Sh(t, c, sid, "mkdir -p w/tools && echo 'gitdir: "+outside+"' > w/.git")
		_, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("w/tools/pre-commit", "x\n")),
			execv1.Choice_CHOICE_DENY)
		return fmt.Sprintf("%v, %d questions; %s", err, len(qs), strings.ReplaceAll(res.GetContent(), outside, "$OUT"))
	}
	if a, b := observe(true), observe(false); a != b {
		t.Errorf("the answers depend on a hidden folder's config that a planted .git file names:\nhooksPath: %s\nnone:      %s", a, b)
	}
}

// Found by red team (where the class-1 and class-2 passes meet). A read rule may hide git's folders from the model
// ("Read(.git)"): the guard's walk then enters none, and what the root's own repository points git at, read at the
// session's start, was forgotten at the first scan: a command's hook in the folder core.hooksPath names stayed and
// ran on the user's next commit. The sandbox hides the .git folder whole, so nothing a command does there needs the
// walk; what it points at outside it does. Control: outside the sandbox the hook runs.
func TestRedTeamHiddenGitFolderStillPointsTheGuard(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	for _, sandboxed := range []bool{false, true} {
		e := brokertest.New(t)
		setup(t, e.Root, "git init -q && git config core.hooksPath .githooks && mkdir .githooks")
		e.Settings(t, `{"permissions": {"deny": ["Read(.git)"]}}`)
		c := e.Client()
		sid := e.Open(c)
		brokertest.Sh(t, c, sid, "true")
		attack := planter(".githooks/pre-commit")
		var res *execv1.Result
		if sandboxed {
			res = brokertest.Sh(t, c, sid, attack)
		} else {
			res = unsandboxedSh(t, c, sid, attack)
		}
		asUser(t, e.Root, "commit", "-q", "--allow-empty", "-m", "x")
		ran := brokertest.Exists(filepath.Join(e.Root, "PWNED"))
		switch {
		case !sandboxed && !ran:
			t.Fatalf("control: outside the sandbox the hook did not run: %s", res.GetContent())
		case sandboxed && ran:
			t.Errorf("git ran a hook a command left in the folder core.hooksPath names, .git hidden: %s", res.GetContent())
		}
	}
}

// TestRedTeamHiddenAndGuardAsNobody reruns the red-team tests where hidden folders and the command guard meet as
// the unprivileged user nobody, where the sandbox runs in a user namespace and the broker cannot read past a mode.
func TestRedTeamHiddenAndGuardAsNobody(t *testing.T) {
	rerunAsNobody(t, "^TestRedTeam(DeferredInAHiddenFolderACommandMade|DeferredByTheFileToolsInAHiddenFolder|"+
		"PlantedPointerReadsNoHiddenRepository|HiddenGitFolderStillPointsTheGuard|EnclosingRepositoryNotForgottenAfterGitInit|"+
		"UndoRestoresNoProgramForGit)$",
		"TestRedTeamDeferredInAHiddenFolderACommandMade", "TestRedTeamDeferredByTheFileToolsInAHiddenFolder",
		"TestRedTeamPlantedPointerReadsNoHiddenRepository", "TestRedTeamHiddenGitFolderStillPointsTheGuard",
		"TestRedTeamEnclosingRepositoryNotForgottenAfterGitInit", "TestRedTeamUndoRestoresNoProgramForGit")
}
