package acpagent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/internal/testproc"
	"github.com/garuda-dev/garuda/test/editor"
)

func TestPromptStreamsTextAndEndsTurn(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	e.fake.Push(model.Step{
		Deltas: []model.FakeDelta{
			{Kind: model.DeltaThinking, Text: "hmm"}, {Kind: model.DeltaText, Text: "Hello "}, {Kind: model.DeltaText, Text: "wor\u202eld"},
		},
		Response: &model.Response{
			Message:    model.Message{Content: []model.Block{{Type: model.BlockText, Text: "Hello wor\u202eld"}}},
			StopReason: model.StopEndTurn,
		},
	})
	e.promptEndsTurn(sid, "hi")
	ups, _ := e.ed.Snapshot()
	if got := editor.Messages(ups); got != `Hello wor\u202eld` {
		t.Errorf("message %q: the model's text must arrive, with hidden characters visible", got)
	}
	if !slices.ContainsFunc(ups, func(u acp.SessionNotification) bool {
		return u.Update.AgentThoughtChunk != nil && u.Update.AgentThoughtChunk.Content.Text.Text == "hmm"
	}) {
		t.Error("no agent_thought_chunk")
	}
	if reqs := e.fake.Requests(); len(reqs) != 1 || reqs[0].LastUserText() != "hi" {
		t.Errorf("the model heard %+v", reqs)
	}
	if len(e.ed.FSUsed) != 0 {
		t.Errorf("Garuda used the editor's %v", e.ed.FSUsed)
	}
}

func TestCancelDuringQuestion(t *testing.T) {
	e := newEnv(t)
	e.ed.Answer = waitingAnswer
	sid := e.newSession()
	e.fake.Push(tool("toolu_w", "write_file", `{"path":"a.txt","content":"x"}`), model.TextStep("never"))
	type result struct {
		res acp.PromptResponse
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := e.prompt(sid, acp.TextBlock("write"))
		done <- result{r, err}
	}()
	e.ed.WaitFor(t, "the question", func(ed *editor.Editor) bool { return len(ed.Perms) == 1 })
	if err := e.conn.Cancel(e.ctx(), acp.CancelNotification{SessionId: acp.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.res.StopReason != acp.StopReasonCancelled {
		t.Fatalf("prompt: %+v %v, want cancelled", r.res, r.err)
	}
	if _, err := os.Stat(filepath.Join(e.root, "a.txt")); !os.IsNotExist(err) {
		t.Error("a.txt was written after a cancelled question")
	}
	wantCancelledCall(t, e, "toolu_w", "Write a.txt", r.res)
	// The next prompt works.
	e.fake = resetFake(e, model.TextStep("again"))
	e.promptEndsTurn(sid, "hello")
}

func TestCancelDuringCommand(t *testing.T) {
	e := newEnv(t)
	cmd := "echo started; sleep 61.25"
	r := cancelWhileRunning(t, e, "toolu_b", cmd, "61.25")
	wantCancelledCall(t, e, "toolu_b", "$ "+cmd, r)
	testproc.WaitNoneLive(t, waitLimit, "sleep 61.25")
}

// A command that ignores SIGTERM lives through the broker's 2 s grace: the prompt answers cancelled only once it
// is gone (the call waits for the broker's result, up to the 3 s settle), so the editor never sees a stopped turn
// with its command still running.
func TestCancelAnswersOnceTheCommandIsGone(t *testing.T) {
	e := newEnv(t)
	cmd := "trap '' TERM; echo started; sleep 61.26 & wait; wait"
	r := cancelWhileRunning(t, e, "toolu_t", cmd, "61.26")
	if sleeperAlive("61.26") {
		t.Error("the prompt answered while the command still ran")
	}
	wantCancelledCall(t, e, "toolu_t", "$ "+cmd, r)
}

// cancelWhileRunning prompts a bash call id of cmd, which prints "started" and then sleeps for sleep seconds (the
// mark sleeperAlive finds), waits for the output, cancels the prompt and returns the prompt's answer.
func cancelWhileRunning(t *testing.T, e *env, id, cmd, sleep string) acp.PromptResponse {
	t.Helper()
	sid := e.newSession()
	e.fake.Push(tool(id, "bash", fmt.Sprintf(`{"command":%q}`, cmd)), model.TextStep("never"))
	done := e.promptInBackground(sid, "run")
	e.ed.WaitFor(t, "the command's output", func(ed *editor.Editor) bool {
		_, _, texts := editor.ToolCall(ed.Updates, id)
		return slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, "started") })
	})
	// Negative control: the command's sleep runs before the cancel ("started" comes at once now, and the shell's
	// fork of sleep may follow it by a moment).
	testproc.WaitLive(t, waitLimit, "sleep "+sleep)
	e.conn.Cancel(e.ctx(), acp.CancelNotification{SessionId: acp.SessionId(sid)})
	return <-done
}

