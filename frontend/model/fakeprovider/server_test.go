package fakeprovider_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/frontend/model/fakeprovider"
)

type deltas struct{ text, thinking strings.Builder }

func (d *deltas) Delta(k model.DeltaKind, s string) {
	if k == model.DeltaText {
		d.text.WriteString(s)
	} else {
		d.thinking.WriteString(s)
	}
}

var hi = model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText, Text: "hi"}}}}}

func script() []fakeprovider.Turn {
	return []fakeprovider.Turn{
		{Thinking: "let me look around first", Text: "I will read two files.", ChunkSize: 5,
			ToolCalls: []fakeprovider.ToolCall{{ID: "c1", Name: "read_file", Input: `{"path":"a.txt"}`}, {ID: "c2",
				Name: "read_file", Input: `{"path":"b.txt"}`}}},
		{Status: 529, Message: "Overloaded"},
		{Text: "All done."},
		{Text: "cut", ErrorEvent: "overloaded_error"},
		{Status: 401, Message: "invalid x-api-key"},
		{Status: 400, Message: "messages.0: bad block"},
		{Status: 404, Message: "model: nope"},
		{Status: 429, Message: "slow down", RetryAfter: "3"},
		{Text: "half", Cut: true},
	}
}

func run(t *testing.T, c model.Client, s *fakeprovider.Server) {
	t.Helper()
	d := &deltas{}
	resp, err := c.Stream(context.Background(), hi, d)
	if err != nil {
		t.Fatal(err)
	}
	if d.text.String() != "I will read two files." || d.thinking.String() != "let me look around first" {
		t.Errorf("deltas: text %q thinking %q", d.text.String(), d.thinking.String())
	}
	var calls []string
	for _, b := range resp.Message.Content {
		if b.Type == model.BlockToolUse {
			calls = append(calls, b.ToolUseID+":"+string(b.Input))
		}
	}
	if strings.Join(calls, " ") != `c1:{"path":"a.txt"} c2:{"path":"b.txt"}` || resp.StopReason != model.StopToolUse ||
		resp.Usage.InputTokens == 0 {
		t.Errorf("calls %q stop %q usage %+v", calls, resp.StopReason, resp.Usage)
	}

	// The SDK does not retry (the agent loop does): each fault comes back from its one request.
	_, err = c.Stream(context.Background(), hi, &deltas{})
	var se *model.StreamError
	if !errors.As(err, &se) || se.Started || !se.Retryable || se.Status != 529 || se.RetryAfter != time.Millisecond {
		t.Errorf("529: %#v", err)
	}
	resp, err = c.Stream(context.Background(), hi, &deltas{})
	if err != nil || resp.Message.Content[0].Text != "All done." || resp.StopReason != model.StopEndTurn {
		t.Fatalf("after the 529: %+v %v", resp, err)
	}
	_, err = c.Stream(context.Background(), hi, &deltas{})
	if !errors.As(err, &se) || !se.Started || !se.Retryable {
		t.Errorf("error event: %#v", err)
	}
	if _, err = c.Stream(context.Background(), hi, &deltas{}); !errors.Is(err, model.ErrAuth) {
		t.Errorf("401: %v", err)
	}
	_, err = c.Stream(context.Background(), hi, &deltas{})
	if !errors.As(err, &se) || se.Retryable || se.Status != 400 || !strings.Contains(err.Error(), "messages.0: bad block") {
		t.Errorf("400: %#v", err)
	}
	_, err = c.Stream(context.Background(), hi, &deltas{})
	if !errors.Is(err, model.ErrNotFound) || !strings.Contains(err.Error(), "model: nope") {
		t.Errorf("404: %v", err)
	}
	_, err = c.Stream(context.Background(), hi, &deltas{})
	if !errors.As(err, &se) || !se.Retryable || se.Status != 429 || se.RetryAfter != 3*time.Second {
		t.Errorf("429: %#v", err)
	}
	_, err = c.Stream(context.Background(), hi, &deltas{})
	if !errors.As(err, &se) || !se.Retryable {
		t.Errorf("cut: %#v", err)
	}
	if n := len(s.Requests()); n != 9 {
		t.Errorf("%d requests, want 9: one per fault", n)
	}
	if !s.LastBodyContains(`"hi"`) {
		t.Errorf("last body = %q", s.Bodies())
	}
}

func TestAnthropicEndToEnd(t *testing.T) {
	s, err := fakeprovider.Serve("", script())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run(t, model.NewAnthropic(model.ProviderConfig{BaseURL: s.URL, APIKey: "k", Model: "claude-sonnet-4-5"}), s)
	if got := s.Requests()[0].Header.Get("X-Api-Key"); got != "k" {
		t.Errorf("x-api-key = %q", got)
	}
}

func TestOpenAIEndToEnd(t *testing.T) {
	s, err := fakeprovider.Serve("127.0.0.1:0", script())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run(t, model.NewOpenAI(model.ProviderConfig{BaseURL: s.URL + "/v1", APIKey: "k", Model: "gpt-5"}), s)
}

func TestHangEndsWhenTheClientCancels(t *testing.T) {
	s, err := fakeprovider.Serve("", []fakeprovider.Turn{{Text: "working", Hang: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	c := model.NewAnthropic(model.ProviderConfig{BaseURL: s.URL, Model: "m"})
	h := &cancelOnText{cancel: cancel}
	_, err = c.Stream(ctx, hi, h)
	var se *model.StreamError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &se) || !se.Started {
		t.Errorf("err = %#v", err)
	}
}

type cancelOnText struct{ cancel func() }

func (c *cancelOnText) Delta(model.DeltaKind, string) { c.cancel() }

func TestLoadScript(t *testing.T) {
	path := t.TempDir() + "/script.json"
	if err := os.WriteFile(path, []byte(`[{"text": "hi", "tool_calls": [{"id": "c1", "name": "bash", "input": "{}"}]}, `+
		`{"status": 401}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	turns, err := fakeprovider.LoadScript(path)
	if err != nil || len(turns) != 2 || turns[0].ToolCalls[0].Name != "bash" || turns[1].Status != 401 {
		t.Errorf("turns %+v err %v", turns, err)
	}
	if err := os.WriteFile(path, []byte(`[{"txet": "hi"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := fakeprovider.LoadScript(path); err == nil || !strings.Contains(err.Error(), "txet") {
		t.Errorf("unknown field: %v", err)
	}
}
