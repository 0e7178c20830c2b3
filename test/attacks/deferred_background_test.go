package attacks

import (
	"path/filepath"
	"strings"
	"testing"

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
