package broker_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker"
	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
	"github.com/garuda-dev/garuda/test/nobody"
)

// TestBackgroundProcessCheckedAtAChange: what a running background process plants for git is undone as soon as it
// is made, not at the guard's next interval (an hour here): an editor's git view runs git on the same file events.
// Two plants: a new repository whose core.fsmonitor runs a program (new folders and files), and the same key
// appended in place to the config of a repository an earlier command made (a file's content alone; that config
// stays writable to later commands). Control: with no check at a change, each plant stays for the interval and
// runs in the user's git status.
func TestBackgroundProcessCheckedAtAChange(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	program := `printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > fsm && chmod +x fsm && `
	plants := map[string]struct{ before, plant string }{
		"new repository": {program + "true", `git init -q nested && git -C nested config core.fsmonitor "$PWD/fsm"`},
		"config appended": {program + "git init -q nested",
			`sleep 0.5 && printf '[core]\n\tfsmonitor = %s/fsm\n' "$PWD" >> nested/.git/config`},
	}
	run := func(t *testing.T, before, plant string, deaf bool) (stays, ran bool) {
		t.Cleanup(broker.SetGuardEvery(time.Hour))
		if deaf {
			t.Cleanup(broker.SetGuardDeaf())
		}
		e := brokertest.New(t)
		c := e.Client()
		sid := e.Open(c)
		if res := brokertest.Sh(t, c, sid, before); res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			t.Fatalf("%s: %s", before, res.GetContent())
		}
		res := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_START,
			Command: plant + " && echo planted; exec sleep 600"})
		id, ok := strings.CutPrefix(strings.SplitN(res.GetContent(), "\n", 2)[0], "id: ")
		if !ok {
			t.Fatalf("start: %s", res.GetContent())
		}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			read := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_READ, Id: id})
			if strings.Contains(read.GetContent(), "planted") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the process planted nothing: %s", read.GetContent())
			}
		}
		config := filepath.Join(e.Root, "nested", ".git", "config")
		fsmonitor := func() bool {
			out, _ := exec.Command("git", "config", "--file", config, "core.fsmonitor").Output()
			return strings.TrimSpace(string(out)) != ""
		}
		for settled := time.Now().Add(settle(deaf)); time.Now().Before(settled) && fsmonitor(); {
			time.Sleep(20 * time.Millisecond)
		}
		stays = fsmonitor()
		cmd := exec.Command("git", "status")
		cmd.Dir = filepath.Join(e.Root, "nested")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
		cmd.Run()
		return stays, brokertest.Exists(filepath.Join(e.Root, "nested", "PWNED"))
	}
	for name, p := range plants {
		t.Run(name, func(t *testing.T) {
			t.Run("control", func(t *testing.T) {
				if stays, ran := run(t, p.before, p.plant, true); !stays || !ran {
					t.Fatalf("control: without a check at a change, the plant should stay (%v) and run (%v) until the interval", stays, ran)
				}
			})
			t.Run("at a change", func(t *testing.T) {
				if stays, ran := run(t, p.before, p.plant, false); stays || ran {
					t.Errorf("the plant of a running process was not undone when it was made: still there %v, ran in git status %v", stays, ran)
				}
			})
		})
	}
}

// settle is how long a test of the guard's check while a run goes on waits for a plant to be undone: a control's
// plant (no check at a change, the interval an hour) must stay a few seconds; one that is checked at a change is
// undone at once where a check costs well under a millisecond, but under -race on two busy cores a check may cost
// 100 ms and the budget of check time (2 % of a core) then spaces the next by seconds.
func settle(deaf bool) time.Duration {
	if deaf {
		return 3 * time.Second
	}
	return 20 * time.Second
}

// TestBackgroundProcessCheckedAtAChangeAsNobody reruns it as the unprivileged user nobody (a user namespace).
func TestBackgroundProcessCheckedAtAChangeAsNobody(t *testing.T) {
	nobody.Rerun(t, "^TestBackgroundProcessCheckedAtAChange$", "TestBackgroundProcessCheckedAtAChange")
}

// A session that starts process after process keeps only the newest ended ones (their memory and files): the
// oldest are forgotten, the newest read.
func TestEndedProcessesAreBounded(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	var ids []string
	for i := range 20 {
		res := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_START,
			Command: "echo run" + strconv.Itoa(i)})
		id := strings.TrimPrefix(strings.SplitN(res.GetContent(), "\n", 2)[0], "id: ")
		brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_WAIT, Id: id, TimeoutMs: 60_000})
		ids = append(ids, id)
	}
	list := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_LIST}).GetContent()
	if n := strings.Count(list, "exited with code 0"); n > 16 || n < 15 {
		t.Errorf("%d ended processes listed:\n%s", n, list)
	}
	if res := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_READ,
		Id: ids[0]}); res.GetStatus() != execv1.Status_STATUS_FAILED {
		t.Errorf("the oldest is still kept: %s", res.GetContent())
	}
	if res := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_READ,
		Id: ids[19]}); !strings.Contains(res.GetContent(), "run19") {
		t.Errorf("the newest: %s", res.GetContent())
	}
}
