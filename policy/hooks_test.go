package policy

import (
	"strings"
	"testing"
	"time"
)

const claudeHooks = `{
  "hooks": {
    "PreToolUse": [
      {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "gofmt -l .", "timeout": 5}]},
      {"matcher": "mcp__.*", "hooks": [{"type": "command", "command": "echo mcp"}]},
      {"hooks": [{"type": "command", "command": "echo all"}]}
    ],
    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo ctx"}]}]
  }
}`

func TestHooksClaudeSchema(t *testing.T) {
	s, err := ParseSettings("/h/settings.json", []byte(claudeHooks))
	if err != nil {
		t.Fatal(err)
	}
	cmds := func(op string) string {
		var out []string
		for _, c := range s.Hooks.For(HookPreToolUse, HookToolNames(op)) {
			out = append(out, c.Command)
		}
		return strings.Join(out, ",")
	}
	cases := map[string]string{
		OpEditFile:        "gofmt -l .,echo all",
		OpWriteFile:       "gofmt -l .,echo all",
		OpBash:            "echo all",
		"mcp__github__pr": "echo mcp,echo all",
		OpReadFile:        "echo all",
	}
	for op, want := range cases {
		if got := cmds(op); got != want {
			t.Errorf("%s: hooks %q, want %q", op, got, want)
		}
	}
	if c := s.Hooks.For(HookPreToolUse, HookToolNames(OpEditFile))[0]; c.Timeout != 5*time.Second {
		t.Errorf("timeout %v", c.Timeout)
	}
	if c := s.Hooks.For(HookUserPromptSubmit, nil); len(c) != 1 || c[0].Timeout != DefaultHookTimeout {
		t.Errorf("UserPromptSubmit: %+v", c)
	}
}

func TestHookMatcherNames(t *testing.T) {
	// Garuda's own names and Claude's aliases both match; a matcher matches the whole name, not a part.
	s, err := ParseSettings("/h/settings.json", []byte(`{"hooks": {"PreToolUse": [
		{"matcher": "bash", "hooks": [{"type": "command", "command": "a"}]},
		{"matcher": "MultiEdit", "hooks": [{"type": "command", "command": "b"}]},
		{"matcher": "Edi", "hooks": [{"type": "command", "command": "c"}]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Hooks.For(HookPreToolUse, HookToolNames(OpBash))); n != 1 {
		t.Errorf("bash: %d hooks", n)
	}
	if h := s.Hooks.For(HookPreToolUse, HookToolNames(OpEditFile)); len(h) != 1 || h[0].Command != "b" {
		t.Errorf("edit_file: %+v", h)
	}
}

func TestHooksBadInput(t *testing.T) {
	cases := map[string]string{
		`{"hooks": {"PreToolUs": []}}`:                                                           `line 1: hooks: unknown event "PreToolUs"`,
		`{"hooks": {"Stop": [{"matcher": "(", "hooks": []}]}}`:                                   "is not a regular expression",
		`{"hooks": {"Stop": [{"hooks": [{"type": "prompt", "command": "x"}]}]}}`:                 `hook type must be "command"`,
		`{"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}`:                                `needs "type": "command" and a "command"`,
		`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}}`: "timeout must be a number of seconds",
		`{"hooks": {"Stop": [{"matcher": "*"}]}}`:                                                `an entry without "hooks"`,

		`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "fail_closed": true}]}]}}`: "fail_closed belongs in team policy",
		"{\n\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", " +
			"\"command\": \"x\", \"timout\": 3}]}]}}": `line 2: hooks.Stop: unknown key "timout"`,
	}
	for in, want := range cases {
		_, err := ParseSettings("/h/settings.json", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
	// fail_closed is team policy's.
	s, err := ParseSettings("/h/policy.json",
		[]byte(`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "fail_closed": true}]}]}}`))
	if err != nil || !s.Hooks.For(HookStop, nil)[0].FailClosed {
		t.Fatalf("team fail_closed: %v", err)
	}
}

func TestClaudeSettingsOnlyHooks(t *testing.T) {
	data := `{"model": "opus", "permissions": {"allow": ["Bash(whatever:*)"], "defaultMode": "x"}, "env": {"A": "1"},
	"hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "gofmt -w ."}]}]}}`
	h, err := ParseClaudeHooks("/p/.claude/settings.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.For(HookPostToolUse, HookToolNames(OpWriteFile))) != 1 {
		t.Errorf("hooks: %+v", h)
	}
	if _, err := ParseClaudeHooks("/p/.claude/settings.json", []byte(`{"hooks": {"Stop": [{"hooks": [{"command": 1}]}]}}`)); err == nil {
		t.Error("malformed hooks in .claude/settings.json were accepted")
	}
	if h, err := ParseClaudeHooks("/p/.claude/settings.json", []byte(`{"model": "x"}`)); err != nil || h != nil {
		t.Errorf("no hooks: %v %v", h, err)
	}
}

func TestHooksHashAndTeamJoin(t *testing.T) {
	a, _ := ParseSettings("/h/policy.json", []byte(`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a"}]}]}}`))
	b, _ := ParseSettings("/h/policy.json", []byte(`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "b"}]}]}}`))
	if a.Hooks.Hash() == b.Hooks.Hash() || a.Hooks.Hash() == "" || Hooks(nil).Hash() != "" {
		t.Error("hashes do not tell the definitions apart")
	}
	m := MergeTeam(a, b)
	if got := m.Hooks.For(HookStop, nil); len(got) != 2 || got[0].Command != "a" || got[1].Command != "b" {
		t.Errorf("merged team hooks: %+v", got)
	}
}

func TestHookMayAllow(t *testing.T) {
	st := &State{Root: "/p", Mode: ModeBuild}
	ask := Decision{Verdict: Ask, Rule: "/h/settings.json: bash(make *)"}
	cases := []struct {
		name string
		req  Request
		d    Decision
		want bool
	}{
		{"user ask", Request{Kind: KindCommand, Command: "make", Sandboxed: true}, ask, true},
		{"team ask", Request{Kind: KindCommand, Command: "make", Sandboxed: true}, Decision{Verdict: Ask, Rule: "team policy"}, false},
		{"protected path", Request{Kind: KindWrite, Path: "/p/.git/config"}, ask, false},
		{"outside the sandbox", Request{Kind: KindCommand, Command: "make"}, ask, false},
		{"outside the project", Request{Kind: KindWrite, Path: "/etc/x"}, ask, false},
		{"a deny", Request{Kind: KindCommand, Command: "make", Sandboxed: true}, Decision{Verdict: Deny}, false},
	}
	for _, c := range cases {
		if got := HookMayAllow(c.req, c.d, st); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
