package model

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

func anthropicFor(s *replayServer) Client {
	return NewAnthropic(ProviderConfig{Type: TypeAnthropic, BaseURL: s.URL, APIKey: "sk-ant-test", Model: "claude-sonnet-4-5"})
}

var userHi = Request{System: "You are Garuda.", Messages: []Message{{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "hi"}}}}}

func TestAnthropicToolInputSplitAcrossChunks(t *testing.T) {
	s := newReplay(t, reply{file: "anthropic_tool_split.sse"})
	h := &collect{}
	resp := streamOK(t, anthropicFor(s), h)
	if got := strings.Join(h.text, "|"); got != "Let me read |the file." {
		t.Errorf("text deltas = %q", got)
	}
	want := []Block{
		{Type: BlockText, Text: "Let me read the file."},
		{Type: BlockToolUse, ToolUseID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "read_file",
			Input: json.RawMessage(`{"path": "src/main.go", "note": "café \"q\""}`)},
	}
	if !reflect.DeepEqual(resp.Message.Content, want) {
		t.Errorf("content = %+v\nwant %+v", resp.Message.Content, want)
	}
	var in map[string]string
	if err := json.Unmarshal(resp.Message.Content[1].Input, &in); err != nil || in["note"] != `café "q"` {
		t.Errorf("tool input %s: %v %q", resp.Message.Content[1].Input, err, in["note"])
	}
	if resp.StopReason != StopToolUse || resp.Usage.InputTokens != 472 || resp.Usage.OutputTokens != 89 {
		t.Errorf("stop %q usage %+v", resp.StopReason, resp.Usage)
	}
	r := s.requests()[0]
	if r.path != "/v1/messages" || r.header.Get("X-Api-Key") != "sk-ant-test" || r.header.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("request %s headers %v", r.path, r.header)
	}
	var body struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		Stream    bool   `json:"stream"`
		System    []struct {
			Text string `json:"text"`
		} `json:"system"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "claude-sonnet-4-5" || body.MaxTokens != DefaultMaxOutputTokens || !body.Stream ||
		len(body.System) != 1 || body.System[0].Text != "You are Garuda." {
		t.Errorf("body = %s", r.body)
	}
}

func TestAnthropicParallelToolCallsAndUsage(t *testing.T) {
	s := newReplay(t, reply{file: "anthropic_parallel_tools.sse"})
	resp := streamOK(t, anthropicFor(s), &collect{})
	var got []string
	for _, b := range resp.Message.Content {
		if b.Type != BlockToolUse {
			t.Fatalf("unexpected block %+v", b)
		}
		got = append(got, b.ToolUseID+" "+b.Name+" "+string(b.Input))
	}
	want := []string{
		`toolu_01A glob {"pattern": "**/*.go"}`,
		`toolu_01B grep {"pattern": "func main", "path": "."}`,
		`toolu_01C list_todo {}`, // no input deltas: an empty object
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("calls = %q", got)
	}
	if u := resp.Usage; u.InputTokens != 4021 || u.CacheReadTokens != 3000 || u.OutputTokens != 120 || u.Total() != 4141 {
		t.Errorf("usage = %+v", u)
	}
}

func TestAnthropicThinkingSignatureSentBackUnchanged(t *testing.T) {
	s := newReplay(t, reply{file: "anthropic_thinking.sse"}, reply{file: "anthropic_max_tokens.sse"})
	c := anthropicFor(s)
	h := &collect{}
	req := userHi
	req.ThinkingBudget = 2048
	req.MaxTokens = 4096
	resp, err := c.Stream(context.Background(), req, h)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.thinking, ""); got != "The user wants 27 * 453.\n27 * 453 = 12231." {
		t.Errorf("thinking deltas = %q", got)
	}
	const sig = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+SIGN/1"
	const redacted = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB9URj2pLmN3kF8/kW+9MUE"
	content := resp.Message.Content
	if len(content) != 3 || content[0].Signature != sig || content[1].Type != BlockRedactedThinking ||
		content[1].Data != redacted || content[2].Text != "27 * 453 = **12,231**" {
		t.Fatalf("content = %+v", content)
	}
	if resp.Usage.InputTokens != 125 || resp.Usage.CacheWriteTokens != 40 {
		t.Errorf("usage = %+v", resp.Usage)
	}

	// The next request carries the thinking blocks back exactly as received.
	req.Messages = append(req.Messages, resp.Message, Message{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "and times 2?"}}})
	if _, err := c.Stream(context.Background(), req, h); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Thinking struct {
			Type   string `json:"type"`
			Budget int    `json:"budget_tokens"`
		} `json:"thinking"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(s.requests()[1].body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Thinking.Type != "enabled" || body.Thinking.Budget != 2048 {
		t.Errorf("thinking config = %+v", body.Thinking)
	}
	a := body.Messages[1]
	if a.Role != "assistant" || len(a.Content) != 3 {
		t.Fatalf("assistant message = %+v", a)
	}
	if a.Content[0]["type"] != "thinking" || a.Content[0]["signature"] != sig ||
		a.Content[0]["thinking"] != "The user wants 27 * 453.\n27 * 453 = 12231." {
		t.Errorf("thinking block sent back = %v", a.Content[0])
	}
	if a.Content[1]["type"] != "redacted_thinking" || a.Content[1]["data"] != redacted {
		t.Errorf("redacted block sent back = %v", a.Content[1])
	}
}

