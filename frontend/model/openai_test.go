package model

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func openaiFor(s *replayServer) Client {
	return NewOpenAI(ProviderConfig{Type: TypeOpenAI, BaseURL: s.URL + "/v1", APIKey: "sk-test", Model: "gpt-5"})
}

func TestOpenAIParallelToolCallsByIndex(t *testing.T) {
	s := newReplay(t, reply{file: "openai_parallel_tools.sse"})
	h := &collect{}
	resp := streamOK(t, openaiFor(s), h)
	want := []Block{
		{Type: BlockText, Text: "Checking both."},
		{Type: BlockToolUse, ToolUseID: "call_abc", Name: "read_file", Input: json.RawMessage(`{"path": "go.mod"}`)},
		{Type: BlockToolUse, ToolUseID: "call_def", Name: "grep", Input: json.RawMessage(`{"pattern":"TODO"}`)},
	}
	if !reflect.DeepEqual(resp.Message.Content, want) {
		t.Errorf("content = %+v", resp.Message.Content)
	}
	if resp.StopReason != StopToolUse {
		t.Errorf("stop = %q", resp.StopReason)
	}
	if u := resp.Usage; u.InputTokens != 812 || u.OutputTokens != 95 || u.CacheReadTokens != 512 {
		t.Errorf("usage = %+v", u)
	}
	if strings.Join(h.text, "") != "Checking both." {
		t.Errorf("deltas = %q", h.text)
	}
	r := s.requests()[0]
	if r.path != "/v1/chat/completions" || r.header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("request %s %v", r.path, r.header)
	}
	var body struct {
		Stream        bool `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		MaxTokens int `json:"max_tokens"`
		Messages  []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	if !body.Stream || !body.StreamOptions.IncludeUsage || body.MaxTokens != DefaultMaxOutputTokens ||
		len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[1].Content != "hi" {
		t.Errorf("body = %s", r.body)
	}
}

func TestOpenAIReasoningContentIsThinking(t *testing.T) {
	s := newReplay(t, reply{file: "openai_reasoning.sse"})
	h := &collect{}
	resp := streamOK(t, openaiFor(s), h)
	if got := strings.Join(h.thinking, "|"); got != "Two plus |two is four." {
		t.Errorf("thinking deltas = %q", got)
	}
	want := []Block{{Type: BlockThinking, Text: "Two plus two is four."}, {Type: BlockText, Text: "It is 4."}}
	if !reflect.DeepEqual(resp.Message.Content, want) || resp.StopReason != StopEndTurn || resp.Usage.OutputTokens != 12 {
		t.Errorf("resp = %+v", resp)
	}
}

func TestOpenAILengthIsMaxTokens(t *testing.T) {
	s := newReplay(t, reply{file: "openai_length.sse"})
	resp, err := openaiFor(s).Stream(context.Background(), userHi, &collect{})
	if err != nil || resp.StopReason != StopMaxTokens {
		t.Fatalf("resp %+v err %v", resp, err)
	}
}

// TestOpenAIErrors: the provider's refusals. An error event mid-stream is TestErrorEventMidStream's.
func TestOpenAIErrors(t *testing.T) {
	h := &collect{}
	var se *StreamError
	s := newReplay(t, reply{status: 401, file: "openai_401.json"})
	_, err := openaiFor(s).Stream(context.Background(), userHi, h)
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "Incorrect API key") || len(s.requests()) != 1 {
		t.Errorf("401: %v (%d requests)", err, len(s.requests()))
	}

	s = newReplay(t, reply{status: 400, file: "openai_context.json"})
	if _, err = openaiFor(s).Stream(context.Background(), userHi, h); !errors.Is(err, ErrContextTooLong) {
		t.Errorf("context: %v", err)
	}

	// The SDK does not retry: the agent loop does.
	s = newReplay(t, reply{status: 500, file: "openai_429.json"}, reply{file: "openai_length.sse"})
	if _, err = openaiFor(s).Stream(context.Background(), userHi, h); !errors.As(err, &se) || !se.Retryable || len(s.requests()) != 1 {
		t.Errorf("500: %v (%d requests)", err, len(s.requests()))
	}
	s = newReplay(t, reply{status: 429, file: "openai_429.json"})
	_, err = openaiFor(s).Stream(context.Background(), userHi, h)
	if !errors.As(err, &se) || !se.Retryable || se.Started {
		t.Errorf("429: %#v", err)
	}
}

func TestOpenAIRequestFromHistory(t *testing.T) {
	s := newReplay(t, reply{file: "openai_length.sse"})
	req := Request{
		System: "sys",
		Tools: []ToolSpec{{Name: "read_file", Description: "Read",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}},
		Messages: []Message{
			{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "read a and b"}}},
			{Role: RoleAssistant, Content: []Block{{Type: BlockThinking, Text: "hmm"}, {Type: BlockText, Text: "ok"},
				{Type: BlockToolUse, ToolUseID: "c1", Name: "read_file", Input: json.RawMessage(`{"path":"a"}`)},
				{Type: BlockToolUse, ToolUseID: "c2", Name: "read_file", Input: json.RawMessage(`{"path":"b"}`)}}},
			{Role: RoleUser, Content: []Block{{Type: BlockToolResult, ToolUseID: "c1", Text: "A"}, {Type: BlockToolResult,
				ToolUseID: "c2", Text: "denied", IsError: true}, {Type: BlockText, Text: "go on"}}},
		},
	}
	if _, err := openaiFor(s).Stream(context.Background(), req, &collect{}); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Tools    []map[string]any `json:"tools"`
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name, Arguments string
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(s.requests()[0].body, &body); err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range body.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,tool,user" {
		t.Fatalf("roles = %v (%s)", roles, s.requests()[0].body)
	}
	a := body.Messages[2]
	if a.Content != "ok" || len(a.ToolCalls) != 2 || a.ToolCalls[1].ID != "c2" || a.ToolCalls[1].Function.Arguments != `{"path":"b"}` {
		t.Errorf("assistant = %+v", a)
	}
	if body.Messages[4].ToolCallID != "c2" || body.Messages[4].Content != "Error: denied" || body.Messages[5].Content != "go on" {
		t.Errorf("tool results = %+v", body.Messages[3:])
	}
	if len(body.Tools) != 1 || body.Tools[0]["type"] != "function" {
		t.Errorf("tools = %v", body.Tools)
	}
}

// Settings of the OpenAI SDK's environment (organization, project, headers, key) must not
// travel to whatever base URL the user configured.
func TestOpenAIIgnoresEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_ORG_ID", "org-secret")
	s := newReplay(t, reply{file: "openai_length.sse"}, reply{file: "openai_length.sse"})
	c := NewOpenAI(ProviderConfig{Type: TypeOpenAI, BaseURL: s.URL + "/v1", Model: "llama3"})
	streamOK(t, c, &collect{})
	h := s.requests()[0].header
	if h.Get("Authorization") != "" || h.Get("OpenAI-Organization") != "" {
		t.Errorf("environment leaked: authorization %q organization %q", h.Get("Authorization"), h.Get("OpenAI-Organization"))
	}

	// Negative control: the SDK's default client sends both.
	def := openai.NewClient(option.WithBaseURL(s.URL+"/v1"), option.WithMaxRetries(0))
	st := def.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "llama3",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	for st.Next() {
	}
	st.Close()
	h = s.requests()[1].header
	if h.Get("Authorization") != "Bearer sk-from-env" || h.Get("OpenAI-Organization") != "org-secret" {
		t.Errorf("negative control: default client sent authorization %q organization %q", h.Get("Authorization"), h.Get("OpenAI-Organization"))
	}
}

func TestOpenAIOfficialEndpointUsesMaxCompletionTokens(t *testing.T) {
	c := NewOpenAI(ProviderConfig{Type: TypeOpenAI, Model: "gpt-5", MaxOutputTokens: 1000}).(*openaiClient)
	p, err := c.params(userHi)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"max_completion_tokens":1000`) || strings.Contains(string(b), `"max_tokens"`) {
		t.Errorf("params = %s", b)
	}
}

// The editor's thought level reaches an OpenAI-compatible server as reasoning_effort, and only when chosen.
func TestOpenAIReasoningEffort(t *testing.T) {
	c := NewOpenAI(ProviderConfig{Type: TypeOpenAI, Model: "gpt-5", MaxOutputTokens: 1000}).(*openaiClient)
	req := userHi
	req.ReasoningEffort = "high"
	for effort, want := range map[string]string{"high": `"reasoning_effort":"high"`, "": ""} {
		req.ReasoningEffort = effort
		p, err := c.params(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(p)
		sent := strings.Contains(string(b), `"reasoning_effort"`)
		if sent != (want != "") || (want != "" && !strings.Contains(string(b), want)) {
			t.Errorf("effort %q: params = %s", effort, b)
		}
	}
}
