package policy

import (
	"strings"
	"testing"
)

// FuzzParseHooks checks the hooks of a settings file (Garuda's and .claude/settings.json): the parser never panics,
// an error names the file, every hook it accepts has a command and a positive timeout, and what it accepts hashes
// the same when parsed again (a consent pinned to that hash is not asked again for the same file).
func FuzzParseHooks(f *testing.F) {
	f.Add([]byte(`{"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "x", "timeout": 5}]}]}}`))
	f.Add([]byte(`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "y"}]}]}, "permissions": {"allow": ["Bash"]}}`))
	f.Add([]byte(`{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": []}]}}`))
	f.Add([]byte(`{"hooks": {"Nope": []}, "hooks": {}}`))
	f.Add([]byte(`{"hooks": {"PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "z", "timeout": -1}]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "/p/.claude/settings.json"
		check := func(h Hooks, err error) {
			if err != nil {
				if !strings.Contains(err.Error(), name) {
					t.Fatalf("error without the file's name: %v", err)
				}
				return
			}
			for ev, ms := range h {
				for _, m := range ms {
					for _, c := range m.Hooks {
						if c.Command == "" || c.Timeout <= 0 {
							t.Fatalf("%s: accepted a hook with command %q, timeout %v", ev, c.Command, c.Timeout)
						}
					}
				}
			}
		}
		h1, err1 := ParseClaudeHooks(name, data)
		check(h1, err1)
		h2, err2 := ParseClaudeHooks(name, data)
		if (err1 == nil) != (err2 == nil) || h1.Hash() != h2.Hash() {
			t.Fatalf("two parses of the same file differ: %v / %v, %s / %s", err1, err2, h1.Hash(), h2.Hash())
		}
		s, err := ParseSettings(name, data)
		if err == nil {
			check(s.Hooks, nil)
		} else {
			check(nil, err)
		}
	})
}
