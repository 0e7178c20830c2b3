package acpagent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/agent"
	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/internal/testproc"
	"github.com/garuda-dev/garuda/test/editor"
)

// useTool runs one call of the model in a turn of its own and returns its entry's last status and what the model
// heard of it.
func (e *env) useTool(sid, id, name string, input any) (acp.ToolCallStatus, string) {
	e.t.Helper()
	raw, _ := json.Marshal(input)
	e.fake.Push(tool(id, name, string(raw)), model.TextStep("ok"))
	e.promptOK(sid, "go on")
	reqs := e.fake.Requests()
	ups, _ := e.ed.Snapshot()
	_, st, _ := editor.ToolCall(ups, id)
	return st, reqs[len(reqs)-1].LastUserText()
}

var procID = regexp.MustCompile(`(?m)^id: (bg-[0-9a-f]+)$`)

// startProcess starts a background process and returns its id.
func (e *env) startProcess(sid, callID, command string) string {
	e.t.Helper()
	st, heard := e.useTool(sid, callID, "process_manager", map[string]any{"action": "start", "command": command})
	m := procID.FindStringSubmatch(heard)
	if st != acp.ToolCallStatusCompleted || m == nil {
		e.t.Fatalf("start %q: status %s, result %q", command, st, heard)
	}
	return m[1]
}

// waitAlive waits until a `sleep arg` runs for each of args.
func waitAlive(t *testing.T, args ...string) {
	t.Helper()
	for _, arg := range args {
		testproc.WaitLive(t, waitLimit, "sleep "+arg)
	}
}

// waitGone waits until no process has the sleep argument.
func waitGone(t *testing.T, arg string) {
	t.Helper()
	testproc.WaitNoneLive(t, waitLimit, "sleep "+arg)
}

// A background process is started, read since a mark, given input, listed and stopped; its titles are the spec's.
func TestBackgroundProcessLifecycle(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	cmd := "echo ready; read line; echo got:$line; exec sleep 61.41"
	id := e.startProcess(sid, "toolu_start", cmd)
	ups, _ := e.ed.Snapshot()
	if tc, _, _ := editor.ToolCall(ups, "toolu_start"); tc == nil || tc.Title != "$ "+cmd || tc.Kind != acp.ToolKindExecute {
		t.Errorf("start entry %+v", tc)
	}
	n := 0
	read := func(since int) string {
		n++
		_, heard := e.useTool(sid, fmt.Sprint("toolu_read", n), "process_manager", map[string]any{"action": "read", "id": id, "since": since})
		return heard
	}
	heard := read(0)
	for !strings.Contains(heard, "ready") {
		heard = read(0)
	}
	ups, _ = e.ed.Snapshot()
	if tc, _, _ := editor.ToolCall(ups, "toolu_read1"); tc == nil || tc.Title != "Process "+id+": read" {
		t.Errorf("read entry %+v", tc)
	}
	mark := regexp.MustCompile(`next mark: (\d+)`).FindStringSubmatch(heard)
	if mark == nil || !strings.Contains(heard, "running for") {
		t.Fatalf("read: %q", heard)
	}
	if st, heard := e.useTool(sid, "toolu_in", "process_manager", map[string]any{"action": "input", "id": id,
		"input": "hello\n"}); st != acp.ToolCallStatusCompleted {
		t.Fatalf("input: %s %q", st, heard)
	}
	since := 0
	fmt.Sscan(mark[1], &since)
	heard = read(since)
	for !strings.Contains(heard, "got:hello") {
		heard = read(since)
	}
	if strings.Contains(heard, "ready") {
		t.Errorf("a read since the mark shows what came before it: %q", heard)
	}
	// The shell prints got:hello before it execs the sleep: wait for the sleep itself.
	for deadline := time.Now().Add(waitLimit); !sleeperAlive("61.41"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("negative control: the process is not running before the stop")
		}
	}
	if _, heard := e.useTool(sid, "toolu_list", "process_manager",
		map[string]any{"action": "list"}); !strings.Contains(heard, id+": running") {
		t.Errorf("list: %q", heard)
	}
	if st, heard := e.useTool(sid, "toolu_stop", "process_manager", map[string]any{"action": "stop",
		"id": id}); st != acp.ToolCallStatusCompleted || !strings.Contains(heard, "stopped") {
		t.Errorf("stop: %s %q", st, heard)
	}
	if sleeperAlive("61.41") {
		t.Error("the process is running after its stop answered")
	}
	// Reading a process that ended says how it ended.
	if heard := read(0); !strings.Contains(heard, "stopped") || !strings.Contains(heard, "got:hello") {
		t.Errorf("read after the end: %q", heard)
	}
}

