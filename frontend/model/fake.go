package model

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// FakeDelta is one streamed piece of a scripted answer.
type FakeDelta struct {
	Kind DeltaKind
	Text string
}

// Step is one scripted answer of a FakeClient: either Response (streamed through the Handler,
// then returned) or Err (returned as is).
type Step struct {
	// Deltas are streamed to the Handler before the Response is returned. When nil, each text
	// and thinking block of the Response is streamed as one delta.
	Deltas   []FakeDelta
	Response *Response
	Err      error
	// Wait, when not nil, holds the step after its deltas until it is closed or the request's
	// context ends (then the context's error is returned): for cancel tests.
	Wait <-chan struct{}
	// Answer, when not nil, is the step: it gets the request and the Handler and returns the answer,
	// and the fields above are not used. For an answer that depends on the request (the usage a
	// provider would count), a stream that does more than deltas, or checks of the request itself.
	Answer func(ctx context.Context, req Request, h Handler) (*Response, error)
}

// Script is the list of answers a FakeClient gives, in order.
type Script []Step

// FakeClient is a scripted Client for tests. It records every Request it gets, so tests can
// assert what the model heard (for example a denial).
type FakeClient struct {
	mu       sync.Mutex
	script   Script
	requests []Request
}

// NewFakeClient returns a FakeClient that answers with the steps in order.
func NewFakeClient(steps ...Step) *FakeClient {
	return &FakeClient{script: slices.Clone(Script(steps))}
}

// Push appends steps to the script.
func (f *FakeClient) Push(steps ...Step) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = append(f.script, steps...)
}

// Requests returns copies of the requests received so far.
func (f *FakeClient) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// Remaining is the number of steps not yet used.
func (f *FakeClient) Remaining() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.script)
}

// Stream implements Client.
func (f *FakeClient) Stream(ctx context.Context, req Request, h Handler) (*Response, error) {
	f.mu.Lock()
	f.requests = append(f.requests, cloneRequest(req))
	n := len(f.requests)
	if len(f.script) == 0 {
		f.mu.Unlock()
		return nil, &StreamError{Err: fmt.Errorf("fake model: no scripted answer left for request %d", n)}
	}
	step := f.script[0]
	f.script = f.script[1:]
	f.mu.Unlock()

	if err := ctx.Err(); err != nil {
		return nil, &StreamError{Err: err}
	}
	if step.Answer != nil {
		return step.Answer(ctx, req, h)
	}
	deltas := step.Deltas
	if deltas == nil && step.Response != nil {
		for _, b := range step.Response.Message.Content {
			switch b.Type {
			case BlockText:
				deltas = append(deltas, FakeDelta{DeltaText, b.Text})
			case BlockThinking:
				deltas = append(deltas, FakeDelta{DeltaThinking, b.Text})
			}
		}
	}
	for _, d := range deltas {
		h.Delta(d.Kind, d.Text)
	}
	if step.Wait != nil {
		select {
		case <-step.Wait:
		case <-ctx.Done():
			return nil, &StreamError{Err: ctx.Err(), Started: len(deltas) > 0}
		}
	}
	if step.Err != nil {
		return nil, step.Err
	}
	if step.Response == nil {
		return nil, &StreamError{Err: fmt.Errorf("fake model: step %d has neither a response nor an error", n)}
	}
	resp := *step.Response
	resp.Message.Content = slices.Clone(resp.Message.Content)
	if resp.Message.Role == "" {
		resp.Message.Role = RoleAssistant
	}
	return &resp, nil
}

// cloneRequest copies the parts of a request that a caller may change after the call.
func cloneRequest(req Request) Request {
	req.Messages = slices.Clone(req.Messages)
	for i := range req.Messages {
		req.Messages[i].Content = slices.Clone(req.Messages[i].Content)
	}
	req.Tools = slices.Clone(req.Tools)
	return req
}

// TextStep is a step whose answer is the text, ending the turn.
func TextStep(text string) Step {
	return Step{Response: &Response{
		Message:    Message{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: text}}},
		StopReason: StopEndTurn,
	}}
}

// ToolCall is one tool call of a scripted answer.
type ToolCall struct {
	ID, Name string
	Input    string // JSON
}

// ToolStep is a step whose answer is an optional text followed by the tool calls.
func ToolStep(text string, calls ...ToolCall) Step {
	var content []Block
	if text != "" {
		content = append(content, Block{Type: BlockText, Text: text})
	}
	for _, c := range calls {
		content = append(content, Block{Type: BlockToolUse, ToolUseID: c.ID, Name: c.Name, Input: json.RawMessage(c.Input)})
	}
	return Step{Response: &Response{
		Message:    Message{Role: RoleAssistant, Content: content},
		StopReason: StopToolUse,
	}}
}

// LastUserText returns the text of the last user message of the request, tool results
// included: what the model heard last.
func (r Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role != RoleUser {
			continue
		}
		var s string
		for _, b := range r.Messages[i].Content {
			if b.Type == BlockText || b.Type == BlockToolResult {
				if s != "" {
					s += "\n"
				}
				s += b.Text
			}
		}
		return s
	}
	return ""
}