func TestCancelWhileTheModelWrites(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	hold := make(chan struct{})
	e.fake.Push(model.Step{Deltas: []model.FakeDelta{{Kind: model.DeltaText, Text: "thinking about it"}}, Wait: hold,
		Response: &model.Response{StopReason: model.StopEndTurn}})
	done := make(chan acp.PromptResponse, 1)
	go func() {
		r, _ := e.prompt(sid, acp.TextBlock("go"))
		done <- r
	}()
	e.ed.WaitFor(t, "the first words", func(ed *editor.Editor) bool { return strings.Contains(editor.Messages(ed.Updates), "thinking") })
	e.conn.Cancel(e.ctx(), acp.CancelNotification{SessionId: acp.SessionId(sid)})
	r := <-done
	if r.StopReason != acp.StopReasonCancelled {
		t.Errorf("stop %q", r.StopReason)
	}
	ups, _ := e.ed.Snapshot()
	if !strings.Contains(editor.Messages(ups), "Garuda: the turn was cancelled.") {
		t.Errorf("messages %q", editor.Messages(ups))
	}
}

func TestSecondPromptWhileOneRunsFails(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	hold := make(chan struct{})
	e.fake.Push(model.Step{Deltas: []model.FakeDelta{{Kind: model.DeltaText, Text: "working"}}, Wait: hold,
		Response: &model.Response{
			Message:    model.Message{Content: []model.Block{{Type: model.BlockText, Text: "working"}}},
			StopReason: model.StopEndTurn,
		}})
	done := e.promptInBackground(sid, "first")
	e.ed.WaitFor(t, "the first prompt to run", func(ed *editor.Editor) bool {
		return strings.Contains(editor.Messages(ed.Updates), "working")
	})
	_, err := e.prompt(sid, acp.TextBlock("second"))
	if err == nil {
		t.Fatal("a second prompt while the first runs succeeded")
	}
	if re := editor.RequestError(t, err); !strings.Contains(re.Message, "already running") {
		t.Errorf("error %v", re)
	}
	close(hold)
	// The first prompt is not disturbed by the second (the SDK cancels a session's earlier prompt context).
	if r := <-done; r.StopReason != acp.StopReasonEndTurn {
		t.Errorf("first prompt ended %q, want end_turn", r.StopReason)
	}
}

