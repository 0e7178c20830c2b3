package broker_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// BenchmarkHookEvent is one UserPromptSubmit reported through the broker: with no hooks (nothing runs, nothing is
// recorded: the cost of the call itself), and with one no-op hook (`true`, run in the sandbox under the guard and
// audited). The difference is what a no-op hook adds to its event.
func BenchmarkHookEvent(b *testing.B) {
	for _, bc := range []struct{ name, settings string }{
		{"no-hooks", `{}`},
		{"noop-hook", brokertest.HooksJSON("UserPromptSubmit", "", "true", "")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := brokertest.New(b)
			os.WriteFile(filepath.Join(e.Home, "settings.json"), []byte(bc.settings), 0o600)
			c := e.Client()
			sid := e.Open(c)
			op := &execv1.Start{Op: &execv1.Start_HookEvent{HookEvent: &execv1.HookEvent{Event: "UserPromptSubmit", Prompt: "hi"}}}
			for b.Loop() {
				benchCall(b, c, sid, op)
			}
		})
	}
}

// BenchmarkHookPreToolUse is a read_file call with no hooks, and with a no-op PreToolUse hook on every tool.
func BenchmarkHookPreToolUse(b *testing.B) {
	for _, bc := range []struct{ name, settings string }{
		{"no-hooks", `{}`},
		{"noop-hook", brokertest.HooksJSON("PreToolUse", "*", "true", "")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := brokertest.New(b)
			os.WriteFile(filepath.Join(e.Home, "settings.json"), []byte(bc.settings), 0o600)
			os.WriteFile(filepath.Join(e.Root, "a.txt"), []byte("alpha\n"), 0o644)
			c := e.Client()
			sid := e.Open(c)
			for b.Loop() {
				benchCall(b, c, sid, brokertest.Read("a.txt"))
			}
		})
	}
}
