package test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/garuda-dev/garuda/frontend/model/fakeprovider"
	"github.com/garuda-dev/garuda/internal/testproc"
)

// startWithCommand starts garuda acp against a fake provider whose model runs `sleep <marker>` in the sandbox,
// sends the prompt and waits until the command runs.
func startWithCommand(t *testing.T, marker string) *agent {
	t.Helper()
	srv, err := fakeprovider.Serve("127.0.0.1:0", []fakeprovider.Turn{
		{ToolCalls: []fakeprovider.ToolCall{{ID: "call_1", Name: "bash",
			Input: fmt.Sprintf(`{"command":"sleep %s & sleep %s; wait"}`, marker, marker)}}},
		{Text: "done"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	home := t.TempDir()
	root := t.TempDir()
	models := fakeModels(srv.URL)
	if err := os.WriteFile(filepath.Join(home, "models.json"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startEditor(t, home, "LOCAL_API_KEY=k", "TMPDIR="+t.TempDir())
	e.initialize()
	sid := e.newSession(root)
	ctx := e.ctx()
	go e.conn.Prompt(ctx, acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock("run it")}}) // answered as the test ends
	deadline := time.Now().Add(20 * time.Second)
	for len(testproc.Holding("sleep "+marker)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the command never ran\nstderr:\n%s", e.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return e
}

func waitNoCommand(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := testproc.Holding("sleep " + marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of the command survived: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The editor closes stdin while a command (and a background child of it) runs: garuda exits 0 and nothing of
// the command is left.
func TestRunningCommandEndsWithStdin(t *testing.T) {
	marker := "61.4031"
	e := startWithCommand(t, marker)
	code, _ := e.closeAndWait()
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, e.stderr)
	}
	waitNoCommand(t, marker)
	waitBrokerGone(t, 5*time.Second)
}

// The front end is SIGKILLed while a command runs: the broker notices and nothing of the command is left.
func TestRunningCommandEndsWithFrontEndKilled(t *testing.T) {
	marker := "61.4032"
	e := startWithCommand(t, marker)
	e.cmd.Process.Signal(syscall.SIGKILL)
	e.wait()
	waitNoCommand(t, marker)
	waitBrokerGone(t, 5*time.Second)
}

func TestProcessCancelSleep(t *testing.T) {
	m := &fakeOpenAI{answers: [][]string{bashAnswer("call_s", "sleep 60.75")}}
	p := startGaruda(t, m)
	p.initialize()
	sid := p.newSession("")
	done := make(chan acp.PromptResponse, 1)
	go func() {
		res, err := p.prompt(sid, "sleep")
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	testproc.WaitLive(t, waitLimit, "sleep 60.75")
	p.conn.Cancel(p.ctx(), acp.CancelNotification{SessionId: sid})
	res := <-done
	if res.StopReason != acp.StopReasonCancelled {
		t.Errorf("stop %q", res.StopReason)
	}
	p.ed.WantCancelledCall(t, "call_s", "$ sleep 60.75")
	testproc.WaitNoneLive(t, waitLimit, "sleep 60.75")
}

// A background process that ignores SIGTERM and forks a setsid child is gone once the front end is SIGKILLed:
// the broker dies with its parent and its commands' pid namespaces with it.
func TestProcessBackgroundGoneAfterSIGKILL(t *testing.T) {
	m := &fakeOpenAI{answers: [][]string{
		processAnswer("call_bg", map[string]any{"action": "start", "command": "trap '' TERM; (setsid sleep 61.61 &); sleep 61.62"}),
		textAnswer("started"),
	}}
	p := startGaruda(t, m)
	p.initialize()
	sid := p.newSession("")
	p.promptEndsTurn(sid, "start it")
	testproc.WaitLive(t, waitLimit, "sleep 61.61", "sleep 61.62") // the negative control: both run after the turn ended
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testproc.WaitNoneLive(t, waitLimit, "sleep 61.61")
	testproc.WaitNoneLive(t, waitLimit, "sleep 61.62")
	waitBrokerGone(t, waitLimit)
}
