package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/garuda-dev/garuda/frontend/model"
)

// runTools runs the calls of one step and appends their results to History, one tool_result per call in the order
// of the calls. Consecutive read-only calls run in parallel; the others one at a time, in order. It returns the name
// of a tool repeated RepeatStop times, in which case nothing of the step ran.
func (t *turnLoop) runTools(ctx context.Context, calls []ToolCall) (repeated string) {
	for i := range calls {
		t.emit(Event{Type: EventToolCall, Call: &calls[i]})
	}
	counts := t.repeats.step(calls)
	warn := ""
	for i, n := range counts {
		if n >= t.lim.RepeatStop {
			repeated = calls[i].Name
			break
		}
		if n >= t.lim.RepeatWarn && warn == "" {
			warn = fmt.Sprintf("Garuda: you have called %s with the same input %d times in your last %d steps; "+
				"it will give the same result. Use what you have, try something different, or finish. At %d "+
				"times the turn stops.", calls[i].Name, n, t.lim.RepeatWindow, t.lim.RepeatStop)
			t.notice("the model called %s with the same input %d times; it was told to change course.", calls[i].Name, n)
		}
	}
	results := make([]*ToolResult, len(calls))
	if repeated != "" {
		// Against a model stuck in a loop of identical calls: the call is not made again and the turn stops.
		t.closeUnrun(calls, results, StatusFailed,
			fmt.Sprintf("Not run: %s was called with the same input %d times; the turn stopped.", repeated, t.lim.RepeatStop))
		return repeated
	}
	for i := 0; i < len(calls) && ctx.Err() == nil; {
		j := i + 1
		if t.readOnly(calls[i].Name) {
			for j < len(calls) && t.readOnly(calls[j].Name) {
				j++
			}
		}
		if j-i == 1 {
			results[i] = t.runOne(ctx, calls[i])
		} else {
			var wg sync.WaitGroup
			for k := i; k < j; k++ {
				wg.Go(func() { results[k] = t.runOne(ctx, calls[k]) })
			}
			wg.Wait()
		}
		i = j
	}
	var extra []model.Block
	if warn != "" {
		extra = append(extra, model.Block{Type: model.BlockText, Text: warn})
	}
	t.closeUnrun(calls, results, StatusCancelled, "Cancelled: the user stopped the turn before this call ran.", extra...)
	return ""
}

func (t *turnLoop) readOnly(name string) bool { return t.s.Tools != nil && t.s.Tools.ReadOnly(name) }

// closeUnrun gives every call without a result the given one, emits it, and appends the tool_result message (then
// extra blocks). It keeps History valid: every tool_use is answered, even when the call never ran.
func (t *turnLoop) closeUnrun(calls []ToolCall, results []*ToolResult, status Status, content string, extra ...model.Block) {
	if len(calls) == 0 {
		return
	}
	if results == nil {
		results = make([]*ToolResult, len(calls))
	}
	msg := model.Message{Role: model.RoleUser, Content: make([]model.Block, 0, len(calls)+1)}
	for i := range calls {
		r := results[i]
		if r == nil {
			r = &ToolResult{CallID: calls[i].ID, Status: status, Content: content}
			t.emit(Event{Type: EventToolResult, Call: &calls[i], Result: r})
		}
		msg.Content = append(msg.Content, resultBlock(calls[i], *r))
	}
	msg.Content = append(msg.Content, extra...)
	t.s.appendMessage(msg)
}

// resultBlock is what the model hears of a result: a denied, failed or cancelled call is an error with its reason.
func resultBlock(c ToolCall, r ToolResult) model.Block {
	b := model.Block{Type: model.BlockToolResult, ToolUseID: c.ID, Text: r.Content, IsError: r.Status != StatusCompleted}
	if b.Text == "" {
		switch r.Status {
		case StatusCompleted:
			b.Text = "(no output)"
		case StatusDenied:
			b.Text = "Denied."
		case StatusCancelled:
			b.Text = "Cancelled."
		default:
			b.Text = "The call failed."
		}
	}
	if r.Status == StatusDenied {
		// Against a model that reaches a refused result by another route: it is told plainly not to.
		b.Text = "Denied (the user or the permission policy refused this call; do not try it again another way): " + b.Text
	}
	return b
}

// runOne runs a call and emits its progress and result. After ctx is cancelled it waits Conversation.Settle for the
// call to report, then ends it as cancelled itself, so that a stuck call cannot hold the turn open.
func (t *turnLoop) runOne(ctx context.Context, c ToolCall) *ToolResult {
	over := false // progress that arrives after the call ended is dropped; guarded by t.mu
	progress := func(line string) {
		t.mu.Lock()
		defer t.mu.Unlock()
		switch {
		case over:
		case line == "":
			t.emitFn(Event{Type: EventToolStarted, Call: &c})
		default:
			t.emitFn(Event{Type: EventToolProgress, Call: &c, Text: line})
		}
	}
	done := make(chan ToolResult, 1)
	if t.s.Tools == nil {
		done <- ToolResult{Status: StatusFailed, Content: "No tools are available in this session."}
	} else {
		go func() { done <- t.s.Tools.Run(ctx, c, progress) }()
	}
	var r ToolResult
	select {
	case r = <-done:
	case <-ctx.Done():
		settle := t.s.Settle
		if settle == 0 {
			settle = defaultSettle
		}
		tm := time.NewTimer(settle)
		select {
		case r = <-done:
		case <-tm.C:
			r = ToolResult{Status: StatusCancelled, Content: "Cancelled."}
		}
		tm.Stop()
	}
	t.mu.Lock()
	over = true
	t.mu.Unlock()
	r.CallID = c.ID
	switch r.Status {
	case StatusCompleted, StatusFailed, StatusDenied, StatusCancelled:
	default:
		r.Content = fmt.Sprintf("The call ended with an unknown status %q. %s", r.Status, r.Content)
		r.Status = StatusFailed
	}
	t.emit(Event{Type: EventToolResult, Call: &c, Result: &r})
	return &r
}

// repeats counts identical calls (the same tool and the same normalised input) over the last steps of a turn.
type repeats struct {
	window int
	steps  [][]string
}

func newRepeats(l Limits) *repeats { return &repeats{window: l.RepeatWindow} }

// step adds the calls of one step and returns, for each, how often it occurs in the window up to and including it.
func (r *repeats) step(calls []ToolCall) []int {
	keys := make([]string, len(calls))
	for i, c := range calls {
		keys[i] = c.Name + "\x00" + normalise(c.Input)
	}
	r.steps = append(r.steps, keys)
	if len(r.steps) > r.window {
		r.steps = r.steps[len(r.steps)-r.window:]
	}
	counts := make([]int, len(keys))
	for i, k := range keys {
		for _, st := range r.steps[:len(r.steps)-1] {
			for _, o := range st {
				if o == k {
					counts[i]++
				}
			}
		}
		for _, o := range keys[:i+1] {
			if o == k {
				counts[i]++
			}
		}
	}
	return counts
}

// normalise makes equal JSON values equal strings: no spaces, object keys sorted, numbers as written.
func normalise(in json.RawMessage) string {
	d := json.NewDecoder(bytes.NewReader(in))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return string(in)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(in)
	}
	return string(out)
}
