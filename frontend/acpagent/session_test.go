package acpagent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/test/editor"
)

func TestNewSessionNeedsAnAbsoluteFolder(t *testing.T) {
	e := newEnv(t)
	for _, cwd := range []string{"proj", "./proj", filepath.Join(e.root, "missing"), e.root + "\x00x"} {
		_, err := e.conn.NewSession(e.ctx(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
		if err == nil {
			t.Errorf("session/new with cwd %q succeeded", cwd)
			continue
		}
		want := "absolute path to a folder"
		switch {
		case strings.ContainsRune(cwd, 0):
			want = "a NUL character" // not "the read rules hide this folder"
		case filepath.IsAbs(cwd):
			want = "must be an existing folder"
		}
		if re := editor.RequestError(t, err); re.Code != -32602 || !strings.Contains(fmt.Sprint(re.Data), want) {
			t.Errorf("cwd %q: %v", cwd, re)
		}
	}
}

func TestNewSessionAuthRequiredThenSetupWorksWithoutRestart(t *testing.T) {
	e := newEnv(t, withoutKey())
	_, err := e.conn.NewSession(e.ctx(), acp.NewSessionRequest{Cwd: e.root, McpServers: []acp.McpServer{}})
	if err == nil {
		t.Fatal("session/new without a key succeeded")
	}
	re := editor.RequestError(t, err)
	if re.Code != -32000 || !strings.Contains(re.Message, "garuda setup") {
		t.Errorf("error %v, want -32000 naming garuda setup", re)
	}
	// The configuration is read again for each session/new: a key given now works on the same connection.
	e.setEnv("ANTHROPIC_API_KEY", "now-set")
	e.newSession()
}

func TestNewSessionModesAndCommandsAfterTheResponse(t *testing.T) {
	e := newEnv(t)
	res, err := e.conn.NewSession(e.ctx(), acp.NewSessionRequest{Cwd: e.root, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res.Modes)
	want := `{"availableModes":[{"description":"Edits ask first; commands run in the sandbox.","id":"build","name":"Build"},` +
		`{"description":"Reads and plans. No edits; commands cannot write the project.","id":"plan","name":"Plan"}],"currentModeId":"build"}`
	if string(got) != want {
		t.Errorf("modes\n got %s\nwant %s", got, want)
	}
	sid := string(res.SessionId)
	e.ed.WaitFor(t, "available_commands_update", func(ed *editor.Editor) bool {
		return slices.ContainsFunc(ed.Updates, func(u acp.SessionNotification) bool { return u.Update.AvailableCommandsUpdate != nil })
	})
	// On the wire, the response comes before the update.
	resp, upd := -1, -1
	for i, l := range e.lines() {
		if strings.Contains(l, `"result"`) && strings.Contains(l, sid) && resp < 0 {
			resp = i
		}
		if strings.Contains(l, "available_commands_update") && upd < 0 {
			upd = i
		}
	}
	if resp < 0 || upd < 0 || upd < resp {
		t.Errorf("response at line %d, available_commands_update at line %d", resp, upd)
	}
	// Two sessions in one process are independent.
	other := e.newSession()
	if other == sid {
		t.Error("two sessions share an id")
	}
}

func TestPlanModeDeniesEditsWithoutAQuestion(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	if _, err := e.conn.SetSessionMode(e.ctx(), acp.SetSessionModeRequest{SessionId: acp.SessionId(sid), ModeId: "plan"}); err != nil {
		t.Fatal(err)
	}
	e.fake.Push(tool("toolu_w", "write_file", `{"path":"p.txt","content":"x"}`), model.TextStep("planned"))
	e.promptOK(sid, "write")
	ups, perms := e.ed.Snapshot()
	if len(perms) != 0 {
		t.Errorf("plan mode asked %d questions", len(perms))
	}
	if _, err := os.Stat(filepath.Join(e.root, "p.txt")); !os.IsNotExist(err) {
		t.Error("plan mode wrote p.txt")
	}
	if _, st, _ := editor.ToolCall(ups, "toolu_w"); st != acp.ToolCallStatusFailed {
		t.Errorf("status %q", st)
	}
	if !strings.Contains(e.fake.Requests()[0].System, "plan") {
		t.Error("the system prompt does not say plan mode")
	}
	if _, err := e.conn.SetSessionMode(e.ctx(), acp.SetSessionModeRequest{SessionId: acp.SessionId(sid), ModeId: "yolo"}); err == nil {
		t.Error("an unknown mode was accepted")
	}
}

func TestSetModeDuringATurnAppliesFromTheNextTurn(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	hold := make(chan struct{})
	e.fake.Push(model.Step{Deltas: []model.FakeDelta{{Kind: model.DeltaText, Text: "a"}}, Wait: hold,
		Response: &model.Response{Message: model.Message{Content: []model.Block{{
			Type: model.BlockToolUse, ToolUseID: "toolu_w", Name: "write_file", Input: json.RawMessage(`{"path":"b.txt","content":"x"}`),
		}}}, StopReason: model.StopToolUse}},
		model.TextStep("ok"))
	done := make(chan struct{})
	go func() { e.promptOK(sid, "write"); close(done) }()
	e.ed.WaitFor(t, "the turn to run", func(ed *editor.Editor) bool { return strings.Contains(editor.Messages(ed.Updates), "a") })
	if _, err := e.conn.SetSessionMode(e.ctx(), acp.SetSessionModeRequest{SessionId: acp.SessionId(sid), ModeId: "plan"}); err != nil {
		t.Fatal(err)
	}
	close(hold)
	<-done
	if e.read("b.txt") != "x" {
		t.Error("the running turn's write was refused: the mode changed mid-turn")
	}
	e.fake.Push(tool("toolu_w2", "write_file", `{"path":"c.txt","content":"x"}`), model.TextStep("ok"))
	e.promptOK(sid, "write again")
	if _, err := os.Stat(filepath.Join(e.root, "c.txt")); !os.IsNotExist(err) {
		t.Error("the next turn wrote c.txt in plan mode")
	}
}

func TestCustomCommandWithConsentAndMenu(t *testing.T) {
	e := newEnv(t)
	e.write(".garuda/commands/review.md",
		"---\ndescription: Review the code\nargument-hint: <file>\n---\nPlease review $ARGUMENTS carefully.\n")
	sid := e.newSession()
	ups, _ := e.ed.Snapshot()
	var menu []acp.AvailableCommand
	for _, u := range ups {
		if u.Update.AvailableCommandsUpdate != nil {
			menu = u.Update.AvailableCommandsUpdate.AvailableCommands
		}
	}
	if !slices.ContainsFunc(menu, func(c acp.AvailableCommand) bool {
		return c.Name == "review" && c.Description == "Review the code" && c.Input != nil && c.Input.Unstructured.Hint == "<file>"
	}) {
		t.Errorf("the / menu lacks review: %+v", menu)
	}

	e.fake.Push(model.TextStep("reviewed"))
	e.promptEndsTurn(sid, "/review main.go")
	reqs := e.fake.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].LastUserText(), "Please review main.go carefully.") {
		t.Errorf("the model did not get the command's prompt: %+v", reqs)
	}
	// The project's command needed a consent, which is not about a tool call: it has its own entry first.
	tc, ups := e.oneQuestionEntry()
	if !strings.Contains(tc.Title, "review") {
		t.Errorf("question title %q", tc.Title)
	}
}

// A set_mode sent together with a prompt (JSON-RPC lets the two run at once): the whole turn runs in one mode, the
// system prompt's and the broker's alike, whichever of the two the agent took first.
func TestSetModeWithAPromptRunsTheTurnInOneMode(t *testing.T) {
	e := newEnv(t)
	for i := range 12 {
		sid := e.newSession()
		before := len(e.fake.Requests())
		name := fmt.Sprintf("m%d.txt", i)
		e.fake.Push(tool("toolu_m", "write_file", `{"path":"`+name+`","content":"x"}`), model.TextStep("ok"))
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := e.conn.SetSessionMode(e.ctx(), acp.SetSessionModeRequest{SessionId: acp.SessionId(sid), ModeId: "plan"}); err != nil {
				t.Error(err)
			}
		}()
		go func() { defer wg.Done(); e.promptOK(sid, "write") }()
		wg.Wait()
		reqs := e.fake.Requests()
		if len(reqs) <= before {
			t.Fatal("the turn sent no model request")
		}
		planPrompt := strings.Contains(reqs[before].System, "Plan mode")
		_, err := os.Stat(filepath.Join(e.root, name))
		written := err == nil
		if planPrompt == written {
			t.Fatalf("run %d: the system prompt says plan mode: %v, the file was written: %v", i, planPrompt, written)
		}
	}
}
