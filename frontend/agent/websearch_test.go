package agent

import (
	"context"
	"testing"

	"github.com/garuda-dev/garuda/frontend/model"
)

// The provider's web search shows as a tool call ("web_search" with its query) and its result (the URLs), and is
// offered only when the session says so; nothing of it enters the history.
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
	if reqs := f.requests(); !reqs[0].WebSearch || reqs[1].WebSearch {
		t.Errorf("WebSearch in the requests: %v, %v", reqs[0].WebSearch, reqs[1].WebSearch)
	}
}
