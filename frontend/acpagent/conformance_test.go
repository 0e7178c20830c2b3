package acpagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/test/editor"
)

// These tests check what an editor relies on where the first tests did not look: each failed before its fix.

// raw writes lines to the agent's stdin in one write, in order, as an editor that sends them back to back. An agent
// that stopped reading fails the test instead of hanging it.
func (e *env) raw(lines ...string) {
	e.t.Helper()
	done := make(chan struct{})
	go func() {
		e.stdin.Write([]byte(strings.Join(lines, "\n") + "\n"))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(waitLimit):
		e.t.Errorf("the agent did not read a message within %v", waitLimit)
	}
}

// rawResponse waits (at most d) for the response to the request with the string id, and returns it decoded.
func (e *env) rawResponse(id string, d time.Duration) (map[string]any, bool) {
	marker := fmt.Sprintf(`"id":%q`, id)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, l := range e.lines() {
			if strings.Contains(l, marker) {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					e.t.Fatalf("response %s is not JSON: %v", l, err)
				}
				return m, true
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil, false
}

func promptLine(id, sid, text string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "session/prompt",
		"params": map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}})
	return string(b)
}

func cancelLine(sid string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sid)
}

// The SDK runs each request in its own goroutine but notifications in order, so a session/cancel sent right after
// its session/prompt could be handled before the turn existed, and the turn then ran on as if never stopped.
func TestCancelRightAfterThePromptStopsIt(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	hold := make(chan struct{}) // the model never answers on its own: only a cancel ends the turn
	holding := true
	defer func() {
		if holding {
			close(hold)
		}
	}()
	for i := range 30 {
		e.fake.Push(model.Step{Deltas: []model.FakeDelta{{Kind: model.DeltaText, Text: "x"}}, Wait: hold,
			Response: &model.Response{StopReason: model.StopEndTurn}})
		id := fmt.Sprintf("race-%d", i)
		e.raw(promptLine(id, sid, "go"), cancelLine(sid))
		res, ok := e.rawResponse(id, 5*time.Second)
		if !ok {
			t.Fatalf("attempt %d: no answer 5 s after a cancel that followed the prompt: the cancel was lost", i)
		}
		if r, _ := res["result"].(map[string]any); r == nil || r["stopReason"] != "cancelled" {
			t.Fatalf("attempt %d: %v, want stopReason cancelled", i, res)
		}
	}
	// A cancel between turns does not stop the next turn.
	e.raw(cancelLine(sid))
	close(hold)
	holding = false
	e.fake = resetFake(e, model.TextStep("fine"))
	if stop := e.promptOK(sid, "hello"); stop != acp.StopReasonEndTurn {
		t.Errorf("the prompt after a cancel between turns ended %q", stop)
	}
}

