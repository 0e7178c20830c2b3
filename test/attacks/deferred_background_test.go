package attacks

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// What a background process leaves for git to run later is undone when it ends, as after a command. Control: the
// same command outside the sandbox leaves a repository whose git status runs the planted program.
func TestDeferredByABackgroundProcess(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	attack := planter("fsm") + `git init -q nested && git -C nested config core.fsmonitor "$PWD/fsm"`
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	unsandboxedSh(t, c, sid, attack)
	asUser(t, filepath.Join(e.Root, "nested"), "status")
	if !brokertest.Exists(filepath.Join(e.Root, "nested", "PWNED")) {
		t.Fatal("control: the planted fsmonitor did not run outside the sandbox")
	}

	e = brokertest.New(t)
	c = e.Client()
	sid = e.Open(c)
	res := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_START, Command: attack})
	id := strings.TrimPrefix(strings.SplitN(res.GetContent(), "\n", 2)[0], "id: ")
	res = brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_WAIT, Id: id, TimeoutMs: 60_000})
	if !strings.Contains(res.GetContent(), "exited with code 0") || !strings.Contains(res.GetContent(), "Undone after the command") {
		t.Errorf("wait: %s", res.GetContent())
	}
	asUser(t, filepath.Join(e.Root, "nested"), "status")
	if brokertest.Exists(filepath.Join(e.Root, "nested", "PWNED")) {
		t.Error("the fsmonitor a background process planted ran in the user's git status")
	}
}

// TestRedTeamBackgroundProcessPlantIsUndoneWhileItRuns: a background process that plants a repository with
// core.fsmonitor a moment after its start and then runs on (a dev server, a watcher) had its plant undone only at
// the guard's next periodic check, 30 s later: the user's git status (a shell prompt, the editor's git view) ran
// the program meanwhile. The periodic check now comes as often as every second while it is cheap. Control: the
// same plant outside the sandbox runs in the user's git status. Found by red team.
func TestRedTeamBackgroundProcessPlantIsUndoneWhileItRuns(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	ctl := t.TempDir()
	unsandboxedSh(t, c, sid, plantNested(ctl))
	if asUser(t, filepath.Join(ctl, "nested"), "status"); !brokertest.Exists(filepath.Join(ctl, "nested", "PWNED")) {
		t.Fatal("control: the planted fsmonitor did not run outside the sandbox")
	}
	res := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_START,
		Command: "sleep 0.5; " + plantNested(".") + " && touch planted; exec sleep 600"})
	if !strings.HasPrefix(res.GetContent(), "id: ") {
		t.Fatalf("start: %s", res.GetContent())
	}
	nested := filepath.Join(e.Root, "nested")
	for deadline := time.Now().Add(20 * time.Second); !brokertest.Exists(filepath.Join(e.Root, "planted")); {
		if time.Now().After(deadline) {
			t.Fatal("the process planted nothing")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // a few seconds on: the user's next git status
	asUser(t, nested, "status")
	if brokertest.Exists(filepath.Join(nested, "PWNED")) {
		t.Error("3 s after a running background process planted it, the user's git status ran its fsmonitor")
	}
}
