package acpagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/agent"
	"github.com/garuda-dev/garuda/frontend/brokerconn"
	"github.com/garuda-dev/garuda/frontend/visible"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Prompt runs one turn of a session.
func (s *server) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	sess, err := s.lookup(p.SessionId)
	if err != nil {
		return acp.PromptResponse{}, err
	}
	n := sess.beginPrompt()
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return acp.PromptResponse{}, requestError("the agent is shutting down")
	}
	s.prompts.Add(1) // under s.mu, so that no prompt starts once shutdown waits for them
	s.mu.Unlock()
	defer s.prompts.Done()
	return sess.prompt(n, p.Prompt)
}

// stopReasons maps the agent's stops to ACP's.
var stopReasons = map[agent.Stop]acp.StopReason{
	agent.StopDone:          acp.StopReasonEndTurn,
	agent.StopMaxTokens:     acp.StopReasonMaxTokens,
	agent.StopRefusal:       acp.StopReasonRefusal,
	agent.StopMaxSteps:      acp.StopReasonMaxTurnRequests,
	agent.StopTokenBudget:   acp.StopReasonMaxTurnRequests,
	agent.StopRepeatedCalls: acp.StopReasonMaxTurnRequests,
	agent.StopCancelled:     acp.StopReasonCancelled,
}

