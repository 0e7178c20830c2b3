package attacks

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// twoCommits is the user's repository before the session: two commits, so that a rebase has a step to take.
const twoCommits = "git init -q -b main && echo a > f && git add f && git commit -q -m one && echo b > f && git commit -qam two"

// stopBeforeTheExec leaves a rebase under way whose next steps are a pick and an exec: git stops at the break the
// sequence editor puts first, before anything ran.
const stopBeforeTheExec = ident + `GIT_SEQUENCE_EDITOR="sed -i '1i break'" git rebase -q -i -x 'touch PWNED' HEAD~1`

// plantRebase writes the folder of a rebase under way by hand (in DIR, the git folder's rebase-merge or where a link
// in its place leads), its one step an exec.
const plantRebase = `H=$(git rev-parse HEAD) && mkdir -p DIR && echo refs/heads/main > DIR/head-name && echo $H > DIR/onto && ` +
	`echo $H > DIR/orig-head && touch DIR/interactive DIR/done && echo 'exec touch PWNED' > DIR/git-rebase-todo`

var rebaseCases = []deferredCase{
	{name: "a rebase left at a break before an exec step", before: twoCommits, attack: stopBeforeTheExec,
		git: []string{"rebase", "--continue"}, marker: "PWNED"},
	{name: "a rebase's steps written by hand", before: twoCommits, attack: strings.ReplaceAll(plantRebase, "DIR", ".git/rebase-merge"),
		git: []string{"rebase", "--continue"}, marker: "PWNED"},
	{name: "a rebase's folder that is a link into the project", before: twoCommits,
		attack: strings.ReplaceAll(plantRebase, "DIR", "steps") + " && ln -s ../steps .git/rebase-merge",
		git:    []string{"rebase", "--continue"}, marker: "PWNED"},
	{name: "an exec step added to the rebase the user began",
		before: twoCommits + " && " + strings.ReplaceAll(stopBeforeTheExec, "PWNED", "MINE"),
		attack: `echo 'exec touch PWNED' >> .git/rebase-merge/git-rebase-todo`,
		git:    []string{"rebase", "--continue"}, marker: "PWNED"},
	{name: "a rebase left in a nested repository", before: "mkdir lib && cd lib && " + twoCommits,
		attack: "cd lib && " + stopBeforeTheExec, in: "lib", git: []string{"rebase", "--skip"}, marker: "lib/PWNED"},
}

// Found by red team (class 2: what a command leaves runs later).
// FOUND AND FIXED. The guard neutralised what git runs by itself (config, hooks), not what git runs when the user
// goes on with an operation a command left under way: a rebase's steps (.git/rebase-merge/git-rebase-todo), whose
// exec lines `git rebase --continue` or `--skip` runs with the shell — what git status, shell prompts and editors'
// git views tell the user to do next. A command stopped a rebase before an exec step, or wrote the steps by hand,
// and the user's continue ran its program outside the sandbox. Now the exec steps a run added are commented out
// (and steps git could read through a link are removed). Controls: each runs outside the sandbox.
func TestRedTeamRebaseLeftUnderWayRunsNothing(t *testing.T) {
	for _, dc := range rebaseCases {
		t.Run(dc.name, func(t *testing.T) { runDeferredCase(t, dc) })
	}
}

// TestRebaseTheUserBeganKeepsItsExecSteps: the exec steps of a rebase the user began stay, when a command changes its
// steps too (the control of the fix above: the user's own program runs on continue, the one the command added
// does not), and so does the user's own config: a change of the steps is no change of the config to neutralise.
func TestRebaseTheUserBeganKeepsItsExecSteps(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	e := brokertest.New(t)
	setup(t, e.Root, twoCommits+" && git config core.pager cat && "+strings.ReplaceAll(stopBeforeTheExec, "PWNED", "MINE"))
	c := e.Client()
	sid := e.Open(c)
	res := brokertest.Sh(t, c, sid, `echo 'exec touch PWNED' >> .git/rebase-merge/git-rebase-todo`)
	if got := asUser(t, e.Root, "config", "core.pager"); got != "cat\n" {
		t.Errorf("the user's own core.pager is %q after the command: %s", got, res.GetContent())
	}
	out := asUser(t, e.Root, "rebase", "--continue")
	if !brokertest.Exists(filepath.Join(e.Root, "MINE")) || brokertest.Exists(filepath.Join(e.Root, "PWNED")) {
		t.Errorf("after the continue: MINE %v (want true), PWNED %v (want false)\n%s\n%s", brokertest.Exists(filepath.Join(e.Root, "MINE")),
			brokertest.Exists(filepath.Join(e.Root, "PWNED")), res.GetContent(), out)
	}
}

// TestRedTeamRebaseStepsByTheFileTools: the same steps written by the file tools, under a rule that allows every
// write without a question, run nothing either (the control is the table's hand-written case outside the sandbox).
func TestRedTeamRebaseStepsByTheFileTools(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	e := brokertest.New(t)
	setup(t, e.Root, twoCommits)
	head := strings.TrimSpace(asUser(t, e.Root, "rev-parse", "HEAD"))
	e.Settings(t, `{"permissions":{"allow":["write_file(**)"]}}`)
	c := e.Client()
	sid := e.Open(c)
	dir := ".git/rebase-merge/"
	for _, f := range [][2]string{{"head-name", "refs/heads/main\n"}, {"onto", head + "\n"}, {"orig-head", head + "\n"},
		{"interactive", ""}, {"done", ""}, {"git-rebase-todo", "exec touch PWNED\n"}} {
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write(dir+f[0], f[1])),
			execv1.Choice_CHOICE_DENY)
		if err != nil || len(qs) != 0 || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			t.Fatalf("write %s: %v, %d questions, %v", f[0], err, len(qs), res.GetStatus())
		}
	}
	out := asUser(t, e.Root, "rebase", "--continue")
	if brokertest.Exists(filepath.Join(e.Root, "PWNED")) {
		t.Errorf("git ran the exec step the file tools wrote:\n%s", out)
	}
}

// TestRedTeamRebaseLeftUnderWayAsNobody reruns the tests above as the user nobody.
func TestRedTeamRebaseLeftUnderWayAsNobody(t *testing.T) {
	rerunAsNobody(t, "^(TestRedTeamRebaseLeftUnderWayRunsNothing|TestRebaseTheUserBeganKeepsItsExecSteps)$",
		"TestRedTeamRebaseLeftUnderWayRunsNothing", "TestRebaseTheUserBeganKeepsItsExecSteps")
}
