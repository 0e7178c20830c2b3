package model

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestFakeClientScriptAndRecording(t *testing.T) {
	boom := &StreamError{Err: errors.New("boom"), Retryable: true}
	f := NewFakeClient(
		ToolStep("reading", ToolCall{ID: "t1", Name: "read_file", Input: `{"path":"a"}`}),
		Step{Err: boom},
		Step{Deltas: []FakeDelta{{DeltaThinking, "hm"}, {DeltaText, "do"}, {DeltaText, "ne"}}, Response: TextStep("done").Response},
	)
	h := &collect{}
	req := Request{Messages: []Message{{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "go"}}}}}
	resp, err := f.Stream(context.Background(), req, h)
	if err != nil || resp.StopReason != StopToolUse || resp.Message.Content[1].Name != "read_file" || strings.Join(h.text, "") != "reading" {
		t.Fatalf("step 1: %+v %v %q", resp, err, h.text)
	}
	// The caller changes its history after the call: the record must not change with it.
	req.Messages[0].Content[0].Text = "changed"
	req.Messages = append(req.Messages, resp.Message, Message{Role: RoleUser, Content: []Block{{Type: BlockToolResult,
		ToolUseID: "t1", Text: "denied by the user", IsError: true}}})
	if _, err := f.Stream(context.Background(), req, h); err != boom {
		t.Fatalf("step 2: %v", err)
	}
	h = &collect{}
	resp, err = f.Stream(context.Background(), req, h)
	if err != nil || resp.Message.Content[0].Text != "done" || strings.Join(h.text, "|") != "do|ne" || strings.Join(h.thinking, "") != "hm" {
		t.Fatalf("step 3: %+v %v %+v", resp, err, h)
	}
	if _, err := f.Stream(context.Background(), req, h); err == nil || !strings.Contains(err.Error(),
		"no scripted answer left for request 4") {
		t.Errorf("past the script: %v", err)
	}
	reqs := f.Requests()
	if len(reqs) != 4 || reqs[0].Messages[0].Content[0].Text != "go" {
		t.Fatalf("recorded %d requests; first = %+v", len(reqs), reqs[0])
	}
	if got := reqs[1].LastUserText(); got != "denied by the user" {
		t.Errorf("the model heard %q", got)
	}
}

func TestFakeClientWaitEndsOnCancel(t *testing.T) {
	wait := make(chan struct{})
	f := NewFakeClient(Step{Deltas: []FakeDelta{{DeltaText, "par"}}, Wait: wait, Response: TextStep("partial").Response})
	ctx, cancel := context.WithCancel(context.Background())
	h := signalOnDelta{make(chan struct{}, 1)}
	done := make(chan error)
	go func() {
		_, err := f.Stream(ctx, Request{}, h)
		done <- err
	}()
	<-h.ch // the step has streamed and now waits
	cancel()
	err := <-done
	var se *StreamError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &se) || !se.Started {
		t.Errorf("err = %#v", err)
	}
}

// A step's Answer is the answer, computed from the request it gets; the request is recorded as for any step.
func TestFakeClientAnswerSeesTheRequest(t *testing.T) {
	f := NewFakeClient(Step{Answer: func(_ context.Context, req Request, _ Handler) (*Response, error) {
		return TextStep("heard " + req.LastUserText()).Response, nil
	}})
	req := Request{Messages: []Message{{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "ping"}}}}}
	resp, err := f.Stream(context.Background(), req, signalOnDelta{make(chan struct{}, 1)})
	if err != nil || resp.Message.Content[0].Text != "heard ping" {
		t.Fatalf("Stream = %+v, %v", resp, err)
	}
	if rs := f.Requests(); len(rs) != 1 || rs[0].LastUserText() != "ping" || f.Remaining() != 0 {
		t.Errorf("requests %+v, %d steps left", rs, f.Remaining())
	}
}

func TestUsageHelpers(t *testing.T) {
	u := Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 4}.Add(Usage{InputTokens: 1, OutputTokens: 2, CacheWriteTokens: 3})
	if u != (Usage{InputTokens: 11, OutputTokens: 7, CacheReadTokens: 4, CacheWriteTokens: 3}) || u.Total() != 18 {
		t.Errorf("usage = %+v total %d", u, u.Total())
	}
}

func TestNewPicksProvider(t *testing.T) {
	if c, err := New(ProviderConfig{Type: TypeAnthropic, Model: "m"}); err != nil || c == nil {
		t.Errorf("anthropic: %v", err)
	}
	if _, ok := mustNew(t, ProviderConfig{Type: TypeOpenAI, Model: "m"}).(*openaiClient); !ok {
		t.Errorf("openai: wrong client")
	}
	if _, err := New(ProviderConfig{Type: "gemini", Model: "m"}); err == nil || !strings.Contains(err.Error(), `"gemini"`) {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := New(ProviderConfig{Type: TypeOpenAI}); err == nil {
		t.Errorf("no model: no error")
	}
}

func mustNew(t *testing.T, cfg ProviderConfig) Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type signalOnDelta struct{ ch chan struct{} }

func (s signalOnDelta) Delta(DeltaKind, string) {
	select {
	case s.ch <- struct{}{}:
	default:
	}
}
