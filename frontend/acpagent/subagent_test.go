package acpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/agent"
	"github.com/garuda-dev/garuda/frontend/brokerconn"
	"github.com/garuda-dev/garuda/frontend/model"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
	"github.com/garuda-dev/garuda/test/editor"
)

func subagentCall(id, agentName, task string) model.Step {
	in, _ := json.Marshal(map[string]string{"agent": agentName, "task": task})
	return tool(id, "subagent", string(in))
}

// explore runs read-only: a write it was not offered fails, and a command that writes runs with the project
// read-only (the broker's plan mode). Its answer is the result, its calls the content of its entry.
func TestExploreSubagentCannotWrite(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "alpha\n")
	sid := e.newSession()
	e.fake.Push(subagentCall("toolu_sub", "explore", "find alpha"),
		tool("toolu_w", "write_file", `{"path":"a.txt","content":"pwned"}`),
		tool("toolu_b", "bash", `{"command":"echo pwned > b.txt"}`),
		tool("toolu_r", "read_file", `{"path":"a.txt"}`),
		model.TextStep("a.txt:1 says alpha"),
		model.TextStep("the subagent found it"))
	e.promptEndsTurn(sid, "explore")
	if e.read("a.txt") != "alpha\n" || e.read("b.txt") != "" {
		t.Errorf("explore changed the project: a.txt %q, b.txt %q", e.read("a.txt"), e.read("b.txt"))
	}
	reqs := e.fake.Requests()
	sub := reqs[1]
	if sub.LastUserText() != "find alpha" || len(sub.Messages) != 1 {
		t.Errorf("the subagent's first request: %+v", sub.Messages)
	}
	for _, ts := range sub.Tools {
		if ts.Name == "write_file" || ts.Name == "subagent" || ts.Name == "todo" || ts.Name == "process_manager" {
			t.Errorf("explore is offered %s", ts.Name)
		}
	}
	if h := reqs[2].LastUserText(); !strings.Contains(h, "not one of this agent's tools") {
		t.Errorf("after write_file the subagent heard %q", h)
	}
	if h := reqs[3].LastUserText(); !strings.Contains(h, "Read-only file system") && !strings.Contains(h, "exit code") {
		t.Errorf("after the writing command the subagent heard %q", h)
	}
	if h := reqs[5].LastUserText(); !strings.Contains(h, "a.txt:1 says alpha") {
		t.Errorf("the parent heard %q", h)
	}
	ups, perms := e.ed.Snapshot()
	if len(perms) != 0 {
		t.Errorf("%d questions", len(perms))
	}
	tc, st, texts := editor.ToolCall(ups, "toolu_sub")
	if tc == nil || tc.Title != "Subagent: explore" || tc.Kind != acp.ToolKindThink || st != acp.ToolCallStatusCompleted {
		t.Fatalf("entry %+v, status %s", tc, st)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"✗ Write a.txt", "$ echo pwned > b.txt", "✓ Read a.txt", "a.txt:1 says alpha"} {
		if !strings.Contains(all, want) {
			t.Errorf("the entry's content lacks %q: %q", want, all)
		}
	}
	for _, id := range []string{"toolu_w", "toolu_b", "toolu_r"} {
		if c, _, _ := editor.ToolCall(ups, id); c != nil {
			t.Errorf("the subagent's call %s has an entry of its own", id)
		}
	}
}

// The narrowing is the broker's: a call that names plan mode is decided in plan mode whatever the front end does,
// while the same call without it writes (the negative control).
func TestPlanModeCallIsEnforcedByTheBroker(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	for _, c := range []struct {
		mode execv1.Mode
		want agent.Status
		file string
	}{{execv1.Mode_MODE_PLAN, agent.StatusDenied, "plan.txt"}, {execv1.Mode_MODE_UNSPECIFIED, agent.StatusCompleted, "build.txt"}} {
		r := &brokerconn.Runner{Client: e.broker, SessionID: sid, Mode: c.mode, Approver: onceApprover{}}
		in, _ := json.Marshal(map[string]string{"path": c.file, "content": "x"})
		res := r.Run(context.Background(), agent.ToolCall{ID: "c", Name: "write_file", Input: in}, nil)
		if res.Status != c.want || (e.read(c.file) != "") != (c.want == agent.StatusCompleted) {
			t.Errorf("mode %v: %s %q, file %q", c.mode, res.Status, res.Content, e.read(c.file))
		}
	}
}

type onceApprover struct{}

func (onceApprover) Ask(context.Context, *execv1.Question) execv1.Choice {
	return execv1.Choice_CHOICE_ONCE
}

