package acpagent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/test/editor"
)

// hookSettings writes $GARUDA_HOME/settings.json with hooks: event → a shell command (every matcher "*").
func (e *env) hookSettings(hooks map[string]string) {
	e.t.Helper()
	var entries []string
	for ev, cmd := range hooks {
		c, _ := json.Marshal(cmd)
		entries = append(entries, fmt.Sprintf(`%q: [{"matcher": "*", "hooks": [{"type": "command", "command": %s}]}]`, ev, c))
	}
	e.writeHome("settings.json", `{"hooks": {`+strings.Join(entries, ",")+`}}`)
}

// A PreToolUse hook that denies bash makes the editor's tool call end failed with the hook's reason, and the command
// does not run; the model gets the reason. Control: a read the hook lets through completes.
func TestHookDeniesBashInTheEditor(t *testing.T) {
	e := newEnv(t)
	e.hookSettings(map[string]string{"PreToolUse": `in=$(cat); case "$in" in *'"tool_name":"Bash"'*) echo "no shell ` +
		`today" >&2; exit 2;; esac`})
	e.write("a.txt", "alpha\n")
	sid := e.newSession()
	e.fake.Push(tool("toolu_b", "bash", `{"command":"touch ran"}`), tool("toolu_r", "read_file", `{"path":"a.txt"}`), model.TextStep("done"))
	e.promptEndsTurn(sid, "go")
	ups, perms := e.ed.Snapshot()
	if _, st, texts := editor.ToolCall(ups, "toolu_b"); st != acp.ToolCallStatusFailed ||
		!strings.Contains(strings.Join(texts, "\n"), "no shell today") {
		t.Fatalf("bash: %q %q\n%s", st, texts, e.ed.Dump())
	}
	if e.read("ran") != "" || fileExists(filepath.Join(e.root, "ran")) || len(perms) != 0 {
		t.Fatalf("the denied command ran (or asked: %d questions)", len(perms))
	}
	if _, st, _ := editor.ToolCall(ups, "toolu_r"); st != acp.ToolCallStatusCompleted {
		t.Errorf("control: read %q", st)
	}
	reqs := e.fake.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(fmt.Sprint(last.Messages), "no shell today") {
		t.Error("the model did not get the hook's reason")
	}
}

func fileExists(p string) bool { _, err := os.Lstat(p); return err == nil }

