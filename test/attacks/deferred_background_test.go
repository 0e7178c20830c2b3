package attacks

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"

	"github.com/garuda-dev/garuda/internal/testenv"
)

// pm runs one process_manager call and returns its result.
func pm(t *testing.T, c execv1.ExecServiceClient, sid string, p *execv1.ProcessManager) *execv1.Result {
	t.Helper()
	op := &execv1.Start{Op: &execv1.Start_ProcessManager{ProcessManager: p}}
	res, _, err := run(t, start(t, c, ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// What a background process leaves for git to run later is undone when it ends, as after a command. Control: the
// same command outside the sandbox leaves a repository whose git status runs the planted program.
func TestDeferredByABackgroundProcess(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	attack := planter("fsm") + `git init -q nested && git -C nested config core.fsmonitor "$PWD/fsm"`
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	unsandboxedSh(t, c, sid, attack)
	asUser(t, filepath.Join(e.root, "nested"), "status")
	if !exists(filepath.Join(e.root, "nested", "PWNED")) {
		t.Fatal("control: the planted fsmonitor did not run outside the sandbox")
	}

	e = newEnv(t)
	c = e.client()
	sid = e.open(c)
	res := pm(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_START, Command: attack})
	id := strings.TrimPrefix(strings.SplitN(res.GetContent(), "\n", 2)[0], "id: ")
	res = pm(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_WAIT, Id: id, TimeoutMs: 60_000})
	if !strings.Contains(res.GetContent(), "exited with code 0") || !strings.Contains(res.GetContent(), "Undone after the command") {
		t.Errorf("wait: %s", res.GetContent())
	}
	asUser(t, filepath.Join(e.root, "nested"), "status")
	if exists(filepath.Join(e.root, "nested", "PWNED")) {
		t.Error("the fsmonitor a background process planted ran in the user's git status")
	}
}

// A session that starts process after process keeps only the newest ended ones (their memory and files): the
// oldest are forgotten, the newest read.
func TestEndedProcessesAreBounded(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	var ids []string
	for i := range 20 {
		res := pm(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_START, Command: "echo run" + strconv.Itoa(i)})
		id := strings.TrimPrefix(strings.SplitN(res.GetContent(), "\n", 2)[0], "id: ")
		pm(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_WAIT, Id: id, TimeoutMs: 60_000})
		ids = append(ids, id)
	}
	list := pm(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_LIST}).GetContent()
	if n := strings.Count(list, "exited with code 0"); n > 16 || n < 15 {
		t.Errorf("%d ended processes listed:\n%s", n, list)
	}
	if res := pm(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_READ,
		Id: ids[0]}); res.GetStatus() != execv1.Status_STATUS_FAILED {
		t.Errorf("the oldest is still kept: %s", res.GetContent())
	}
	if res := pm(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_READ,
		Id: ids[19]}); !strings.Contains(res.GetContent(), "run19") {
		t.Errorf("the newest: %s", res.GetContent())
	}
}
