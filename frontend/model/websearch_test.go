package model

import (
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
// the handler (the query, then the URLs) and stay out of the message; without it no such tool is offered.
func TestAnthropicWebSearch(t *testing.T) {
	s := newReplay(t, reply{file: "anthropic_web_search.sse"}, reply{file: "anthropic_max_tokens.sse"})
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
	for _, b := range resp.Message.Content {
		if b.Type != BlockText {
			t.Errorf("a server block was kept in the message: %+v", b)
		}
	}
	if len(resp.Message.Content) != 2 || resp.Message.Content[1].Text != "Go 1.26 was released in February." {
		t.Errorf("content = %+v", resp.Message.Content)
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
	// The negative control: without WebSearch, no search tool.
	if _, err := anthropicFor(s).Stream(context.Background(), userHi, h); err != nil {
		t.Fatal(err)
	}
	if got := tools(s.requests()[1].body); strings.Contains(got, "web_search") {
		t.Errorf("web search offered without WebSearch: %s", got)
	}
}

func TestSearchResultError(t *testing.T) {
	ev := searchResult(`{"type":"web_search_tool_result","tool_use_id":"s1",` +
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