// A question of a call inside a subagent is an entry of its own (garuda-question-<n>), not the subagent's.
func TestSubagentQuestionIsItsOwnEntry(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	outside := e.write("../outside.txt", "far away\n")
	in, _ := json.Marshal(map[string]string{"path": outside})
	e.fake.Push(subagentCall("toolu_sub", "explore", "read the outside file"),
		tool("toolu_1", "read_file", string(in)), model.TextStep("it says far away"), model.TextStep("done"))
	e.promptOK(sid, "go")
	_, ups := e.oneQuestionEntry()
	if _, st, texts := editor.ToolCall(ups, "toolu_sub"); st != acp.ToolCallStatusCompleted ||
		!strings.Contains(strings.Join(texts, "\n"), "it says far away") {
		t.Errorf("subagent entry %s %q", st, texts)
	}
}

// Cancel during a subagent stops it and the command it runs.
func TestCancelDuringSubagent(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	e.fake.Push(subagentCall("toolu_sub", "explore", "wait"), tool("toolu_s", "bash", `{"command":"sleep 61.51"}`),
		model.TextStep("never"), model.TextStep("never"))
	done := make(chan acp.PromptResponse, 1)
	go func() {
		r, _ := e.prompt(sid, acp.TextBlock("go"))
		done <- r
	}()
	waitAlive(t, "61.51")
	e.conn.Cancel(e.ctx(), acp.CancelNotification{SessionId: acp.SessionId(sid)})
	if r := <-done; r.StopReason != acp.StopReasonCancelled {
		t.Errorf("stop %q", r.StopReason)
	}
	waitGone(t, "61.51")
	ups, _ := e.ed.Snapshot()
	if _, st, _ := editor.ToolCall(ups, "toolu_sub"); st != acp.ToolCallStatusFailed {
		t.Errorf("subagent entry %s", st)
	}
}

// A custom agent in Claude Code's format runs with its own tools and instructions; a project's own asks consent
// first (its own entry), the user's own does not; an unknown name lists the agents.
func TestCustomAgents(t *testing.T) {
	e := newEnv(t)
	e.write(".claude/agents/reviewer.md", "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep\nmodel: "+
		"opus\n---\nYou review code harshly.\n")
	e.writeHome("agents/mine.md", "---\nname: mine\ndescription: Mine\n---\nBe brief.\n")
	sid := e.newSession()
	e.fake.Push(subagentCall("toolu_rev", "reviewer", "review a.go"), model.TextStep("looks fine"),
		subagentCall("toolu_mine", "mine", "hi"), model.TextStep("hello"),
		subagentCall("toolu_none", "nobody", "hi"), model.TextStep("done"))
	e.promptOK(sid, "go")
	reqs := e.fake.Requests()
	if sys := reqs[0].System; !strings.Contains(sys, "- explore: ") || !strings.Contains(sys, "- reviewer: Reviews code") ||
		!strings.Contains(sys, "- mine: Mine") {
		t.Errorf("the system prompt does not list the agents: %q", tail(sys, 400))
	}
	rev := reqs[1]
	var names []string
	for _, ts := range rev.Tools {
		names = append(names, ts.Name)
	}
	if strings.Join(names, ",") != "read_file,grep" || !strings.Contains(rev.System, "You review code harshly.") {
		t.Errorf("reviewer: tools %v, system prompt ends %q", names, tail(rev.System, 80))
	}
	if mine := reqs[3]; len(mine.Tools) == 0 || !strings.Contains(mine.System, "Be brief.") {
		t.Errorf("the user's agent: %d tools, system %q", len(mine.Tools), tail(mine.System, 80))
	}
	_, perms := e.ed.Snapshot()
	if len(perms) != 1 || !strings.Contains(*perms[0].ToolCall.Title, "agent reviewer") ||
		!strings.HasPrefix(string(perms[0].ToolCall.ToolCallId), "garuda-question-") {
		t.Errorf("consents %+v", perms)
	}
	ups, _ := e.ed.Snapshot()
	if _, st, texts := editor.ToolCall(ups, "toolu_none"); st != acp.ToolCallStatusFailed ||
		!strings.Contains(strings.Join(texts, ""), "explore, mine, reviewer") {
		t.Errorf("unknown agent: %s %q", st, texts)
	}
}

// A subagent that loops is stopped by its own limits, and its parent's turn goes on with what it said.
func TestSubagentThatLoopsIsStopped(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "alpha\n")
	sid := e.newSession()
	steps := []model.Step{subagentCall("toolu_sub", "explore", "loop")}
	for i := range 5 { // the fifth identical call stops the subagent's turn
		steps = append(steps, tool(fmt.Sprint("toolu_l", i), "read_file", `{"path":"a.txt"}`))
	}
	e.fake.Push(append(steps, model.TextStep("the parent goes on"))...)
	e.promptEndsTurn(sid, "go")
	reqs := e.fake.Requests()
	if h := reqs[len(reqs)-1].LastUserText(); !strings.Contains(h, "the subagent stopped before it finished (repeated_calls)") {
		t.Errorf("the parent heard %q", h)
	}
	if e.fake.Remaining() != 0 {
		t.Errorf("%d scripted answers left", e.fake.Remaining())
	}
}

