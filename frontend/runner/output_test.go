package runner

import (
	"context"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// Options.Started is called once, at the model's first output (text, thought or tool call), and not before: not for
// a notice, an available-commands update or a plan; and only once that output is written (garuda run's Started
// gives the collector back its pace, which set a collection off before the first byte went out).
func TestStartedAtTheModelsFirstOutput(t *testing.T) {
	for name, tc := range map[string]struct {
		first acp.SessionUpdate
		shown string
	}{
		"text":      {acp.UpdateAgentMessageText("hello"), "hello"},
		"thought":   {acp.UpdateAgentThoughtText("hmm"), "hmm"},
		"tool call": {acp.StartToolCall("t1", "Read a.txt"), "Read a.txt"},
	} {
		t.Run(name, func(t *testing.T) {
			n := 0
			var out strings.Builder
			atStarted := ""
			w := newOutput(Options{Stdout: &out, Stderr: &out, Started: func() {
				n++
				atStarted = out.String()
			}})
			before := []acp.SessionUpdate{
				acp.UpdateAgentMessageText("\nGaruda: a notice\n"),
				{AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{AvailableCommands: []acp.AvailableCommand{}}},
				{Plan: &acp.SessionUpdatePlan{Entries: []acp.PlanEntry{}}},
			}
			for _, u := range before {
				w.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: "s", Update: u})
			}
			if n != 0 {
				t.Fatalf("Started called %d times before the model's output", n)
			}
			for range 2 {
				w.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: "s", Update: tc.first})
			}
			if n != 1 {
				t.Errorf("Started called %d times, want once", n)
			}
			if !strings.Contains(atStarted, tc.shown) {
				t.Errorf("Started was called before %q was written (the output then: %q)", tc.shown, atStarted)
			}
		})
	}
}