func TestAnthropicStopReasons(t *testing.T) {
	for file, want := range map[string]StopReason{"anthropic_max_tokens.sse": StopMaxTokens,
		"anthropic_refusal.sse": StopRefusal, "anthropic_thinking.sse": StopEndTurn} {
		s := newReplay(t, reply{file: file})
		resp, err := anthropicFor(s).Stream(context.Background(), userHi, &collect{})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if resp.StopReason != want {
			t.Errorf("%s: stop = %q, want %q", file, resp.StopReason, want)
		}
	}
}

// The SDK does not retry: a 429 or 529 comes back from its one request as a transient StreamError that has not
// started, with the wait the provider asked for; the agent loop decides. A 400 is final.
func TestAnthropicDoesNotRetryInTheSDK(t *testing.T) {
	for _, status := range []int{429, 529, 500} {
		s := newReplay(t, reply{status: status, file: "anthropic_429.json"}, reply{file: "anthropic_max_tokens.sse"})
		_, err := anthropicFor(s).Stream(context.Background(), userHi, &collect{})
		var se *StreamError
		if !errors.As(err, &se) || !se.Retryable || se.Started || se.Status != status || se.RetryAfter != time.Millisecond {
			t.Errorf("%d: err = %#v (%v)", status, err, err)
		}
		if n := len(s.requests()); n != 1 {
			t.Errorf("%d: the SDK sent %d requests", status, n)
		}
	}
	s := newReplay(t, reply{status: 400, file: "anthropic_429.json"}, reply{file: "anthropic_max_tokens.sse"})
	_, err := anthropicFor(s).Stream(context.Background(), userHi, &collect{})
	var se *StreamError
	if !errors.As(err, &se) || se.Retryable || se.Status != 400 || len(s.requests()) != 1 {
		t.Errorf("400: err = %#v, %d requests", err, len(s.requests()))
	}
}

// TestErrorEventMidStream: an error event in a started stream is a started, retryable StreamError with the
// provider's words, after the deltas before it; the SDK does not retry it.
func TestErrorEventMidStream(t *testing.T) {
	for _, c := range []struct {
		name, file, says, deltas string
		client                   func(*replayServer) Client
	}{
		{"anthropic", "anthropic_error_midstream.sse", "Overloaded", "Half an ans", anthropicFor},
		{"openai", "openai_error_midstream.sse", "server had an error", "Half", openaiFor},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newReplay(t, reply{file: c.file})
			h := &collect{}
			_, err := c.client(s).Stream(context.Background(), userHi, h)
			var se *StreamError
			if !errors.As(err, &se) || !se.Started || !se.Retryable || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("err = %#v (%v)", err, err)
			}
			if strings.Join(h.text, "") != c.deltas {
				t.Errorf("deltas before the error = %q", h.text)
			}
			if n := len(s.requests()); n != 1 {
				t.Errorf("the SDK retried a started stream: %d requests", n)
			}
		})
	}
}

func TestAnthropicTruncatedStreamIsRetryable(t *testing.T) {
	s := newReplay(t, reply{file: "anthropic_truncated.sse"})
	_, err := anthropicFor(s).Stream(context.Background(), userHi, &collect{})
	var se *StreamError
	if !errors.As(err, &se) || !se.Retryable || se.Started {
		t.Fatalf("err = %#v (%v)", err, err)
	}
}

func TestAnthropicAuthAndContextErrors(t *testing.T) {
	s := newReplay(t, reply{status: 401, file: "anthropic_401.json"})
	_, err := anthropicFor(s).Stream(context.Background(), userHi, &collect{})
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "invalid x-api-key") {
		t.Errorf("401: err = %v", err)
	}
	var se *StreamError
	if !errors.As(err, &se) || se.Retryable {
		t.Errorf("401 must not be retryable: %#v", err)
	}
	if n := len(s.requests()); n != 1 {
		t.Errorf("401 was retried: %d requests", n)
	}
	if strings.Contains(err.Error(), "sk-ant-test") {
		t.Errorf("the error shows the key: %v", err)
	}

	s = newReplay(t, reply{status: 403, file: "anthropic_401.json"})
	if _, err := anthropicFor(s).Stream(context.Background(), userHi, &collect{}); !errors.Is(err, ErrAuth) {
		t.Errorf("403: err = %v", err)
	}

	s = newReplay(t, reply{status: 400, file: "anthropic_prompt_too_long.json"})
	_, err = anthropicFor(s).Stream(context.Background(), userHi, &collect{})
	if !errors.Is(err, ErrContextTooLong) || errors.Is(err, ErrAuth) {
		t.Errorf("prompt too long: err = %v", err)
	}
}

