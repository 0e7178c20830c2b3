package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/permit"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// runTool runs a decided tool call between its hooks: PreToolUse first (its deny ends the call failed with the
// hook's reason; its allow may answer a question in the user's place where policy.HookMayAllow says so; its ask
// asks even where the policy allowed), then the operation, then PostToolUse with the result.
func (s *Service) runTool(ctx context.Context, g *grant, r *request) (*execv1.Result, error) {
	names := policy.HookToolNames(g.op.name)
	if names == nil {
		return r.run(ctx, g)
	}
	pre := hookEvent{name: policy.HookPreToolUse, names: names, ask: true}
	post := hookEvent{name: policy.HookPostToolUse, names: names, ask: true}
	if !hasHooks(g.c.sess, pre) && !hasHooks(g.c.sess, post) {
		return r.run(ctx, g)
	}
	toolIn := toolInput(g.c.start, r.policy)
	pre.input = map[string]any{"tool_name": names[0], "tool_input": toolIn, "garuda_tool_name": g.op.name}
	var notices, extra []string
	if hasHooks(g.c.sess, pre) {
		out, err := s.runHooks(ctx, g, pre)
		if err != nil {
			return nil, err
		}
		notices, extra = out.notices, out.context
		if out.stop && !out.blocked() {
			// "continue": false before a tool call: the call does not run, and the model is told why.
			out.decision, out.reason = "deny", or(out.stopReason, "a hook stopped here")
		}
		switch out.decision {
		case "deny":
			return &execv1.Result{Status: execv1.Status_STATUS_FAILED, Content: "Blocked by a hook: " + out.reason, Notices: notices}, nil
		case "allow":
			if policy.HookMayAllow(g.req, g.d, s.state(g.c.sess)) {
				if err := s.record(audit.Record{Session: g.c.sess.id, Event: audit.EventAnswer, Op: g.req.Tool, Input: summary(g.req),
					Rule: g.d.Rule, Verdict: policy.Allow.String(), AnsweredBy: "hook", Reason: out.reason}, true); err != nil {
					return nil, err
				}
				g.p = permit.Granted(g.p)
			}
		case "ask":
			if g.d.Verdict == policy.Allow {
				reason := "a hook asks first"
				if out.reason != "" {
					reason += ": " + out.reason
				}
				g.d = policy.Decision{Verdict: policy.Ask, Rule: "hook", Reason: reason, Choices: []policy.Choice{policy.ChoiceOnce, policy.ChoiceDeny}}
				g.p = permit.Asking(g.p, g.req, s.state(g.c.sess))
			}
		}
	}
	res, err := r.run(ctx, g)
	if err != nil || res == nil {
		return res, err
	}
	completed := res.Status == execv1.Status_STATUS_COMPLETED || res.Status == execv1.Status_STATUS_UNSPECIFIED
	if hasHooks(g.c.sess, post) && completed && ctx.Err() == nil {
		post.input = map[string]any{"tool_name": names[0], "tool_input": toolIn, "garuda_tool_name": g.op.name,
			"tool_response": map[string]any{"content": res.GetContent(), "exit_code": res.GetExitCode(), "success": true}}
		out, err := s.runHooks(ctx, g, post)
		if err != nil {
			return nil, err
		}
		notices, extra = append(notices, out.notices...), append(extra, out.context...)
		if out.blocked() {
			// The tool has run: a PostToolUse block tells the model why its result is not right.
			extra = append(extra, "A PostToolUse hook objected: "+out.reason)
		}
	}
	res.Notices = append(res.Notices, notices...)
	for _, c := range extra {
		res.Content = joinLines(res.Content, "\n[hook] "+c)
	}
	return res, nil
}

