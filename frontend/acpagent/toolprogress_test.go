package acpagent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/test/editor"
)

// statuses lists the statuses a call's entry went through, in order.
func statuses(ups []acp.SessionNotification, id string) []acp.ToolCallStatus {
	var out []acp.ToolCallStatus
	for _, u := range ups {
		if c := u.Update.ToolCall; c != nil && string(c.ToolCallId) == id {
			out = append(out, c.Status)
		}
		if c := u.Update.ToolCallUpdate; c != nil && string(c.ToolCallId) == id && c.Status != nil {
			out = append(out, *c.Status)
		}
	}
	return out
}

// A call shows running once its question is answered, not while it waits for the user.
func TestCallRunsAfterItsQuestion(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "hello\n")
	sid := e.newSession()
	var atQuestion []acp.ToolCallStatus
	e.ed.Answer = func(ctx context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
		e.ed.Mu.Lock()
		atQuestion = statuses(e.ed.Updates, "toolu_edit")
		e.ed.Mu.Unlock()
		return editor.Selected("once"), nil
	}
	e.fake.Push(tool("toolu_edit", "edit_file", `{"path":"a.txt","old_string":"hello","new_string":"bye"}`), model.TextStep("ok"))
	e.promptOK(sid, "edit")
	want := []acp.ToolCallStatus{acp.ToolCallStatusPending}
	if fmt.Sprint(atQuestion) != fmt.Sprint(want) {
		t.Errorf("statuses while asked %v, want %v", atQuestion, want)
	}
	ups, _ := e.ed.Snapshot()
	want = []acp.ToolCallStatus{acp.ToolCallStatusPending, acp.ToolCallStatusInProgress, acp.ToolCallStatusCompleted}
	if got := statuses(ups, "toolu_edit"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
}

// A command that prints nothing for a while already shows running, and each progress update carries the tail of
// all its output so far (editors replace the content), not only the newest piece.
func TestProgressIsTheTailOfAllOutput(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	cmd := "sleep 0.3; for i in $(seq 1 3000); do echo line$i; done; sleep 0.6; echo end; sleep 0.6"
	e.fake.Push(tool("toolu_b", "bash", fmt.Sprintf(`{"command":%q}`, cmd)), model.TextStep("ok"))
	e.promptOK(sid, "run")
	ups, _ := e.ed.Snapshot()
	st := statuses(ups, "toolu_b")
	if len(st) < 3 || st[1] != acp.ToolCallStatusInProgress {
		t.Fatalf("statuses %v: want in_progress right after pending", st)
	}
	var last string
	for _, u := range ups {
		c := u.Update.ToolCallUpdate
		if c == nil || string(c.ToolCallId) != "toolu_b" || c.Status == nil || *c.Status != acp.ToolCallStatusInProgress {
			continue
		}
		for _, ct := range c.Content {
			if ct.Content != nil && ct.Content.Content.Text != nil {
				last = ct.Content.Content.Text.Text
			}
		}
	}
	if !strings.HasSuffix(last, "end") || !strings.Contains(last, "line3000\n") {
		t.Errorf("the last progress ends %q: want the tail of all the output, with line3000 before end", tail(last, 80))
	}
	if len(last) > 8192 || strings.Contains(last, "line1\n") {
		t.Errorf("the last progress holds %d bytes: want a bounded tail", len(last))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
