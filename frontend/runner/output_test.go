package runner

import (
	"context"
	"io"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// Options.Started is called once, at the model's first output (text, thought or tool call), and not before: not for
// a notice, an available-commands update or a plan.
func TestStartedAtTheModelsFirstOutput(t *testing.T) {
	for name, first := range map[string]acp.SessionUpdate{
		"text":      acp.UpdateAgentMessageText("hello"),
		"thought":   acp.UpdateAgentThoughtText("hmm"),
		"tool call": acp.StartToolCall("t1", "Read a.txt"),
	} {
		t.Run(name, func(t *testing.T) {
			n := 0
			w := newOutput(Options{Stdout: io.Discard, Stderr: io.Discard, Started: func() { n++ }})
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
				w.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: "s", Update: first})
			}
			if n != 1 {
				t.Errorf("Started called %d times, want once", n)
			}
		})
	}
}