// prompt runs a turn, the n-th prompt read of the session. Its context is its own, not the request's: the SDK
// cancels a prompt's context when a second prompt of the session arrives, and that second prompt must fail, not stop
// the first.
func (s *acpSession) prompt(n int, blocks []acp.ContentBlock) (acp.PromptResponse, error) {
	text, mentions := promptText(blocks, s.root)
	if strings.TrimSpace(text) == "" {
		return acp.PromptResponse{}, invalidParams("the prompt is empty")
	}
	tctx, cancel := context.WithCancelCause(s.srv.base)
	t := &acpTurn{s: s, n: n, ctx: tctx, cancel: cancel, calls: map[string]*callState{}}
	s.modeMu.Lock() // a mode change in progress ends before the turn takes its mode
	s.mu.Lock()
	if s.turn != nil {
		s.mu.Unlock()
		s.modeMu.Unlock()
		cancel(nil)
		return acp.PromptResponse{}, requestError("a prompt is already running in this session; wait for it to end or cancel it")
	}
	if n <= s.cancelledUpTo {
		cancel(errCancelled) // the editor's cancel came before this turn existed
	}
	s.turn = t
	s.turnMode = s.mode
	notices := s.notices
	s.notices = nil
	s.mu.Unlock()
	s.modeMu.Unlock()
	stopWatch := context.AfterFunc(tctx, t.markStop)
	defer func() {
		stopWatch()
		cancel(nil)
		s.modeMu.Lock() // the next turn starts in the mode set during this one
		s.mu.Lock()
		s.turn = nil
		s.mu.Unlock()
		s.applyPendingMode(s.srv.base)
		s.modeMu.Unlock()
	}()
	// Updates use a context that a cancel does not end: the final lines of a cancelled turn must go out.
	uctx := s.srv.base
	release := s.holdRecords() // until the model's first output (emit), 50 ms at most
	t.releaseRecords = release
	defer release()
	s.beginTranscript(uctx, blocks, text)
	defer s.tr.flush()

	for _, n := range notices {
		s.notice(uctx, n)
	}

	mcpStarted := false
	if name, ok := commandName(text); ok {
		if strings.Contains(name, ":") && !mcpStarted {
			s.startMCP(tctx, uctx) // "/server:prompt": the servers run before it is resolved
			mcpStarted = true
		}
		res, err := s.runner.Call(tctx, &execv1.Start{Op: &execv1.Start_ResolveCommand{ResolveCommand: &execv1.ResolveCommand{Text: text}}}, nil)
		switch {
		case err != nil && tctx.Err() != nil:
			return t.end(uctx, agent.StopCancelled, nil)
		case err != nil:
			s.record("prompt", text)
			s.notice(uctx, fmt.Sprintf("/%s could not be resolved: %v", name, err))
			return t.end(uctx, agent.StopDone, nil)
		}
		if res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			// A command the user or the policy refused (its consent denied) does not run.
			s.record("prompt", text)
			reason := res.GetContent()
			if reason == "" {
				reason = "it was not allowed"
			}
			s.notice(uctx, fmt.Sprintf("/%s did not run: %s", name, reason))
			s.record("stop", agent.StopDone)
			return t.end(uctx, agent.StopDone, nil)
		}
		r := res.GetResolved()
		switch r.GetKind() {
		case execv1.Resolved_KIND_MESSAGE:
			// Built-in chat commands and /help never reach the model.
			s.record("prompt", text)
			s.notice(uctx, r.GetMessage())
			s.record("stop", agent.StopDone)
			return t.end(uctx, agent.StopDone, nil)
		case execv1.Resolved_KIND_PROMPT:
			text = r.GetPrompt()
		case execv1.Resolved_KIND_NOT_COMMAND:
			// "/usr is almost full" is a question for the model; a close match is named once the answer started.
			t.suggestion = r.GetMessage()
		}
	}

	full := text
	for _, m := range mentions {
		res, err := s.runner.Call(tctx, &execv1.Start{Op: &execv1.Start_AttachMention{AttachMention: &execv1.AttachMention{Path: m.rel}}}, nil)
		if tctx.Err() != nil {
			return t.end(uctx, agent.StopCancelled, nil)
		}
		switch {
		case err != nil:
			s.notice(uctx, fmt.Sprintf("@%s was not attached: %v", m.rel, err))
		case res.GetStatus() != execv1.Status_STATUS_COMPLETED:
			reason := res.GetContent()
			if reason == "" {
				reason = strings.ToLower(strings.TrimPrefix(res.GetStatus().String(), "STATUS_"))
			}
			if !strings.Contains(reason, "not attached") {
				reason = fmt.Sprintf("@%s was not attached: %s", m.rel, reason)
			}
			s.notice(uctx, reason)
		default:
			full += fmt.Sprintf("\n\nContents of @%s:\n%s", m.rel, res.GetContent())
			for _, n := range res.GetNotices() {
				s.notice(uctx, n)
			}
		}
	}

	if rs := resourceMentions(text); len(rs) > 0 {
		if !mcpStarted {
			s.startMCP(tctx, uctx) // the servers run before their resources are read
			mcpStarted = true
		}
		full += s.attachResources(tctx, uctx, rs)
	}
	added, why, ok := s.beforePrompt(tctx, uctx, text)
	if tctx.Err() != nil {
		return t.end(uctx, agent.StopCancelled, nil)
	}
	if !ok {
		s.record("prompt", full)
		s.notice(uctx, why)
		s.record("stop", agent.StopDone)
		return t.end(uctx, agent.StopDone, nil)
	}
	s.record("prompt", full)
	s.applyConfig()
	// What the first model request needs from the broker, asked at once: the custom agents (the system prompt), the
	// MCP servers and their tools, the web search consent. Each is its own broker call, and each may ask its own
	// question.
	var ready sync.WaitGroup
	ready.Go(func() { s.loadAgents(tctx) })
	if !mcpStarted {
		ready.Go(func() { s.startMCP(tctx, uctx) })
	}
	ready.Go(func() { s.offerWebSearch(tctx) })
	ready.Wait()
	if tctx.Err() != nil {
		return t.end(uctx, agent.StopCancelled, nil)
	}
	stop, err := s.conv.RunTurn(tctx, full+added, t.emit)
	// Stop hooks may keep the turn going (a block: its reason is the model's next prompt), a few times at most.
	for i := 0; err == nil && stop == agent.StopDone && tctx.Err() == nil && i <= maxStopContinuations; i++ {
		o := s.hook(tctx, uctx, &execv1.HookEvent{Event: hookStop, StopHookActive: i > 0})
		if !o.GetBlocked() || i == maxStopContinuations || o.GetStop() {
			if o.GetStop() {
				s.notice(uctx, "Garuda: a hook stopped the turn: "+o.GetStopReason())
			}
			break
		}
		stop, err = s.conv.RunTurn(tctx, "A Stop hook did not let the turn end: "+o.GetReason(), t.emit)
	}
	turnEnded(s.conv.History)
	return t.end(uctx, stop, err)
}