// userAgent writes an agent of the user's own ($GARUDA_HOME/agents: no consent needed).
func (e *env) userAgent(name, frontmatter, body string) {
	e.t.Helper()
	dir := filepath.Join(e.home, "agents")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		e.t.Fatal(err)
	}
	text := "---\nname: " + name + "\ndescription: " + name + " agent\n" + frontmatter + "---\n" + body + "\n"
	if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(text), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// withModelLog records the name of every model client the front end makes (all of them are the fake).
func withModelLog(names *[]string) envOption {
	return func(e *env, o *Options) {
		o.NewModel = func(ms *execv1.ModelSettings, key string) (model.Client, error) {
			*names = append(*names, ms.GetName())
			return e.fake, nil
		}
	}
}

// A custom agent's frontmatter model is used: a model name as the picker takes it, or one of Claude Code's
// aliases (the newest offered model of the session's provider that holds it); "inherit" and an unknown model
// keep the session's, the unknown one with a note in the subagent's entry.
func TestCustomAgentModel(t *testing.T) {
	var made []string
	e := newEnv(t, withModelLog(&made))
	e.userAgent("alias", "model: opus\n", "Think hard.")
	e.userAgent("named", "model: claude-haiku-4-5\n", "Be quick.")
	e.userAgent("inherits", "model: inherit\n", "Same.")
	e.userAgent("unknown", "model: gpt-9000\n", "Who?")
	sid := e.newSession()
	e.fake.Push(subagentCall("toolu_a", "alias", "x"), model.TextStep("a"),
		subagentCall("toolu_n", "named", "x"), model.TextStep("n"),
		subagentCall("toolu_i", "inherits", "x"), model.TextStep("i"),
		subagentCall("toolu_u", "unknown", "x"), model.TextStep("u"), model.TextStep("done"))
	before := len(made)
	e.promptOK(sid, "go")
	if got := strings.Join(made[before:], ","); got != "claude-opus-4-5,claude-haiku-4-5" {
		t.Errorf("models made for the subagents: %q, want claude-opus-4-5 (opus) and claude-haiku-4-5 (named)", got)
	}
	ups, _ := e.ed.Snapshot()
	if _, st, texts := editor.ToolCall(ups, "toolu_u"); st != acp.ToolCallStatusCompleted ||
		!strings.Contains(strings.Join(texts, ""), `model "gpt-9000" is not available here: the subagent uses claude-sonnet-5`) {
		t.Errorf("unknown model: %s %q", st, texts)
	}
	if _, _, texts := editor.ToolCall(ups, "toolu_a"); !strings.Contains(strings.Join(texts, ""), "(model claude-opus-4-5)") {
		t.Errorf("the alias's entry does not say the model: %q", texts)
	}
}

// A subagent starts subagents only when its definition lists the tool (subagent, or Claude Code's Task), and never
// deeper than maxSubagentDepth; explore never does. Each nested one has at most its caller's tools.
func TestNestedSubagents(t *testing.T) {
	e := newEnv(t)
	e.userAgent("rec", "tools: Read, Task\n", "Delegate.")
	e.userAgent("flat", "tools: Read, Grep\n", "Do it yourself.")
	sid := e.newSession()
	e.fake.Push(subagentCall("toolu_1", "rec", "x"), // the session's loop
		subagentCall("toolu_2", "rec", "x"),     // depth 1
		subagentCall("toolu_3", "rec", "x"),     // depth 2
		model.TextStep("leaf"),                  // depth 3: no subagent tool
		model.TextStep("mid"),                   // depth 2
		subagentCall("toolu_4", "flat", "x"),    // depth 1 again
		model.TextStep("flat answer"),           // flat
		subagentCall("toolu_5", "explore", "x"), // depth 1 again
		model.TextStep("explored"),              // explore
		model.TextStep("top"),                   // depth 1
		model.TextStep("done"))                  // the session's loop
	e.promptOK(sid, "go")
	reqs := e.fake.Requests()
	if len(reqs) != 11 {
		t.Fatalf("%d model requests, want 11", len(reqs))
	}
	names := func(r model.Request) string {
		var n []string
		for _, ts := range r.Tools {
			n = append(n, ts.Name)
		}
		return strings.Join(n, ",")
	}
	for i, want := range map[int]string{1: "read_file,subagent", 2: "read_file,subagent", 3: "read_file", 6: "read_file", 8: "read_file"} {
		if got := names(reqs[i]); got != want {
			t.Errorf("request %d offered %q, want %q", i, got, want)
		}
	}
	if !strings.Contains(reqs[1].System, "- explore: ") || strings.Contains(reqs[3].System, "# Agents") {
		t.Errorf("the agents are listed where the subagent tool is offered, and only there")
	}
	ups, _ := e.ed.Snapshot()
	if _, st, texts := editor.ToolCall(ups, "toolu_1"); st != acp.ToolCallStatusCompleted ||
		!strings.Contains(strings.Join(texts, ""), "top") {
		t.Errorf("the outer subagent: %s %q", st, texts)
	}
}
