package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/policy"
)

// hookAnswer is what one hook said, read from its exit code and output in Claude Code's two forms:
//
//   - exit 0: done; stdout is context for the model (UserPromptSubmit, SessionStart) or the JSON form below;
//   - exit 2: block (deny a tool call, stop a prompt, keep a turn going); stderr is the reason;
//   - any other exit, a timeout, a kill: a non-blocking error, shown as a notice (a team fail_closed hook blocks);
//   - the JSON form on stdout with exit 0: {"decision": "block"|"approve", "reason": …, "continue": false,
//     "stopReason": …, "systemMessage": …, "hookSpecificOutput": {"permissionDecision": "allow"|"deny"|"ask",
//     "permissionDecisionReason": …, "additionalContext": …}} (permissionDecision and additionalContext are also read
//     at the top level). Output that is not a JSON object is plain output.
type hookAnswer struct {
	exit       int
	timedOut   bool
	failed     bool   // an error that does not block (unless the hook fails closed)
	decision   string // "allow", "ask", "deny" (a block), or ""
	reason     string
	context    []string
	notice     string
	notices    []string
	stop       bool
	stopReason string
}

// hookJSON is the JSON form of a hook's answer.
type hookJSON struct {
	Continue           *bool           `json:"continue"`
	StopReason         string          `json:"stopReason"`
	SystemMessage      string          `json:"systemMessage"`
	Decision           string          `json:"decision"`
	Reason             string          `json:"reason"`
	PermissionDecision string          `json:"permissionDecision"`
	AdditionalContext  string          `json:"additionalContext"`
	Specific           *hookJSONDetail `json:"hookSpecificOutput"`
}

type hookJSONDetail struct {
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason"`
	AdditionalContext        string `json:"additionalContext"`
}

// maxHookReason bounds a reason or context taken from a hook's output.
const maxHookReason = 8 << 10

func readAnswer(event string, h policy.HookCommand, res *sandbox.Result, stdout []byte) hookAnswer {
	a := hookAnswer{exit: res.ExitCode, timedOut: res.TimedOut}
	stderr := strings.TrimSpace(strings.ToValidUTF8(string(res.Output), "\uFFFD"))
	name := short(h.Command)
	switch {
	case res.TimedOut:
		a.failed = true
		a.notice = fmt.Sprintf("Garuda: the hook %q timed out after %s and was killed, with everything it started.", name, h.Timeout)
	case res.Cancelled:
		a.failed = true
		a.notice = fmt.Sprintf("Garuda: the hook %q was cancelled.", name)
	case res.ExitCode == 2:
		a.decision = "deny"
		a.reason = bound(stderr)
		if a.reason == "" {
			a.reason = fmt.Sprintf("the hook %q blocked it", name)
		}
	case res.ExitCode != 0:
		a.failed = true
		what := fmt.Sprintf("exit code %d", res.ExitCode)
		if len(res.LimitsHit) > 0 {
			what += ": " + strings.Join(res.LimitsHit, "; ")
		}
		a.notice = fmt.Sprintf("Garuda: the hook %q failed (%s)%s", name, what, firstLine(stderr))
	default:
		a.readStdout(event, stdout)
	}
	return a
}

// readStdout reads the stdout of a hook that exited 0: the JSON form, or plain output.
func (a *hookAnswer) readStdout(event string, stdout []byte) {
	out := bytes.TrimSpace(stdout)
	var j hookJSON
	if len(out) > 0 && out[0] == '{' && json.Unmarshal(out, &j) == nil {
		if j.Continue != nil && !*j.Continue {
			a.stop, a.stopReason = true, bound(j.StopReason)
		}
		if j.SystemMessage != "" {
			a.notice = "Garuda: " + bound(j.SystemMessage)
		}
		decision, reason, ctx := j.PermissionDecision, j.Reason, j.AdditionalContext
		if d := j.Specific; d != nil {
			decision = or(d.PermissionDecision, decision)
			reason = or(d.PermissionDecisionReason, reason)
			ctx = or(d.AdditionalContext, ctx)
		}
		switch strings.ToLower(or(decision, j.Decision)) {
		case "allow", "approve":
			a.decision = "allow"
		case "deny", "block":
			a.decision = "deny"
		case "ask":
			a.decision = "ask"
		}
		a.reason = bound(reason)
		if a.decision == "deny" && a.reason == "" {
			a.reason = "a hook blocked it"
		}
		if ctx != "" {
			a.context = append(a.context, bound(ctx))
		}
		return
	}
	// Plain output: context for the model where Claude Code gives it one; elsewhere it goes to the audit log only.
	if len(out) > 0 && (event == policy.HookUserPromptSubmit || event == policy.HookSessionStart) {
		a.context = append(a.context, bound(strings.ToValidUTF8(string(out), "\uFFFD")))
	}
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func bound(s string) string {
	if len(s) > maxHookReason {
		s = strings.ToValidUTF8(s[:maxHookReason], "") + " […]"
	}
	return s
}

func firstLine(s string) string {
	if s == "" {
		return "."
	}
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	return ": " + strings.ToValidUTF8(line, "\uFFFD")
}