// The spec: "Methods and fields that the schema marks UNSTABLE are not used." $/cancel_request is one; the SDK
// sends it when the context of an outgoing request ends.
func TestCancelDuringAQuestionSendsNoUnstableMethod(t *testing.T) {
	e := newEnv(t)
	e.ed.Answer = waitingAnswer
	sid := e.newSession()
	e.fake.Push(tool("toolu_w", "write_file", `{"path":"a.txt","content":"x"}`))
	done := make(chan acp.PromptResponse, 1)
	go func() {
		r, err := e.prompt(sid, acp.TextBlock("write"))
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	e.ed.WaitFor(t, "the question", func(ed *editor.Editor) bool { return len(ed.Perms) == 1 })
	e.conn.Cancel(e.ctx(), acp.CancelNotification{SessionId: acp.SessionId(sid)})
	if r := <-done; r.StopReason != acp.StopReasonCancelled {
		t.Fatalf("stop %q, want cancelled", r.StopReason)
	}
	// Another whole turn, so that anything queued by the cancel has been written.
	e.fake = resetFake(e, model.TextStep("again"))
	e.promptOK(sid, "hello")
	for _, l := range e.lines() {
		if strings.Contains(l, "$/cancel_request") {
			t.Errorf("Garuda sent the unstable $/cancel_request: %s", l)
		}
	}
}

// A broker notice of a result ("Garuda: Undone after the command, …": an editor file the command created) is a line
// for the user: an agent_message_chunk, not only a part of the tool's output, which editors fold away.
func TestResultNoticesAreGarudaLines(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	e.fake.Push(tool("toolu_b", "bash", `{"command":"mkdir -p sub/.zed && echo {} > sub/.zed/tasks.json"}`), model.TextStep("done"))
	if stop := e.promptOK(sid, "run"); stop != acp.StopReasonEndTurn {
		t.Fatalf("stop %q", stop)
	}
	ups, _ := e.ed.Snapshot()
	_, st, texts := editor.ToolCall(ups, "toolu_b")
	if st != acp.ToolCallStatusCompleted || !strings.Contains(strings.Join(texts, ""), "sub/.zed") {
		t.Fatalf("negative control: the command's output lacks the warning: %q %q", st, texts)
	}
	if m := editor.Messages(ups); !strings.Contains(m, "Garuda: Undone after the command") {
		t.Errorf("the warning is not a Garuda line: messages %q", m)
	}
}

// An empty prompt is the editor's mistake, not an internal error: invalid params that say so, and nothing recorded
// or sent to the model.
func TestEmptyPromptIsInvalidParams(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	for name, blocks := range map[string][]acp.ContentBlock{
		"no blocks":  {},
		"empty text": {acp.TextBlock("")},
		"whitespace": {acp.TextBlock("  \n\t ")},
	} {
		_, err := e.prompt(sid, blocks...)
		if err == nil {
			t.Errorf("%s: the prompt succeeded", name)
			continue
		}
		if re := reqErr(t, err); re.Code != -32602 || !strings.Contains(re.Message, "the prompt is empty") {
			t.Errorf("%s: error %d %q, want -32602 saying the prompt is empty", name, re.Code, re.Message)
		}
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("an empty prompt reached the model (%d requests)", n)
	}
	e.fake.Push(model.TextStep("ok"))
	if stop := e.promptOK(sid, "hi"); stop != acp.StopReasonEndTurn {
		t.Errorf("the next prompt ended %q", stop)
	}
}

// Editors show a JSON-RPC error's message; an invalid-params error must say in it what is wrong.
func TestInvalidParamsSayWhatIsWrong(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	_, err := e.conn.NewSession(e.ctx(), acp.NewSessionRequest{Cwd: "proj", McpServers: []acp.McpServer{}})
	check := func(what string, err error, want string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s succeeded", what)
			return
		}
		if re := reqErr(t, err); re.Code != -32602 || !strings.Contains(re.Message, want) {
			t.Errorf("%s: error %d %q, want -32602 with %q in the message", what, re.Code, re.Message, want)
		}
	}
	check("session/new with a relative cwd", err, "cwd must be an absolute path to a folder")
	// The broker's refusals are one sentence: no gRPC wrapper, no sentinel words, no doubled prefix.
	for cwd, want := range map[string]string{
		"/no-such-garuda-folder": "root /no-such-garuda-folder: the root must be an existing folder",
		"/":                      "root /: choose a project folder (not / nor $GARUDA_HOME)",
	} {
		_, err := e.conn.NewSession(e.ctx(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
		check("session/new on "+cwd, err, want)
		if err != nil {
			if m := reqErr(t, err).Message; m != want {
				t.Errorf("session/new on %s: %q, want exactly %q", cwd, m, want)
			}
		}
	}
	_, err = e.prompt("no-such-session", acp.TextBlock("hi"))
	check("session/prompt of an unknown session", err, `unknown session "no-such-session"`)
	_, err = e.conn.SetSessionMode(e.ctx(), acp.SetSessionModeRequest{SessionId: "no-such-session", ModeId: "plan"})
	check("session/set_mode of an unknown session", err, `unknown session "no-such-session"`)
	_, err = e.conn.SetSessionMode(e.ctx(), acp.SetSessionModeRequest{SessionId: acp.SessionId(sid), ModeId: "yolo"})
	check("session/set_mode with an unknown mode", err, `unknown mode "yolo"`)
}

// A malformed line is logged as its first few hundred bytes and its length, by Garuda and not by the SDK (which logs
// it whole), and the agent goes on.
func TestMalformedLineIsLoggedBounded(t *testing.T) {
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	old := slog.Default()
	slog.SetDefault(logger) // the SDK logs through the default logger
	t.Cleanup(func() { slog.SetDefault(old) })
	e := newEnv(t, func(_ *env, o *Options) { o.Log = logger })
	sid := e.newSession()
	garbage := "{not json " + strings.Repeat("g", 5<<20)
	e.raw(garbage)
	e.fake.Push(model.TextStep("still here"))
	if stop := e.promptOK(sid, "hi"); stop != acp.StopReasonEndTurn {
		t.Errorf("the next prompt ended %q", stop)
	}
	got := logs.String()
	if len(got) > 4096 || !strings.Contains(got, fmt.Sprintf("bytes=%d", len(garbage)+1)) || !strings.Contains(got, "{not json ggg") {
		t.Errorf("log of %d bytes, want the line's length and head: %.600s", len(got), got)
	}
}

// lockedBuffer is a bytes.Buffer safe for the logger's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The SDK closes the connection on a line over 10 MiB, so one big selection sent as embedded context would end the
// agent and every session in it. The request gets an error instead, and the agent goes on.
func TestOverlongMessageGetsAnErrorAndTheAgentLives(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	big := promptLine("big-1", sid, strings.Repeat("y", 11<<20))
	e.raw(big)
	res, ok := e.rawResponse("big-1", waitLimit)
	if !ok {
		t.Fatal("no answer to a prompt over 10 MiB")
	}
	er, _ := res["error"].(map[string]any)
	if er == nil || er["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(er["message"]), "too large") {
		t.Errorf("answer %v, want an invalid-params error that says the message is too large", res)
	}
	e.fake.Push(model.TextStep("still here"))
	if stop := e.promptOK(sid, "hi"); stop != acp.StopReasonEndTurn {
		t.Errorf("the next prompt ended %q", stop)
	}
	// At the limit exactly (10 MiB with the newline) the SDK reads the message; one byte more, Garuda answers.
	for _, c := range []struct {
		size int
		code float64
	}{{maxLine, -32601}, {maxLine + 1, -32602}} {
		id := fmt.Sprintf("edge-%d", c.size)
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"x/none","params":{"pad":"`, id)
		e.raw(head + strings.Repeat("p", c.size-len(head)-len(`"}}`)-1) + `"}}`)
		res, _ := e.rawResponse(id, waitLimit)
		if er, _ := res["error"].(map[string]any); er == nil || er["code"] != c.code {
			t.Errorf("a message of %d bytes: %v, want error code %v", c.size, res, c.code)
		}
	}
	// Negative control: a prompt under the limit reaches the model (which may answer what it likes).
	asked := len(e.fake.Requests())
	e.raw(promptLine("big-2", sid, strings.Repeat("z", 1<<20)))
	res, ok = e.rawResponse("big-2", waitLimit)
	if !ok || strings.Contains(fmt.Sprint(res), "too large") || len(e.fake.Requests()) == asked {
		t.Errorf("a 1 MiB prompt did not reach the model: %v", res)
	}
}
