package test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/frontend/model/fakeprovider"

	"github.com/garuda-dev/garuda/internal/testproc"
)

// startWithCommand starts garuda acp against a fake provider whose model runs `sleep <marker>` in the sandbox,
// sends the prompt and waits until the command runs.
func startWithCommand(t *testing.T, marker string) *editor {
	t.Helper()
	srv, err := fakeprovider.Serve("127.0.0.1:0", []fakeprovider.Turn{
		{ToolCalls: []fakeprovider.ToolCall{{ID: "call_1", Name: "bash", Input: fmt.Sprintf(`{"command":"sleep %s & sleep %s; wait"}`, marker, marker)}}},
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
	e.request("initialize", initParams())
	res := e.request("session/new", map[string]any{"cwd": root, "mcpServers": []any{}})
	r, _ := res["result"].(map[string]any)
	sid, _ := r["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new: %v\nstderr:\n%s", res, e.stderr)
	}
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":99,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"run it"}]}}`, sid)
	e.stdin.Write([]byte(msg + "\n"))
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
	waitGone(t, bins.exec, 5*time.Second)
}

// The front end is SIGKILLed while a command runs: the broker notices and nothing of the command is left.
func TestRunningCommandEndsWithFrontEndKilled(t *testing.T) {
	marker := "61.4032"
	e := startWithCommand(t, marker)
	e.cmd.Process.Signal(syscall.SIGKILL)
	e.cmd.Wait()
	waitNoCommand(t, marker)
	waitGone(t, bins.exec, 5*time.Second)
}
