// Package editor is a code editor's side of ACP for tests: the SDK's client, recording what the agent sends and
// answering its permission requests, for the in-process tests of frontend/acpagent and the process tests of test/.
package editor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// WaitLimit bounds every wait of the tests that use an Editor: reaching it is a failure, never a measurement.
const WaitLimit = 20 * time.Second

// Editor is the test's ACP client: it records what the agent sends and answers permission requests. Lock Mu to
// read the recorded fields while the agent may still send (WaitFor's predicate runs with it held).
type Editor struct {
	Mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	Updates []acp.SessionNotification
	Perms   []acp.RequestPermissionRequest
	FSUsed  []string
	// Answer decides a permission request; nil selects "once".
	Answer AnswerFunc
}

// AnswerFunc is how a test's user answers a permission request.
type AnswerFunc func(ctx context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)

// New returns an Editor that has recorded nothing.
func New() *Editor { return &Editor{changed: make(chan struct{})} }

func (e *Editor) touch() {
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *Editor) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	e.Mu.Lock()
	defer e.Mu.Unlock()
	e.Updates = append(e.Updates, n)
	e.touch()
	return nil
}

func (e *Editor) RequestPermission(ctx context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	e.Mu.Lock()
	e.Perms = append(e.Perms, r)
	e.touch()
	answer := e.Answer
	e.Mu.Unlock()
	if answer == nil {
		return Selected("once"), nil
	}
	return answer(ctx, r)
}

// Always is an Answer that selects the option id whatever is asked: a user who always answers the same.
func Always(id string) AnswerFunc {
	return func(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
		return Selected(id), nil
	}
}

// Selected is the answer that selects the option id.
func Selected(id string) acp.RequestPermissionResponse {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
		Selected: &acp.RequestPermissionOutcomeSelected{OptionId: acp.PermissionOptionId(id), Outcome: "selected"},
	}}
}

func (e *Editor) fs(what string) error {
	e.Mu.Lock()
	defer e.Mu.Unlock()
	e.FSUsed = append(e.FSUsed, what)
	return errors.New("the test editor offers no file system or terminal")
}

func (e *Editor) ReadTextFile(ctx context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, e.fs("fs/read_text_file")
}
func (e *Editor) WriteTextFile(ctx context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, e.fs("fs/write_text_file")
}
func (e *Editor) CreateTerminal(ctx context.Context, p acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, e.fs("terminal/create")
}
func (e *Editor) KillTerminal(ctx context.Context, p acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, e.fs("terminal/kill")
}
func (e *Editor) TerminalOutput(ctx context.Context, p acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, e.fs("terminal/output")
}
func (e *Editor) ReleaseTerminal(ctx context.Context, p acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, e.fs("terminal/release")
}
func (e *Editor) WaitForTerminalExit(ctx context.Context, p acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, e.fs("terminal/wait_for_exit")
}

// WaitFor waits until pred holds over the recorded messages.
func (e *Editor) WaitFor(t testing.TB, what string, pred func(e *Editor) bool) {
	t.Helper()
	deadline := time.After(WaitLimit)
	for {
		e.Mu.Lock()
		ok := pred(e)
		ch := e.changed
		e.Mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waited %v for %s; updates:\n%s", WaitLimit, what, e.Dump())
		}
	}
}

// Snapshot copies the updates and permission requests recorded so far.
func (e *Editor) Snapshot() ([]acp.SessionNotification, []acp.RequestPermissionRequest) {
	e.Mu.Lock()
	defer e.Mu.Unlock()
	return append([]acp.SessionNotification(nil), e.Updates...), append([]acp.RequestPermissionRequest(nil), e.Perms...)
}

// Dump is the recorded updates, one JSON line each, for a failure's message. Hold Mu or call it when the agent is
// done.
func (e *Editor) Dump() string {
	var b strings.Builder
	for _, u := range e.Updates {
		j, _ := json.Marshal(u.Update)
		fmt.Fprintf(&b, "  %s\n", j)
	}
	return b.String()
}