// end closes the turn: every tool call still open ends failed, a cancel names what it stopped, and the stop or the
// error becomes the response.
func (t *acpTurn) end(uctx context.Context, stop agent.Stop, err error) (acp.PromptResponse, error) {
	s := t.s
	t.mu.Lock()
	if t.ctx.Err() != nil {
		t.markStopLocked()
	}
	if !t.closed {
		t.flushProseLocked()
	}
	if err == nil && !t.stopped && stop != agent.StopCancelled {
		t.suggestLocked() // the model answered without a step end (a turn stopped early)
	}
	t.closed = true
	stopped := t.stopped || stop == agent.StopCancelled
	for _, id := range t.order {
		c := t.calls[id]
		if c.ended {
			continue
		}
		c.ended = true
		t.updateCall(uctx, id, acp.ToolCallStatusFailed, "Cancelled.")
		if !stopped {
			continue
		}
		if !slices.Contains(t.atStop, id) {
			t.atStop = append(t.atStop, id)
		}
	}
	var lines []string
	if stopped {
		for _, id := range t.atStop {
			lines = append(lines, fmt.Sprintf("Garuda: %s cancelled.", t.calls[id].title))
		}
		if len(lines) == 0 {
			lines = append(lines, "Garuda: the turn was cancelled.")
		}
	}
	t.mu.Unlock()

	cause := context.Cause(t.ctx)
	if errors.Is(cause, errBrokerExited) {
		s.record("stop", "error")
		return acp.PromptResponse{}, &acp.RequestError{Code: -32603, Message: ErrBrokerGone.Error(),
			Data: map[string]any{"reason": "broker_exited", "sessionId": s.id}}
	}
	if err != nil && !stopped {
		s.record("stop", "error")
		return acp.PromptResponse{}, s.modelError(uctx, err)
	}
	if stopped {
		for _, l := range lines {
			s.message(uctx, "\n"+l+"\n")
		}
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	}
	reason, ok := stopReasons[stop]
	if !ok {
		reason = acp.StopReasonEndTurn
	}
	return acp.PromptResponse{StopReason: reason}, nil
}

// acpTurn is one prompt of an ACP session: it maps the turn's agent events to session/updates and knows its tool
// calls.
type acpTurn struct {
	s      *acpSession
	n      int // the prompt's number in the session (see acpSession.promptsRead)
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	calls   map[string]*callState
	diffs   map[string]acp.ToolCallContent // the diff a call's question showed
	order   []string
	stopped bool     // the editor's stop (or a shutdown) came
	atStop  []string // the calls open when it came
	closed  bool     // the response is decided: later events are dropped

	suggestion string // a notice for a "/name" that is no command, sent after the model's first step

	releaseRecords func() // lets the session's records go to the broker (holdRecords): at the first event

	// The model's prose, made visible as prose: an emoji cluster split across deltas is held for the next one.
	text, thought visible.ProseStream
}

// flushProseLocked sends the prose held back; t.mu is held.
func (t *acpTurn) flushProseLocked() {
	s := t.s
	if rest := t.text.Flush(); rest != "" {
		s.message(s.srv.base, rest)
	}
	if rest := t.thought.Flush(); rest != "" {
		s.update(s.srv.base, acp.UpdateAgentThoughtText(rest))
	}
}

type callState struct {
	title   string
	ended   bool
	running bool // its in_progress update went out
}

// markStop notes the calls running when the turn was stopped: they end failed, whatever their result.
func (t *acpTurn) markStop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.markStopLocked()
}

// markStopLocked is markStop with t.mu held. It runs once: from the context's AfterFunc, or earlier from the first
// event seen after the stop (the AfterFunc's goroutine may not have run yet).
func (t *acpTurn) markStopLocked() {
	if t.closed || t.stopped {
		return
	}
	t.stopped = true
	for _, id := range t.order {
		if !t.calls[id].ended {
			t.atStop = append(t.atStop, id)
		}
	}
}

// notice sends a line from Garuda during the turn; one that comes after the turn answered is dropped.
func (t *acpTurn) notice(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.s.notice(t.s.srv.base, line)
	}
}