// SessionStart (at the first prompt only) and UserPromptSubmit give the model context; a UserPromptSubmit block
// stops the prompt with a "Garuda:" notice and no model request; a Notification hook runs when a question is asked;
// Stop runs at the turn's end; SessionEnd at session/close.
func TestHookTurnEvents(t *testing.T) {
	e := newEnv(t)
	log := filepath.Join(e.root, "events.log")
	logIt := fmt.Sprintf(`cat >> %q; echo >> %q`, log, log)
	e.hookSettings(map[string]string{
		"SessionStart":     logIt + "; echo started-context",
		"UserPromptSubmit": `p=$(cat); if [[ "$p" == *forbidden* ]]; then echo "not that" >&2; exit 2; fi; echo prompt-context`,
		"Notification":     logIt,
		"Stop":             logIt,
		"SessionEnd":       logIt,
	})
	sid := e.newSession()
	e.fake.Push(tool("toolu_w", "write_file", `{"path":"x.txt","content":"x"}`), model.TextStep("one"), model.TextStep("two"))
	e.promptOK(sid, "first")
	e.promptOK(sid, "second")
	reqs := e.fake.Requests()
	first, second := fmt.Sprint(reqs[0].Messages), fmt.Sprint(reqs[len(reqs)-1].Messages)
	if !strings.Contains(first, "started-context") || !strings.Contains(first, "prompt-context") {
		t.Errorf("first request lacks the hooks' context: %s", first)
	}
	if strings.Count(second, "started-context") != 1 {
		t.Errorf("SessionStart ran again: %s", second)
	}
	n := len(reqs)
	e.promptEndsTurn(sid, "something forbidden") // a blocked prompt ends its turn
	ups, _ := e.ed.Snapshot()
	if len(e.fake.Requests()) != n || !strings.Contains(editor.Messages(ups), "Garuda: a hook blocked this prompt: not that") {
		t.Fatalf("the blocked prompt reached the model, or no notice:\n%s", editor.Messages(ups))
	}
	if _, err := e.conn.CloseSession(e.ctx(), acp.CloseSessionRequest{SessionId: acp.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(log)
	for _, ev := range []string{"SessionStart", "Notification", "Stop", "SessionEnd"} {
		if !strings.Contains(string(data), `"hook_event_name":"`+ev+`"`) {
			t.Errorf("%s did not run:\n%s", ev, data)
		}
	}
	if strings.Count(string(data), `"hook_event_name":"Stop"`) != 2 {
		t.Errorf("Stop ran %d times for 2 turns that ended", strings.Count(string(data), `"hook_event_name":"Stop"`))
	}
}

// A Stop hook that blocks keeps the turn going with its reason as the model's next prompt, a bounded number of times.
func TestHookStopContinuesTheTurn(t *testing.T) {
	e := newEnv(t)
	e.hookSettings(map[string]string{"Stop": `in=$(cat); if [[ "$in" == *'"stop_hook_active":false'* ]]; then echo ` +
		`"run the tests first" >&2; exit 2; fi`})
	sid := e.newSession()
	e.fake.Push(model.TextStep("done?"), model.TextStep("tests run"))
	e.promptOK(sid, "go")
	reqs := e.fake.Requests()
	if len(reqs) != 2 || !strings.Contains(fmt.Sprint(reqs[1].Messages), "run the tests first") {
		t.Fatalf("%d requests; the Stop hook's reason did not reach the model", len(reqs))
	}
}

// A SubagentStop hook runs when a subagent would end; a block keeps the subagent going with its reason as the
// subagent's next prompt (not the parent's), and the parent hears the subagent's final answer.
func TestHookSubagentStopContinuesTheSubagent(t *testing.T) {
	e := newEnv(t)
	e.hookSettings(map[string]string{"SubagentStop": `in=$(cat); if [[ "$in" == *'"stop_hook_active":false'* ]]; ` +
		`then echo "check the second file too" >&2; exit 2; fi`})
	sid := e.newSession()
	e.fake.Push(subagentCall("toolu_sub", "explore", "look"), model.TextStep("first look"), model.TextStep("both files seen"),
		model.TextStep("the subagent is done"))
	e.promptOK(sid, "explore")
	reqs := e.fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4 (parent, subagent, subagent again, parent)", len(reqs))
	}
	if h := reqs[2].LastUserText(); !strings.Contains(h, "check the second file too") {
		t.Errorf("the subagent's second request heard %q, not the hook's reason", h)
	}
	if h := reqs[3].LastUserText(); !strings.Contains(h, "both files seen") {
		t.Errorf("the parent heard %q, not the subagent's final answer", h)
	}
}

// A project's hooks (.claude/settings.json) ask first, as a question of its own in the editor; allowed, they run.
func TestHookProjectConsentInTheEditor(t *testing.T) {
	e := newEnv(t)
	e.write(".claude/settings.json", `{"model": "opus", "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", `+
		`"command": "echo from-the-project"}]}]}}`)
	sid := e.newSession()
	e.fake.Push(model.TextStep("ok"))
	e.promptOK(sid, "hi")
	_, perms := e.ed.Snapshot()
	if len(perms) != 1 || perms[0].ToolCall.Title == nil || *perms[0].ToolCall.Title != "Run the project's hooks?" {
		t.Fatalf("%d questions: %+v", len(perms), perms)
	}
	if !strings.Contains(fmt.Sprint(e.fake.Requests()[0].Messages), "from-the-project") {
		t.Error("the allowed project hook did not run")
	}
}

// The front end reports only the hook events the broker listed at the session's open; a team policy that could not
// be read is listed for UserPromptSubmit, so the prompt is still blocked (fail closed) and the model never asked.
// The control: with a readable team policy, the same prompt reaches the model.
func TestHookUnreadableTeamPolicyBlocksThePrompt(t *testing.T) {
	for _, broken := range []bool{true, false} {
		e := newEnv(t)
		policy := `{"permissions": {"deny": ["bash(rm -rf /)"]}}`
		if broken {
			policy = `{"permissions": `
		}
		e.writeHome("policy.json", policy)
		sid := e.newSession()
		e.fake.Push(model.TextStep("answered"))
		e.promptOK(sid, "hello")
		ups, _ := e.ed.Snapshot()
		var text strings.Builder
		for _, u := range ups {
			if c := u.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
				text.WriteString(c.Content.Text.Text)
			}
		}
		asked := len(e.fake.Requests()) > 0
		if broken && (asked || !strings.Contains(text.String(), "team policy could not be read")) {
			t.Errorf("unreadable team policy: model asked %v, said %q", asked, text.String())
		}
		if !broken && !asked {
			t.Errorf("control: a readable team policy blocked the prompt: %q", text.String())
		}
	}
}
