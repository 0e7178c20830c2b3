package acpagent

import (
	"context"
	"fmt"
	"slices"
	"time"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Hook events the front end reports (Claude Code's names); the broker runs their hooks, in the sandbox.
const (
	hookUserPromptSubmit = "UserPromptSubmit"
	hookStop             = "Stop"
	hookSubagentStop     = "SubagentStop"
	hookSessionStart     = "SessionStart"
	hookSessionEnd       = "SessionEnd"
	hookPreCompact       = "PreCompact"
	hookNotification     = "Notification"
)

// How long a session's end waits for its SessionEnd hooks: at stdin's close (the editor is going away) about a
// second; at session/close, which the editor waits on, the hooks' own timeouts, bounded by sessionCloseWait. The
// broker session's close then ends what still runs.
const (
	sessionEndWait   = time.Second
	sessionCloseWait = time.Minute
)

// maxStopContinuations bounds how often Stop hooks may keep one turn going.
const maxStopContinuations = 3

// hook reports an event to the broker and returns what its hooks said; their notices go to the editor on uctx. A
// failure to report is logged and said nothing: the turn goes on (a team hook that must block fails closed in the
// broker, which answers blocked).
func (s *acpSession) hook(ctx, uctx context.Context, ev *execv1.HookEvent) *execv1.HookOutcome {
	if s.hooked != nil && !slices.Contains(s.hooked.GetEvents(), ev.GetEvent()) {
		return &execv1.HookOutcome{} // the broker said it has no hook for it: a report would do nothing
	}
	res, err := s.runner.Call(ctx, &execv1.Start{Op: &execv1.Start_HookEvent{HookEvent: ev}}, nil)
	if err != nil {
		if ctx.Err() == nil {
			s.srv.opts.Log.Warn("hooks not run", "event", ev.GetEvent(), "session", s.id, "err", err)
		}
		return &execv1.HookOutcome{}
	}
	for _, n := range res.GetNotices() {
		s.notice(uctx, n)
	}
	if res.GetHook() == nil {
		return &execv1.HookOutcome{}
	}
	return res.GetHook()
}

// beforePrompt runs SessionStart (at the session's first prompt) and UserPromptSubmit (with the prompt as the user
// wrote it, or as its command expanded it; the mentioned files are not part of it), before the model request. It
// returns what the hooks add to the model's prompt (their context) and, when a hook blocked the prompt or stopped
// the turn, the reason to tell the user.
func (s *acpSession) beforePrompt(ctx, uctx context.Context, prompt string) (string, string, bool) {
	s.mu.Lock()
	first := !s.hooksStarted
	s.hooksStarted = true
	source := "startup"
	if s.resumed {
		source = "resume"
	}
	s.mu.Unlock()
	var extra []string
	if first {
		o := s.hook(ctx, uctx, &execv1.HookEvent{Event: hookSessionStart, Subject: source})
		if o.GetContext() != "" {
			extra = append(extra, o.GetContext())
		}
	}
	o := s.hook(ctx, uctx, &execv1.HookEvent{Event: hookUserPromptSubmit, Prompt: prompt})
	switch {
	case o.GetBlocked():
		return "", fmt.Sprintf("Garuda: a hook blocked this prompt: %s", o.GetReason()), false
	case o.GetStop():
		return "", fmt.Sprintf("Garuda: a hook stopped the turn: %s", o.GetStopReason()), false
	}
	if o.GetContext() != "" {
		extra = append(extra, o.GetContext())
	}
	var added string
	for _, e := range extra {
		added += "\n\n" + e
	}
	return added, "", true
}

// notifyHooks reports a question to the Notification hooks, without waiting: the question is not held up.
func (s *acpSession) notifyHooks(title string) {
	go s.hook(s.srv.base, s.srv.base, &execv1.HookEvent{Event: hookNotification, Subject: "permission_prompt",
		Message: "Garuda needs your permission: " + title})
}

// endHooks runs the SessionEnd hooks, waiting at most wait.
func (s *acpSession) endHooks(reason string, wait time.Duration) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.hook(s.srv.base, s.srv.base, &execv1.HookEvent{Event: hookSessionEnd, Subject: reason})
	}()
	select {
	case <-done:
	case <-time.After(wait):
	}
}