// The model's prose reaches the editor readable: emoji clusters (even split across deltas) and the spaces of other
// scripts stay; a bidi control stays escaped. Control: a tool call's title keeps the exact escapes.
func TestModelProseIsReadable(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	step := model.TextStep("\u26a0\ufe0f \U0001f468\u200d\U0001f469\u200d\U0001f467 \u65e5\u3000\u8a9e 10\u00a0km \u202e end")
	step.Deltas = []model.FakeDelta{{Kind: model.DeltaText, Text: "\u26a0\ufe0f \U0001f468\u200d"},
		{Kind: model.DeltaText, Text: "\U0001f469\u200d"}, {Kind: model.DeltaText, Text: "\U0001f467 \u65e5\u3000\u8a9e 10\u00a0km \u202e end"}}
	e.fake.Push(step)
	e.promptOK(sid, "hi")
	ups, _ := e.ed.Snapshot()
	want := "\u26a0\ufe0f \U0001f468\u200d\U0001f469\u200d\U0001f467 \u65e5\u3000\u8a9e 10\u00a0km \\u202e end"
	if got := editor.Messages(ups); !strings.HasPrefix(got, want) {
		t.Errorf("the editor got %q, want it to start with %q", got, want)
	}
	e.fake.Push(tool("toolu_p", "read_file", `{"path":"a`+"\u00a0"+`b.txt"}`), model.TextStep("done"))
	e.promptOK(sid, "read")
	ups, _ = e.ed.Snapshot()
	if tc, _, _ := editor.ToolCall(ups, "toolu_p"); tc == nil || !strings.Contains(tc.Title, `a\u00a0b.txt`) {
		t.Errorf("the tool call's title lost its escape: %+v", tc)
	}
}

func TestStopReasons(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	for _, c := range []struct {
		model model.StopReason
		want  acp.StopReason
	}{
		{model.StopEndTurn, acp.StopReasonEndTurn},
		{model.StopMaxTokens, acp.StopReasonMaxTokens},
		{model.StopRefusal, acp.StopReasonRefusal},
	} {
		e.fake.Push(model.Step{Response: &model.Response{
			Message:    model.Message{Content: []model.Block{{Type: model.BlockText, Text: "x"}}},
			StopReason: c.model,
		}})
		if got := e.promptOK(sid, "go"); got != c.want {
			t.Errorf("model stop %q: ACP %q, want %q", c.model, got, c.want)
		}
	}
	// The same call again and again stops the turn (repeated_calls -> max_turn_requests).
	for i := 0; i < 6; i++ {
		e.fake.Push(tool(fmt.Sprintf("toolu_%d", i), "glob", `{"pattern":"*.none"}`))
	}
	if got := e.promptOK(sid, "loop"); got != acp.StopReasonMaxTurnRequests {
		t.Errorf("repeated calls: %q, want max_turn_requests", got)
	}
}

// Found by the conformance pass (what an editor relies on where the first tests did not look): it failed
// before its fix.
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
	e.promptEndsTurn(sid, "hello")
}

// Found by the conformance pass (what an editor relies on where the first tests did not look): it failed
// before its fix.
// The spec: "Methods and fields that the schema marks UNSTABLE are not used." $/cancel_request is one; the SDK
// sends it when the context of an outgoing request ends.
func TestCancelDuringAQuestionSendsNoUnstableMethod(t *testing.T) {
	e := newEnv(t)
	e.ed.Answer = waitingAnswer
	sid := e.newSession()
	e.fake.Push(tool("toolu_w", "write_file", `{"path":"a.txt","content":"x"}`))
	done := e.promptInBackground(sid, "write")
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

// Found by the conformance pass (what an editor relies on where the first tests did not look): it failed
// before its fix.
// A broker notice of a result ("Garuda: Undone after the command, …": an editor file the command created) is a line
// for the user: an agent_message_chunk, not only a part of the tool's output, which editors fold away.
func TestResultNoticesAreGarudaLines(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	e.fake.Push(tool("toolu_b", "bash", `{"command":"mkdir -p sub/.zed && echo {} > sub/.zed/tasks.json"}`), model.TextStep("done"))
	e.promptEndsTurn(sid, "run")
	ups, _ := e.ed.Snapshot()
	_, st, texts := editor.ToolCall(ups, "toolu_b")
	if st != acp.ToolCallStatusCompleted || !strings.Contains(strings.Join(texts, ""), "sub/.zed") {
		t.Fatalf("negative control: the command's output lacks the warning: %q %q", st, texts)
	}
	if m := editor.Messages(ups); !strings.Contains(m, "Garuda: Undone after the command") {
		t.Errorf("the warning is not a Garuda line: messages %q", m)
	}
}