// Every background process ends with its session: at session/close, and when the editor closes stdin; one that
// ignores SIGTERM and forks is killed with its whole pid namespace.
func TestBackgroundProcessesEndWithTheSession(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	e.startProcess(sid, "toolu_a", "trap '' TERM; (setsid sleep 61.42 &); sleep 61.43")
	waitAlive(t, "61.42", "61.43") // negative control: both run before the close
	if _, err := e.conn.CloseSession(e.ctx(), acp.CloseSessionRequest{SessionId: acp.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "61.42")
	waitGone(t, "61.43")

	sid2 := e.newSession()
	e.startProcess(sid2, "toolu_b", "trap '' TERM; sleep 61.44")
	waitAlive(t, "61.44")
	e.stop() // the editor closes stdin
	waitGone(t, "61.44")
}

// A session cannot see, read or stop the processes of another.
func TestBackgroundProcessOfAnotherSessionIsRefused(t *testing.T) {
	e := newEnv(t)
	a, b := e.newSession(), e.newSession()
	id := e.startProcess(a, "toolu_a", "exec sleep 61.45")
	waitAlive(t, "61.45")
	for _, action := range []string{"stop", "read", "input"} {
		st, heard := e.useTool(b, "toolu_b_"+action, "process_manager", map[string]any{"action": action, "id": id, "input": "x"})
		if st != acp.ToolCallStatusFailed || !strings.Contains(heard, "no background process") {
			t.Errorf("%s from another session: %s %q", action, st, heard)
		}
	}
	if _, heard := e.useTool(b, "toolu_b_list", "process_manager", map[string]any{"action": "list"}); strings.Contains(heard, id) {
		t.Errorf("another session lists it: %q", heard)
	}
	if !sleeperAlive("61.45") {
		t.Error("the process of the first session was stopped by the second")
	}
}

// A process that floods its output is read bounded (head and tail, with the mark) and its file is bounded; the
// limit of processes per session holds.
func TestBackgroundProcessFloodAndLimit(t *testing.T) {
	e := newEnv(t)
	e.writeHome("settings.json", `{"limits": {"background_processes": 1}}`)
	sid := e.newSession()
	id := e.startProcess(sid, "toolu_flood", "head -c 100000000 /dev/zero | tr '\\0' x; echo; echo the-end")
	_, heard := e.useTool(sid, "toolu_wait", "process_manager", map[string]any{"action": "wait", "id": id, "timeout_ms": 600000})
	if !strings.Contains(heard, "exited with code 0") || !strings.Contains(heard, "the-end") || !strings.Contains(heard, "bytes cut") {
		t.Errorf("wait: %q", tail(heard, 300))
	}
	if len(heard) > 40<<10 {
		t.Errorf("a read of a flood is %d bytes", len(heard))
	}
	files, _ := filepath.Glob(filepath.Join(e.home, "sessions", sid, "*.log"))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Size() > 64<<20 {
			t.Errorf("%s holds %d bytes", f, fi.Size())
		}
	}
	e.startProcess(sid, "toolu_one", "exec sleep 61.46")
	st, heard := e.useTool(sid, "toolu_two", "process_manager", map[string]any{"action": "start", "command": "exec sleep 61.47"})
	if st != acp.ToolCallStatusFailed || !strings.Contains(heard, "background_processes") {
		t.Errorf("a second process past the limit: %s %q", st, heard)
	}
	if sleeperAlive("61.47") {
		t.Error("the process past the limit runs")
	}
}

// A switch to plan mode stops the background processes (they could write the project), and the next prompt says so.
func TestPlanModeStopsBackgroundProcesses(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	id := e.startProcess(sid, "toolu_bg", "exec sleep 61.48")
	waitAlive(t, "61.48")
	if _, err := e.conn.SetSessionMode(e.ctx(), acp.SetSessionModeRequest{SessionId: acp.SessionId(sid), ModeId: agent.ModePlan}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "61.48")
	before, _ := e.ed.Snapshot()
	_, heard := e.useTool(sid, "toolu_list", "process_manager", map[string]any{"action": "list"})
	if !strings.Contains(heard, id+": stopped: the session switched to plan mode") {
		t.Errorf("list: %q", heard)
	}
	ups, _ := e.ed.Snapshot()
	if !strings.Contains(editor.Messages(ups[len(before):]), "plan mode stopped the background processes "+id) {
		t.Errorf("no notice: %q", editor.Messages(ups[len(before):]))
	}
}

// A bad process_manager call is a clear failure the model reads.
func TestBackgroundProcessBadInput(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	for i, c := range []struct {
		input map[string]any
		want  string
	}{
		{map[string]any{"action": "restart", "id": "x"}, "use start, list, read, wait, input or stop"},
		{map[string]any{"action": "start"}, "the command is empty"},
		{map[string]any{"action": "read"}, "the id is required"},
		{map[string]any{"action": "stop", "id": "bg-nope"}, "no background process"},
	} {
		if st, heard := e.useTool(sid, fmt.Sprint("toolu_bad", i), "process_manager",
			c.input); st != acp.ToolCallStatusFailed || !strings.Contains(heard, c.want) {
			t.Errorf("%v: %s %q", c.input, st, heard)
		}
	}
}
