package model

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type searchCollect struct {
	collect
	events []ServerToolEvent
}

func (c *searchCollect) ServerTool(ev ServerToolEvent) { c.events = append(c.events, ev) }

// With WebSearch the request offers Anthropic's web_search tool; the stream's server_tool_use and its result reach
// the handler (the query, then the URLs) and stay in the message as they came, with the text's citations, so that the
// next request sends them back (the API requires a search's blocks and the citations that point into them); without
// WebSearch no such tool is offered and the search blocks and citations are left out, the text kept.
func TestAnthropicWebSearch(t *testing.T) {
	s := newReplay(t, reply{file: "anthropic_web_search.sse"}, reply{file: "anthropic_max_tokens.sse"},
		reply{file: "anthropic_max_tokens.sse"})
	h := &searchCollect{}
	req := userHi
	req.WebSearch = true
	resp, err := anthropicFor(s).Stream(context.Background(), req, h)
	if err != nil {
		t.Fatal(err)
	}
	want := []ServerToolEvent{
		{ID: "srvtoolu_014hJH82Qum7Td6UV8gDXThB", Name: "web_search", Query: "go 1.26 release notes"},
		{ID: "srvtoolu_014hJH82Qum7Td6UV8gDXThB", Name: "web_search", Done: true, URLs: []string{"https://go.dev/doc/go1.26",
			"https://go.dev/blog/go1.26"}},
	}
	if !reflect.DeepEqual(h.events, want) {
		t.Errorf("events = %+v\nwant %+v", h.events, want)
	}
	var types []BlockType
	for _, b := range resp.Message.Content {
		types = append(types, b.Type)
	}
	if want := []BlockType{BlockText, BlockServerToolUse, BlockWebSearchResult, BlockText}; !reflect.DeepEqual(types, want) {
		t.Fatalf("blocks = %v, want %v", types, want)
	}
	use, result, answer := resp.Message.Content[1], resp.Message.Content[2], resp.Message.Content[3]
	if use.ToolUseID != "srvtoolu_014hJH82Qum7Td6UV8gDXThB" || use.Name != "web_search" ||
		string(use.Input) != `{"query": "go 1.26 release notes"}` {
		t.Errorf("server_tool_use = %+v", use)
	}
	if result.ToolUseID != use.ToolUseID || !strings.Contains(string(result.Result), `"encrypted_content":"Eu8BCioIAhgBIiQ3"`) {
		t.Errorf("web_search_tool_result = %+v", result)
	}
	if answer.Text != "Go 1.26 was released in February." || !strings.Contains(string(answer.Citations), `"encrypted_index":"EpMBCioIAhgB"`) {
		t.Errorf("the cited answer = %+v", answer)
	}
	tools := func(body []byte) string {
		var b struct {
			Tools []json.RawMessage `json:"tools"`
		}
		json.Unmarshal(body, &b)
		var out []string
		for _, t := range b.Tools {
			out = append(out, string(t))
		}
		return strings.Join(out, ",")
	}
	if got := tools(s.requests()[0].body); !strings.Contains(got, `"type":"web_search_20250305"`) || !strings.Contains(got, `"max_uses":5`) {
		t.Errorf("tools offered: %s", got)
	}

	// The next request carries the search's blocks back as they came.
	next := req
	next.Messages = []Message{req.Messages[0], resp.Message, {Role: RoleUser, Content: []Block{{Type: BlockText, Text: "and 1.27?"}}}}
	if _, err := anthropicFor(s).Stream(context.Background(), next, h); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(s.requests()[1].body, &body); err != nil || len(body.Messages) != 3 || len(body.Messages[1].Content) != 4 {
		t.Fatalf("second request: %v %s", err, s.requests()[1].body)
	}
	sent := body.Messages[1].Content
	for i, want := range []string{
		`{"type":"server_tool_use","id":"srvtoolu_014hJH82Qum7Td6UV8gDXThB","name":"web_search","input":{"query":"go 1.26 release notes"}}`,
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_014hJH82Qum7Td6UV8gDXThB","content":[{"type":"web_search_result",` +
			`"title":"Go 1.26 Release Notes","url":"https://go.dev/doc/go1.26","encrypted_content":"Eu8BCioIAhgBIiQ3",` +
			`"page_age":"February 2026"},` +
			`{"type":"web_search_result","title":"Go blog","url":"https://go.dev/blog/go1.26","encrypted_content":"Eu8BCioIAhgBIiQ4"}]}`,
		`{"type":"text","text":"Go 1.26 was released in February.","citations":[{"type":"web_search_result_location",` +
			`"cited_text":"Go 1.26 is released, February 2026.","url":"https://go.dev/doc/go1.26","title":"Go 1.26 Release Notes",` +
			`"encrypted_index":"EpMBCioIAhgB"}]}`,
	} {
		if got := string(sent[i+1]); got != want {
			t.Errorf("block %d sent back as\n%s\nwant\n%s", i+1, got, want)
		}
	}

	// The negative control: without WebSearch, no search tool, and no search blocks or citations sent back.
	next.WebSearch = false
	if _, err := anthropicFor(s).Stream(context.Background(), next, h); err != nil {
		t.Fatal(err)
	}
	third := s.requests()[2].body
	if got := tools(third); strings.Contains(got, "web_search") {
		t.Errorf("web search offered without WebSearch: %s", got)
	}
	if bytes.Contains(third, []byte("srvtoolu_")) || bytes.Contains(third, []byte("citations")) ||
		!bytes.Contains(third, []byte(`"text":"Go 1.26 was released in February."`)) {
		t.Errorf("without WebSearch the history sent is %s", third)
	}
}