func TestAnthropicRequestFromHistory(t *testing.T) {
	s := newReplay(t, reply{file: "anthropic_max_tokens.sse"})
	schema := `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`
	req := Request{
		Tools: []ToolSpec{{Name: "read_file", Description: "Read a file", InputSchema: json.RawMessage(schema)}},
		Messages: []Message{
			{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "read a"}}},
			{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: ""}, {Type: BlockToolUse, ToolUseID: "t1",
				Name: "read_file", Input: json.RawMessage(`{"path":"a"}`)}}},
			{Role: RoleUser, Content: []Block{{Type: BlockToolResult, ToolUseID: "t1", Text: "denied by the user", IsError: true}}},
		},
	}
	if _, err := anthropicFor(s).Stream(context.Background(), req, &collect{}); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Tools    []map[string]json.RawMessage `json:"tools"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(s.requests()[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Tools) != 1 || string(body.Tools[0]["input_schema"]) != schema {
		t.Errorf("tools = %s", s.requests()[0].body)
	}
	if len(body.Messages) != 3 || len(body.Messages[1].Content) != 1 { // the empty text block is left out
		t.Fatalf("messages = %+v", body.Messages)
	}
	tr := body.Messages[2].Content[0]
	if tr["type"] != "tool_result" || tr["tool_use_id"] != "t1" || tr["is_error"] != true ||
		!strings.Contains(string(s.requests()[0].body), "denied by the user") {
		t.Errorf("tool result = %v", tr)
	}
	// Prompt caching marks the last tool and the last block of the history.
	if tr["cache_control"] == nil || body.Tools[0]["cache_control"] == nil || body.Messages[0].Content[0]["cache_control"] != nil {
		t.Errorf("cache_control: last block %v, tool %s, first block %v", tr["cache_control"],
			body.Tools[0]["cache_control"], body.Messages[0].Content[0]["cache_control"])
	}
}

// The client must not send a key from the environment that the configuration did not give it:
// a key-less Anthropic-compatible endpoint (a local proxy) would otherwise receive the user's
// real ANTHROPIC_API_KEY.
func TestAnthropicIgnoresEnvironmentKeys(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "tok-from-env")
	s := newReplay(t, reply{file: "anthropic_max_tokens.sse"}, reply{file: "anthropic_max_tokens.sse"})
	c := NewAnthropic(ProviderConfig{Type: TypeAnthropic, BaseURL: s.URL, Model: "m"})
	streamOK(t, c, &collect{})
	h := s.requests()[0].header
	if h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" {
		t.Errorf("an environment key was sent: x-api-key %q authorization %q", h.Get("X-Api-Key"), h.Get("Authorization"))
	}

	// Negative control: the SDK's default client does send it.
	def := anthropic.NewClient(option.WithBaseURL(s.URL), option.WithMaxRetries(0))
	st := def.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "m", MaxTokens: 1,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	for st.Next() {
	}
	st.Close()
	if got := s.requests()[1].header.Get("X-Api-Key"); got != "sk-ant-from-env" {
		t.Errorf("negative control: the default SDK client sent x-api-key %q", got)
	}
}

func TestAnthropicCancelled(t *testing.T) {
	s := newReplay(t, reply{file: "anthropic_max_tokens.sse"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := anthropicFor(s).Stream(ctx, userHi, &collect{})
	var se *StreamError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &se) || se.Retryable {
		t.Errorf("err = %#v (%v)", err, err)
	}
}

// A hostile endpoint's block index must not crash or exhaust the front end. No negative control
// runs here: without the bound, index -1 panics the test binary and 2e9 allocates gigabytes.
func TestBlockIndexOutOfRange(t *testing.T) {
	s := newReplay(t, reply{file: "anthropic_bad_index.sse"})
	if _, err := anthropicFor(s).Stream(context.Background(), userHi, &collect{}); err == nil ||
		!strings.Contains(err.Error(), "out of range") {
		t.Errorf("anthropic: %v", err)
	}
	s = newReplay(t, reply{file: "openai_bad_index.sse"})
	if _, err := openaiFor(s).Stream(context.Background(), userHi, &collect{}); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("openai: %v", err)
	}
}

func TestInvalidToolInputInHistoryIsNotRetried(t *testing.T) {
	req := Request{Messages: []Message{
		{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "x"}}},
		{Role: RoleAssistant, Content: []Block{{Type: BlockToolUse, ToolUseID: "t1", Name: "bash", Input: json.RawMessage(`{"command":`)}}},
	}}
	for name, c := range map[string]func(*replayServer) Client{"anthropic": anthropicFor, "openai": openaiFor} {
		s := newReplay(t)
		_, err := c(s).Stream(context.Background(), req, &collect{})
		var se *StreamError
		if !errors.As(err, &se) || se.Retryable || !strings.Contains(err.Error(), "t1") || len(s.requests()) != 0 {
			t.Errorf("%s: %#v, %d requests", name, err, len(s.requests()))
		}
	}
}
