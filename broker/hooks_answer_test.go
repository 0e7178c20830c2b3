package broker

import (
	"testing"

	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/policy"
)

// readAnswer reads Claude Code's two forms: the exit code with stderr, and the JSON form on stdout.
func TestReadAnswer(t *testing.T) {
	h := policy.HookCommand{Command: "check.sh", Timeout: policy.DefaultHookTimeout}
	cases := []struct {
		name     string
		event    string
		res      sandbox.Result
		stdout   string
		decision string
		reason   string
		context  string
		failed   bool
		stop     bool
	}{
		{name: "exit 0, plain output for the log", event: policy.HookPreToolUse, stdout: "ok\n"},
		{name: "exit 0, plain output for the model", event: policy.HookUserPromptSubmit, stdout: "branch main\n", context: "branch main"},
		{name: "exit 2 blocks with stderr", event: policy.HookPreToolUse, res: sandbox.Result{ExitCode: 2,
			Output: []byte("no\n")}, decision: "deny", reason: "no"},
		{name: "exit 2 without stderr", event: policy.HookStop, res: sandbox.Result{ExitCode: 2}, decision: "deny",
			reason: `the hook "check.sh" blocked it`},
		{name: "exit 1 is a non-blocking error", event: policy.HookPreToolUse, res: sandbox.Result{ExitCode: 1,
			Output: []byte("boom")}, failed: true},
		{name: "timeout", event: policy.HookPreToolUse, res: sandbox.Result{ExitCode: 137, TimedOut: true}, failed: true},
		{name: "specific output", event: policy.HookPreToolUse,
			stdout:   `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "why"}}`,
			decision: "deny", reason: "why"},
		{name: "top-level permissionDecision", event: policy.HookPreToolUse, stdout: `{"permissionDecision": "ask", "reason": "look"}`,
			decision: "ask", reason: "look"},
		{name: "legacy approve", event: policy.HookPreToolUse, stdout: `{"decision": "approve"}`, decision: "allow"},
		{name: "block without a reason", event: policy.HookPostToolUse, stdout: `{"decision": "block"}`, decision: "deny",
			reason: "a hook blocked it"},
		{name: "additionalContext", event: policy.HookSessionStart,
			stdout: `{"hookSpecificOutput": {"additionalContext": "ctx"}}`, context: "ctx"},
		{name: "continue false", event: policy.HookStop, stdout: `{"continue": false, "stopReason": "done"}`, stop: true},
		{name: "invalid JSON is plain output", event: policy.HookUserPromptSubmit, stdout: `{"decision": "block"`,
			context: `{"decision": "block"`},
		{name: "JSON that is not an object is plain output", event: policy.HookPreToolUse, stdout: `["deny"]`},
		{name: "JSON is read only at exit 0", event: policy.HookPreToolUse, res: sandbox.Result{ExitCode: 1},
			stdout: `{"decision": "block"}`, failed: true},
	}
	for _, c := range cases {
		a := readAnswer(c.event, h, &c.res, []byte(c.stdout))
		var ctx string
		if len(a.context) > 0 {
			ctx = a.context[0]
		}
		if a.decision != c.decision || a.reason != c.reason || ctx != c.context || a.failed != c.failed || a.stop != c.stop {
			t.Errorf("%s: %+v", c.name, a)
		}
		if a.failed && (len(a.notice) < 8 || a.notice[:8] != "Garuda: ") {
			t.Errorf("%s: notice %q", c.name, a.notice)
		}
	}
}

// The outcome of several hooks: a deny wins whatever came before, an ask beats an allow.
func TestHookOutcomeFolds(t *testing.T) {
	var o hookOutcome
	o.add(hookAnswer{decision: "allow"})
	o.add(hookAnswer{decision: "ask", reason: "a"})
	o.add(hookAnswer{decision: "allow"})
	if o.decision != "ask" {
		t.Fatalf("allow, ask, allow: %q", o.decision)
	}
	o.add(hookAnswer{decision: "deny", reason: "d"})
	o.add(hookAnswer{decision: "ask"})
	if !o.blocked() || o.reason != "d" {
		t.Fatalf("then deny, ask: %q %q", o.decision, o.reason)
	}
}

// A flood is kept to its bound, and the writer is never told to stop (it would block the hook).
func TestBoundedBuffer(t *testing.T) {
	b := &boundedBuffer{max: 10}
	for range 5 {
		if n, err := b.Write([]byte("0123456")); n != 7 || err != nil {
			t.Fatal(n, err)
		}
	}
	if string(b.Bytes()) != "0123456012" || !b.over {
		t.Fatalf("%q %v", b.Bytes(), b.over)
	}
}
