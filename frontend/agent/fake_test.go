package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/garuda-dev/garuda/frontend/model"
)

// step is one scripted model answer, computed from the request.
type step func(ctx context.Context, req model.Request, h model.Handler) (*model.Response, error)

// fakeModel is model.FakeClient answering from a script of steps. It checks that every request it gets has a valid
// history (each tool_use answered by a tool_result in the next message), and fails the test on a request the script
// has no answer for.
type fakeModel struct {
	*model.FakeClient
	t *testing.T
}

func newFake(t *testing.T, steps ...step) *fakeModel {
	f := &fakeModel{FakeClient: model.NewFakeClient(), t: t}
	for _, s := range steps {
		f.Push(model.Step{Answer: s})
	}
	return f
}

func (f *fakeModel) Stream(ctx context.Context, req model.Request, h model.Handler) (*model.Response, error) {
	n := len(f.Requests()) + 1
	if f.Remaining() == 0 {
		f.t.Errorf("request %d: the script has no more answers", n)
	}
	if err := validHistory(req.Messages); err != nil {
		f.t.Errorf("request %d: %v", n, err)
	}
	return f.FakeClient.Stream(ctx, req, h)
}

// usageOf pretends the provider counted one token per 4 bytes, as the estimate does.
func usageOf(req model.Request, out model.Message) model.Usage {
	return model.Usage{InputTokens: (&Conversation{}).estimate(req), OutputTokens: messagesBytes([]model.Message{out}) / 4}
}

func answerText(text string) step {
	return func(_ context.Context, req model.Request, h model.Handler) (*model.Response, error) {
		h.Delta(model.DeltaText, text)
		m := model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: model.BlockText, Text: text}}}
		return &model.Response{Message: m, StopReason: model.StopEndTurn, Usage: usageOf(req, m)}, nil
	}
}

func answerStop(reason model.StopReason, blocks ...model.Block) step {
	return func(_ context.Context, req model.Request, _ model.Handler) (*model.Response, error) {
		m := model.Message{Role: model.RoleAssistant, Content: blocks}
		return &model.Response{Message: m, StopReason: reason, Usage: usageOf(req, m)}, nil
	}
}

func use(id, name, input string) model.Block {
	return model.Block{Type: model.BlockToolUse, ToolUseID: id, Name: name, Input: json.RawMessage(input)}
}

func answerCalls(calls ...model.Block) step { return answerStop(model.StopToolUse, calls...) }

func fail(err error) step {
	return func(context.Context, model.Request, model.Handler) (*model.Response, error) { return nil, err }
}

// validHistory checks what providers require of a conversation: every tool_use is answered, in the next message,
// by a tool_result with its id, and no tool_result answers nothing.
func validHistory(ms []model.Message) error {
	for i, m := range ms {
		var want []string
		for _, b := range m.Content {
			if b.Type == model.BlockToolUse {
				if m.Role != model.RoleAssistant {
					return fmt.Errorf("message %d: tool_use in a %s message", i, m.Role)
				}
				want = append(want, b.ToolUseID)
			}
		}
		var got []string
		if i+1 < len(ms) {
			for _, b := range ms[i+1].Content {
				if b.Type == model.BlockToolResult {
					got = append(got, b.ToolUseID)
				}
			}
		}
		if len(want) > 0 && strings.Join(want, ",") != strings.Join(got, ",") {
			return fmt.Errorf("message %d calls %v but message %d answers %v", i, want, i+1, got)
		}
		if len(want) == 0 && len(got) > 0 {
			return fmt.Errorf("message %d answers %v, calls nobody made", i+1, got)
		}
	}
	return nil
}

// fakeTools runs calls with run; ro names the read-only tools.
type fakeTools struct {
	ro  map[string]bool
	run func(ctx context.Context, c ToolCall, progress func(string)) ToolResult
	mu  sync.Mutex
	ran []string // call ids, in the order they started
}

func (f *fakeTools) Specs() []model.ToolSpec   { return specs }
func (f *fakeTools) ReadOnly(name string) bool { return f.ro[name] }
func (f *fakeTools) Run(ctx context.Context, c ToolCall, progress func(string)) ToolResult {
	f.mu.Lock()
	f.ran = append(f.ran, c.ID)
	f.mu.Unlock()
	if f.run == nil {
		return ToolResult{Status: StatusCompleted, Content: "ok " + c.ID}
	}
	return f.run(ctx, c, progress)
}

func (f *fakeTools) started() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ran...)
}

// Tool names of the tests: the loop treats every name alike (the front end's table is package tools).
const (
	ToolReadFile  = "read_file"
	ToolWriteFile = "write_file"
	ToolEditFile  = "edit_file"
	ToolGlob      = "glob"
	ToolGrep      = "grep"
	ToolBash      = "bash"
)

var readOnlyTools = map[string]bool{ToolReadFile: true, ToolGlob: true, ToolGrep: true}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) emit(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) of(typ EventType) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func newSession(m model.Client, tools Tools) *Conversation {
	return &Conversation{Model: m, Tools: tools, System: func() string { return "system" }, Limits: Limits{RetryBase: 1}}
}

// lastResults returns the tool_result blocks of the last message of req.
func lastResults(req model.Request) []model.Block {
	return req.Messages[len(req.Messages)-1].Content
}