// updateCall sends a tool_call_update with a status and a text content; t.mu is held.
func (t *acpTurn) updateCall(ctx context.Context, id string, st acp.ToolCallStatus, text string, locs ...acp.ToolCallLocation) {
	u := &acp.SessionToolCallUpdate{ToolCallId: acp.ToolCallId(id), Status: acp.Ptr(st), Locations: locs}
	if d, ok := t.diffs[id]; ok && st == acp.ToolCallStatusCompleted {
		// The change the user allowed stays on view (and in the replay) after the call ends.
		u.Content = append(u.Content, d)
	}
	if text != "" {
		u.Content = append(u.Content, acp.ToolContent(acp.TextBlock(visible.Visible(text))))
	}
	t.s.update(ctx, acp.SessionUpdate{ToolCallUpdate: u})
}

// emit turns one agent event into session/updates, as the spec's table says.
func (t *acpTurn) emit(e agent.Event) {
	t.releaseRecords()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return // a late event of a turn that has answered
	}
	if t.ctx.Err() != nil {
		t.markStopLocked()
	}
	s, uctx := t.s, t.s.srv.base
	if e.Type != agent.EventTextDelta && e.Type != agent.EventThinkingDelta {
		t.flushProseLocked() // what follows the prose comes after all of it
	}
	switch e.Type {
	case agent.EventTextDelta:
		if text := t.text.Write(e.Text); text != "" {
			s.message(uctx, text)
		}
	case agent.EventThinkingDelta:
		if text := t.thought.Write(e.Text); text != "" {
			s.update(uctx, acp.UpdateAgentThoughtText(text))
		}
	case agent.EventToolCall:
		c := e.Call
		title, kind := toolTitle(c.Name, c.Input)
		if _, dup := t.calls[c.ID]; !dup {
			t.order = append(t.order, c.ID)
		}
		t.calls[c.ID] = &callState{title: title}
		s.update(uctx, acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{
			ToolCallId: acp.ToolCallId(c.ID),
			Title:      title,
			Kind:       kind,
			Status:     acp.ToolCallStatusPending,
			Locations:  toolLocations(c.Name, c.Input, s.root),
			RawInput:   visibleJSON(c.Input),
		}})
	case agent.EventToolStarted:
		if c := t.calls[e.Call.ID]; c != nil && !c.ended && !c.running {
			c.running = true
			t.updateCall(uctx, e.Call.ID, acp.ToolCallStatusInProgress, "")
		}
	case agent.EventToolProgress:
		if c := t.calls[e.Call.ID]; c != nil && !c.ended && e.Text != "" {
			t.updateCall(uctx, e.Call.ID, acp.ToolCallStatusInProgress, e.Text)
		}
	case agent.EventToolResult:
		c := t.calls[e.Call.ID]
		if c == nil || c.ended {
			return
		}
		c.ended = true
		r := e.Result
		st := acp.ToolCallStatusFailed
		// A call that ends after the stop is failed even when its command returned a result.
		if r.Status == agent.StatusCompleted && !(t.stopped && slices.Contains(t.atStop, e.Call.ID)) {
			st = acp.ToolCallStatusCompleted
		}
		text := r.Content
		if text == "" && st == acp.ToolCallStatusFailed {
			text = "Cancelled."
			if r.Status == agent.StatusDenied {
				text = "Denied."
			}
		}
		t.updateCall(uctx, e.Call.ID, st, text, resultLocations(r.Locations, s.root)...)
	case agent.EventNotice, agent.EventCompaction, agent.EventModelRetry:
		s.notice(uctx, e.Text)
	case agent.EventStepEnd:
		t.suggestLocked()
	}
}

// suggestLocked sends the pending close-match notice, once; t.mu is held.
func (t *acpTurn) suggestLocked() {
	if t.suggestion != "" {
		t.s.notice(t.s.srv.base, t.suggestion)
		t.suggestion = ""
	}
}

// visibleJSON is a tool input for the editor, with every string made visible.
func visibleJSON(raw json.RawMessage) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return visible.Visible(string(raw))
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return visible.Visible(x)
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		}
		return v
	}
	return walk(v)
}

var _ brokerconn.Approver = (*approver)(nil)
