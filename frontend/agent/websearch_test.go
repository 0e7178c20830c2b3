package agent

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/frontend/model"
)

// The provider's web search shows as a tool call ("web_search" with its query) and its result (the URLs), and is
// offered only when the session says so.
func TestWebSearchEvents(t *testing.T) {
	search := func(ctx context.Context, req model.Request, h model.Handler) (*model.Response, error) {
		sh := h.(model.ServerToolHandler)
		sh.ServerTool(model.ServerToolEvent{ID: "srv1", Name: "web_search", Query: "acp spec"})
		sh.ServerTool(model.ServerToolEvent{ID: "srv1", Name: "web_search", Done: true, URLs: []string{"https://a.example/1",
			"https://b.example/2"}})
		return answerText("found it")(ctx, req, h)
	}
	f := newFake(t, search, answerText("plain"))
	s := newSession(f, &fakeTools{})
	s.WebSearch = true
	var rec recorder
	if stop, err := s.RunTurn(t.Context(), "search", rec.emit); err != nil || stop != StopDone {
		t.Fatalf("RunTurn = %q, %v", stop, err)
	}
	calls, results := rec.of(EventToolCall), rec.of(EventToolResult)
	if len(calls) != 1 || calls[0].Call.Name != "web_search" || string(calls[0].Call.Input) != `{"query":"acp spec"}` {
		t.Errorf("calls = %+v", calls)
	}
	if len(results) != 1 || results[0].Call.ID != "srv1" || results[0].Result.Status != StatusCompleted ||
		results[0].Result.Content != "https://a.example/1\nhttps://b.example/2" {
		t.Errorf("results = %+v", results)
	}
	if len(s.History) != 2 {
		t.Errorf("history = %+v", s.History)
	}
	s.WebSearch = false
	if _, err := s.RunTurn(t.Context(), "again", nil); err != nil {
		t.Fatal(err)
	}
	if reqs := f.Requests(); !reqs[0].WebSearch || reqs[1].WebSearch {
		t.Errorf("WebSearch in the requests: %v, %v", reqs[0].WebSearch, reqs[1].WebSearch)
	}
}

// A turn the provider paused (pause_turn) is sent again with the paused answer as the last message, no user message
// added, and goes on to its end; the history keeps both answers in order.
func TestPauseTurnContinues(t *testing.T) {
	use := model.Block{Type: model.BlockServerToolUse, ToolUseID: "srv1", Name: "web_search", Input: []byte(`{"query":"q"}`)}
	result := model.Block{Type: model.BlockWebSearchResult, ToolUseID: "srv1", Result: []byte(`[]`)}
	f := newFake(t, answerStop(model.StopPause, model.Block{Type: model.BlockText, Text: "searching"}, use),
		answerStop(model.StopEndTurn, result, model.Block{Type: model.BlockText, Text: "done"}), answerText("next"))
	s := newSession(f, &fakeTools{})
	s.WebSearch = true
	if stop, err := s.RunTurn(t.Context(), "search", nil); err != nil || stop != StopDone {
		t.Fatalf("RunTurn = %q, %v", stop, err)
	}
	reqs := f.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	cont := reqs[1].Messages
	if last := cont[len(cont)-1]; last.Role != model.RoleAssistant || len(last.Content) != 2 || last.Content[1].ToolUseID != "srv1" {
		t.Errorf("the continuation's last message: %+v", last)
	}
	if len(s.History) != 3 || s.History[2].Content[0].Type != model.BlockWebSearchResult {
		t.Errorf("history = %+v", s.History)
	}
	// The next turn's request carries the search's blocks.
	if _, err := s.RunTurn(t.Context(), "more", nil); err != nil {
		t.Fatal(err)
	}
	var kept []model.BlockType
	for _, m := range f.Requests()[2].Messages {
		for _, b := range m.Content {
			kept = append(kept, b.Type)
		}
	}
	if !slices.Contains(kept, model.BlockServerToolUse) || !slices.Contains(kept, model.BlockWebSearchResult) {
		t.Errorf("the next turn's request holds %v", kept)
	}
}

// A provider that pauses without end is continued maxPauses times, then the turn stops with a notice.
func TestPauseTurnBounded(t *testing.T) {
	var steps []step
	for range maxPauses + 1 {
		steps = append(steps, answerStop(model.StopPause, model.Block{Type: model.BlockText, Text: "still searching"}))
	}
	f := newFake(t, steps...)
	s := newSession(f, &fakeTools{})
	var rec recorder
	stop, err := s.RunTurn(t.Context(), "search", rec.emit)
	if err != nil || stop != StopMaxSteps {
		t.Fatalf("RunTurn = %q, %v", stop, err)
	}
	if n := len(f.Requests()); n != maxPauses+1 {
		t.Errorf("%d requests, want %d", n, maxPauses+1)
	}
	if ns := rec.of(EventNotice); len(ns) != 1 || !strings.Contains(ns[0].Text, "paused it") {
		t.Errorf("notices = %+v", ns)
	}
}
