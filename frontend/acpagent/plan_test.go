package acpagent

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/test/editor"
)

// plans lists the plan updates of a session, in order.
func plans(ups []acp.SessionNotification, sid string) [][]acp.PlanEntry {
	var out [][]acp.PlanEntry
	for _, u := range ups {
		if string(u.SessionId) == sid && u.Update.Plan != nil {
			out = append(out, u.Update.Plan.Entries)
		}
	}
	return out
}

// The model's todo list reaches the editor as plan updates (the whole list each time), the model hears a short
// summary, and a loaded session shows the last plan again.
func TestTodoIsThePlanOnTheWireAndAfterLoad(t *testing.T) {
	base := t.TempDir()
	e := newEnvIn(t, base)
	sid := e.newSession()
	first := `{"todos":[{"content":"Read the code","status":"in_progress","priority":"high"},{"content":"Fix the bug","status":"pending"}]}`
	second := `{"todos":[{"content":"Read the code","status":"completed","priority":"high"},{"content":"Fix the bug","status":"in_progress"}]}`
	e.fake.Push(tool("toolu_t1", "todo", first), tool("toolu_t2", "todo", second), model.TextStep("planned"))
	e.promptOK(sid, "plan it")
	ups, _ := e.ed.Snapshot()
	got := plans(ups, sid)
	want := [][]acp.PlanEntry{
		{{Content: "Read the code", Status: "in_progress", Priority: "high"}, {Content: "Fix the bug", Status: "pending", Priority: "medium"}},
		{{Content: "Read the code", Status: "completed", Priority: "high"}, {Content: "Fix the bug", Status: "in_progress", Priority: "medium"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("plans %v, want %v", got, want)
	}
	tc, st, texts := editor.ToolCall(ups, "toolu_t2")
	if tc == nil || tc.Title != "Update the plan" || tc.Kind != acp.ToolKindThink || st != acp.ToolCallStatusCompleted {
		t.Errorf("tool call %+v, status %s", tc, st)
	}
	reqs := e.fake.Requests()
	heard := reqs[len(reqs)-1].LastUserText()
	if !strings.Contains(heard, "2 entries: 1 completed, 1 in progress, 0 pending") || !strings.Contains(heard, "In progress: Fix the bug") {
		t.Errorf("the model heard %q (texts %q)", heard, texts)
	}
	e.stop()

	e2 := newEnvIn(t, base)
	if _, err := e2.conn.LoadSession(e2.ctx(), editor.LoadRequest(sid, e2.root)); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	replay, _ := e2.ed.Snapshot()
	if got := plans(replay, sid); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("replayed plans %v, want %v", got, want)
	}
}

// A list too long for any editor is refused with a clear reason, and an entry with hidden characters is shown
// escaped: nothing the editor shows reads as other text.
func TestTodoBadInput(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	var many []map[string]string
	for i := range 10000 {
		many = append(many, map[string]string{"content": fmt.Sprint("step ", i), "status": "pending"})
	}
	big, _ := json.Marshal(map[string]any{"todos": many})
	hidden := `{"todos":[{"content":"Fix\u202e the bug` + strings.Repeat("x", 300) + `","status":"pending"}]}`
	e.fake.Push(tool("toolu_big", "todo", string(big)), tool("toolu_bad", "todo", `{"todos":[{"content":"a","status":"done"}]}`),
		tool("toolu_hid", "todo", hidden), model.TextStep("ok"))
	e.promptOK(sid, "plan")
	ups, _ := e.ed.Snapshot()
	for id, want := range map[string]string{"toolu_big": "10000 entries, at most 100", "toolu_bad": `status "done"`} {
		if _, st, texts := editor.ToolCall(ups, id); st != acp.ToolCallStatusFailed || !strings.Contains(strings.Join(texts, ""), want) {
			t.Errorf("%s: status %s, texts %q; want failed with %q", id, st, texts, want)
		}
	}
	got := plans(ups, sid)
	if len(got) != 1 || len(got[0]) != 1 {
		t.Fatalf("plans %v: want only the one with hidden characters", got)
	}
	c := got[0][0].Content
	if strings.Contains(c, "\u202e") || !strings.Contains(c, `\u202e`) || len([]rune(c)) > 200 {
		t.Errorf("entry %q: want the character escaped and the entry cut", c)
	}
	reqs := e.fake.Requests()
	if heard := reqs[len(reqs)-1].LastUserText(); !strings.Contains(heard, "hidden characters") || !strings.Contains(heard, "cut to 200") {
		t.Errorf("the model heard %q", heard)
	}
}