// toolInput is a tool call's input as a hook reads it: Claude Code's field names, with absolute paths.
func toolInput(start *execv1.Start, req policy.Request) map[string]any {
	switch op := start.GetOp().(type) {
	case *execv1.Start_Bash:
		in := map[string]any{"command": op.Bash.GetCommand(), "description": op.Bash.GetDescription()}
		if ms := op.Bash.GetTimeoutMs(); ms > 0 {
			in["timeout"] = ms
		}
		return in
	case *execv1.Start_ReadFile:
		in := map[string]any{"file_path": req.Path}
		if o := op.ReadFile.GetOffset(); o > 0 {
			in["offset"] = o
		}
		if l := op.ReadFile.GetLimit(); l > 0 {
			in["limit"] = l
		}
		return in
	case *execv1.Start_WriteFile:
		return map[string]any{"file_path": req.Path, "content": op.WriteFile.GetContent()}
	case *execv1.Start_EditFile:
		return map[string]any{"file_path": req.Path, "old_string": op.EditFile.GetOldString(), "new_string": op.EditFile.GetNewString(),
			"replace_all": op.EditFile.GetReplaceAll()}
	case *execv1.Start_Glob:
		return map[string]any{"pattern": op.Glob.GetPattern(), "path": req.Path}
	case *execv1.Start_Grep:
		in := map[string]any{"pattern": op.Grep.GetPattern(), "path": req.Path}
		if gl := op.Grep.GetGlob(); gl != "" {
			in["glob"] = gl
		}
		if m := op.Grep.GetOutputMode(); m != "" {
			in["output_mode"] = m
		}
		if op.Grep.GetCaseInsensitive() {
			in["-i"] = true
		}
		return in
	}
	return map[string]any{}
}

// frontEndEvents are the events the front end reports with hook_event; the tool events run inside their calls.
var frontEndEvents = []string{policy.HookUserPromptSubmit, policy.HookStop, policy.HookSubagentStop, policy.HookSessionStart,
	policy.HookSessionEnd, policy.HookPreCompact, policy.HookNotification}

// askingEvents are those at which the user is there to answer the consent question for the project's hooks.
var askingEvents = []string{policy.HookUserPromptSubmit, policy.HookSessionStart}

func checkHookEvent(s *Service, c *call) (*request, error) {
	op := c.start.GetHookEvent()
	name := op.GetEvent()
	if !slices.Contains(frontEndEvents, name) {
		return nil, fmt.Errorf("hook event %q is not one the front end reports (want %s): %w", name,
			strings.Join(frontEndEvents, ", "), ErrBadRequest)
	}
	ev := hookEvent{name: name, ask: slices.Contains(askingEvents, name), input: map[string]any{}}
	switch name {
	case policy.HookUserPromptSubmit:
		ev.input["prompt"] = op.GetPrompt()
	case policy.HookStop, policy.HookSubagentStop:
		ev.input["stop_hook_active"] = op.GetStopHookActive()
	case policy.HookSessionStart:
		ev.names, ev.input["source"] = []string{op.GetSubject()}, op.GetSubject()
	case policy.HookSessionEnd:
		ev.names, ev.input["reason"] = []string{op.GetSubject()}, op.GetSubject()
	case policy.HookPreCompact:
		ev.names, ev.input["trigger"], ev.input["custom_instructions"] = []string{op.GetSubject()}, op.GetSubject(), ""
	case policy.HookNotification:
		ev.names, ev.input["message"] = []string{op.GetSubject()}, op.GetMessage()
	}
	r := &request{input: name}
	c.sess.mu.Lock()
	files := c.sess.files
	c.sess.mu.Unlock()
	if teamUnreadable(files, ev) {
		// Nothing runs and nothing can be recorded (the audit log's folder is team policy's to name): the prompt is
		// blocked, as every action is.
		r.quiet = true
		r.run = func(ctx context.Context, g *grant) (*execv1.Result, error) {
			ho := &execv1.HookOutcome{Blocked: true,
				Reason: fmt.Sprintf("team policy could not be read, so its hooks cannot check this: %v", files.teamErr)}
			return &execv1.Result{Status: execv1.Status_STATUS_COMPLETED, Content: ho.Reason, Hook: ho}, nil
		}
		return r, nil
	}
	if !hasHooks(c.sess, ev) {
		// No hook for this event: nothing runs and nothing is recorded, so that an event costs nothing.
		r.quiet = true
		r.run = func(context.Context, *grant) (*execv1.Result, error) {
			return &execv1.Result{Status: execv1.Status_STATUS_COMPLETED, Hook: &execv1.HookOutcome{}}, nil
		}
		return r, nil
	}
	r.run = func(ctx context.Context, g *grant) (*execv1.Result, error) {
		out, err := s.runHooks(ctx, g, ev)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return cancelled(), nil
			}
			return nil, err
		}
		ho := &execv1.HookOutcome{Blocked: out.blocked(), Reason: out.reason, Context: strings.Join(out.context, "\n\n"),
			Stop: out.stop, StopReason: out.stopReason, Ran: int32(out.ran)}
		return &execv1.Result{Status: execv1.Status_STATUS_COMPLETED, Content: ho.Reason, Notices: out.notices, Hook: ho}, nil
	}
	return r, nil
}