// Messages is the text of the agent_message_chunks of a session, joined.
func Messages(ups []acp.SessionNotification) string {
	var b strings.Builder
	for _, u := range ups {
		if c := u.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
			b.WriteString(c.Content.Text.Text)
		}
	}
	return b.String()
}

// ToolCall finds the tool_call of an id, its last status, and the text of its updates' content.
func ToolCall(ups []acp.SessionNotification, id string) (*acp.SessionUpdateToolCall, acp.ToolCallStatus, []string) {
	var tc *acp.SessionUpdateToolCall
	var st acp.ToolCallStatus
	var texts []string
	for _, u := range ups {
		if c := u.Update.ToolCall; c != nil && string(c.ToolCallId) == id {
			tc, st = c, c.Status
		}
		if c := u.Update.ToolCallUpdate; c != nil && string(c.ToolCallId) == id {
			if c.Status != nil {
				st = *c.Status
			}
			for _, ct := range c.Content {
				if ct.Content != nil && ct.Content.Content.Text != nil {
					texts = append(texts, ct.Content.Content.Text.Text)
				}
			}
		}
	}
	return tc, st, texts
}

// WantCancelledCall checks what the editor was told of a cancelled call: the call failed, and a line of Garuda's
// names it by its title ("Garuda: <title> cancelled.").
func (e *Editor) WantCancelledCall(t testing.TB, id, title string) {
	t.Helper()
	ups, _ := e.Snapshot()
	if _, st, _ := ToolCall(ups, id); st != acp.ToolCallStatusFailed {
		t.Errorf("the call %s ended %q, want failed", id, st)
	}
	if !strings.Contains(Messages(ups), "Garuda: "+title+" cancelled.") {
		t.Errorf("no line names the cancelled call: %q", Messages(ups))
	}
}

// Transcript is what an editor shows of a session's updates: runs of message or thought chunks joined, a tool
// call's progress left out, the / menu left out. Each update as its JSON, to compare ids, order, statuses and
// content at once.
func Transcript(ups []acp.SessionNotification, sid string) []string {
	var out []string
	lastKind := ""
	for _, n := range ups {
		if string(n.SessionId) != sid {
			continue
		}
		u := n.Update
		switch {
		case u.AvailableCommandsUpdate != nil:
			continue
		case u.ToolCallUpdate != nil && (u.ToolCallUpdate.Status == nil || *u.ToolCallUpdate.Status == acp.ToolCallStatusInProgress):
			continue
		case u.AgentMessageChunk != nil || u.AgentThoughtChunk != nil:
			kind, text := "message", ""
			if u.AgentThoughtChunk != nil {
				kind, text = "thought", u.AgentThoughtChunk.Content.Text.Text
			} else {
				text = u.AgentMessageChunk.Content.Text.Text
			}
			if kind == lastKind {
				out[len(out)-1] += text
				continue
			}
			lastKind = kind
			out = append(out, kind+": "+text)
			continue
		}
		lastKind = ""
		j, _ := json.Marshal(u)
		out = append(out, string(j))
	}
	return out
}

// UserChunk is the transcript line of a user's text prompt, as session/load replays it.
func UserChunk(text string) string {
	j, _ := json.Marshal(acp.SessionUpdate{UserMessageChunk: &acp.SessionUpdateUserMessageChunk{Content: acp.TextBlock(text)}})
	return string(j)
}

// LoadRequest is session/load of sid in cwd with no MCP servers.
func LoadRequest(sid, cwd string) acp.LoadSessionRequest {
	return acp.LoadSessionRequest{SessionId: acp.SessionId(sid), Cwd: cwd, McpServers: []acp.McpServer{}}
}

// RequestError is the JSON-RPC error of err, or fails t.
func RequestError(t testing.TB, err error) *acp.RequestError {
	t.Helper()
	var re *acp.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not a JSON-RPC error", err, err)
	}
	return re
}
