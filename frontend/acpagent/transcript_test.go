package acpagent

import (
	"slices"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker/sessionlog"
	"github.com/garuda-dev/garuda/frontend/model"
)

func TestSessionFileRecordsTheTurn(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "alpha\n")
	sid := e.newSession()
	e.fake.Push(tool("toolu_r", "read_file", `{"path":"a.txt"}`), model.TextStep("done"))
	e.promptOK(sid, "read it")
	path := e.sessionFile(sid)
	var kinds []string
	deadline := time.Now().Add(waitLimit)
	for {
		entries, _ := sessionlog.Read(path)
		kinds = kinds[:0]
		for _, en := range entries {
			kinds = append(kinds, en.Kind)
		}
		if slices.Contains(kinds, "stop") || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The broker's header; the user's prompt (replayed), the title; the prompt for the model and the conversation;
	// the tool call and its end (replayed) between the messages; the final text; the stop.
	want := []string{"session", "update", "title", "update", "prompt", "message", "message", "update", "update", "message",
		"message", "update", "stop"}
	if !slices.Equal(kinds, want) {
		t.Errorf("session file kinds %q, want %q", kinds, want)
	}
}