// A pause_turn answer is StopPause with its blocks kept (a server_tool_use still waiting for its result); sent again
// as the last message, the continuation's blocks join it as one assistant turn on the wire.
func TestAnthropicPauseTurn(t *testing.T) {
	s := newReplay(t, reply{file: "anthropic_pause_turn.sse"}, reply{file: "anthropic_pause_turn_end.sse"})
	req := userHi
	req.WebSearch = true
	c := anthropicFor(s)
	paused, err := c.Stream(context.Background(), req, &searchCollect{})
	if err != nil {
		t.Fatal(err)
	}
	if paused.StopReason != StopPause || len(paused.Message.Content) != 2 || paused.Message.Content[1].Type != BlockServerToolUse {
		t.Fatalf("paused: %s %+v", paused.StopReason, paused.Message.Content)
	}
	req.Messages = append(req.Messages, paused.Message)
	end, err := c.Stream(context.Background(), req, &searchCollect{})
	if err != nil {
		t.Fatal(err)
	}
	if end.StopReason != StopEndTurn || len(end.Message.Content) != 2 || end.Message.Content[0].Type != BlockWebSearchResult {
		t.Fatalf("continued: %s %+v", end.StopReason, end.Message.Content)
	}
	var body struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(s.requests()[1].body, &body)
	if n := len(body.Messages); n != 2 || body.Messages[1].Role != "assistant" || len(body.Messages[1].Content) != 2 ||
		!strings.Contains(string(body.Messages[1].Content[1]), `"type":"server_tool_use","id":"srvtoolu_01PauseD"`) {
		t.Fatalf("the continuation request: %s", s.requests()[1].body)
	}
	// The paused answer and its continuation, as History keeps them, are one assistant turn on the wire.
	req.Messages = append(req.Messages, end.Message, Message{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "thanks"}}})
	p, err := c.(*anthropicClient).params(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Messages) != 3 {
		t.Errorf("%d messages on the wire, want 3 (user, assistant, user)", len(p.Messages))
	}
}

func TestSearchResultError(t *testing.T) {
	ev, _ := searchResult(`{"type":"web_search_tool_result","tool_use_id":"s1",` +
		`"content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}}`)
	if !ev.Done || ev.ID != "s1" || ev.Error != "the web search failed: max_uses_exceeded" || ev.URLs != nil {
		t.Errorf("%+v", ev)
	}
}

// Web search is offered only where the provider runs it: Anthropic's own API, not an Anthropic-compatible endpoint
// elsewhere, nor an OpenAI-compatible server.
func TestSearchesWeb(t *testing.T) {
	for base, want := range map[string]bool{"": true, "https://api.anthropic.com": true, "http://127.0.0.1:8080": false,
		"https://api.anthropic.com.evil.io": false} {
		c := NewAnthropic(ProviderConfig{Type: TypeAnthropic, BaseURL: base, APIKey: "k", Model: "m"})
		if got := c.(WebSearcher).SearchesWeb(); got != want {
			t.Errorf("%q: %v, want %v", base, got, want)
		}
	}
	if _, ok := NewOpenAI(ProviderConfig{Type: TypeOpenAI, BaseURL: "http://127.0.0.1:1/v1", APIKey: "k", Model: "m"}).(WebSearcher); ok {
		t.Error("an OpenAI-compatible client offers web search")
	}
}
