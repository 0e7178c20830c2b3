package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/frontend/model"
)

func TestTurnEndsDone(t *testing.T) {
	f := newFake(t, answerText("hello"))
	s := newSession(f, &fakeTools{})
	var rec recorder
	stop, err := s.RunTurn(t.Context(), "hi", rec.emit)
	if err != nil || stop != StopDone {
		t.Fatalf("RunTurn = %q, %v; want done", stop, err)
	}
	if d := rec.of(EventTextDelta); len(d) != 1 || d[0].Text != "hello" {
		t.Errorf("text deltas = %+v", d)
	}
	if len(rec.of(EventStepEnd)) != 1 {
		t.Errorf("want one step_end, got %+v", rec.events)
	}
	if len(s.History) != 2 || s.History[0].Content[0].Text != "hi" || s.History[1].Content[0].Text != "hello" {
		t.Errorf("history = %+v", s.History)
	}
	req := f.Requests()[0]
	if req.System != "system" || len(req.Tools) != len(specs) || req.MaxTokens != DefaultMaxOutputTokens {
		t.Errorf("request = system %q, %d tools, max %d", req.System, len(req.Tools), req.MaxTokens)
	}
}

// A cut-off or refused answer ends the turn with its stop, and calls in it are not run but answered in History.
func TestTurnEndsOnModelStop(t *testing.T) {
	for _, tc := range []struct {
		reason model.StopReason
		want   Stop
	}{
		{model.StopMaxTokens, StopMaxTokens},
		{model.StopRefusal, StopRefusal},
	} {
		t.Run(string(tc.want), func(t *testing.T) {
			tools := &fakeTools{}
			f := newFake(t, answerStop(tc.reason, model.Block{Type: model.BlockText, Text: "partial"}, use("c1", ToolBash,
				`{"command":"rm -rf x"}`)),
				answerText("next turn"))
			s := newSession(f, tools)
			stop, err := s.RunTurn(t.Context(), "go", nil)
			if err != nil || stop != tc.want {
				t.Fatalf("RunTurn = %q, %v; want %q", stop, err, tc.want)
			}
			if got := tools.started(); len(got) != 0 {
				t.Errorf("calls of a %s answer ran: %v", tc.reason, got)
			}
			if err := validHistory(s.History); err != nil {
				t.Error(err)
			}
			// The next turn's request is valid too (checked by the fake).
			if stop, err := s.RunTurn(t.Context(), "again", nil); err != nil || stop != StopDone {
				t.Errorf("next turn = %q, %v", stop, err)
			}
		})
	}
}

func TestTurnStopsAtMaxSteps(t *testing.T) {
	var steps []step
	for i := range 5 {
		steps = append(steps, answerCalls(use(fmt.Sprint("c", i), ToolReadFile, fmt.Sprintf(`{"path":"f%d"}`, i))))
	}
	f := newFake(t, steps...)
	tools := &fakeTools{ro: readOnlyTools}
	s := newSession(f, tools)
	s.Limits.MaxSteps = 3
	var rec recorder
	stop, err := s.RunTurn(t.Context(), "loop", rec.emit)
	if err != nil || stop != StopMaxSteps {
		t.Fatalf("RunTurn = %q, %v; want max_steps", stop, err)
	}
	if n := len(f.Requests()); n != 3 {
		t.Errorf("%d model requests, want 3", n)
	}
	if n := len(tools.started()); n != 3 {
		t.Errorf("%d calls ran, want 3", n)
	}
	if n := len(rec.of(EventNotice)); n != 1 {
		t.Errorf("want a notice saying why the turn stopped, got %d", n)
	}
	if err := validHistory(s.History); err != nil {
		t.Error(err)
	}
}

func TestTurnStopsAtTokenBudget(t *testing.T) {
	big := func(i int) step {
		return func(context.Context, model.Request, model.Handler) (*model.Response, error) {
			m := model.Message{Role: model.RoleAssistant, Content: []model.Block{use(fmt.Sprint("c", i), ToolGlob,
				fmt.Sprintf(`{"pattern":"%d"}`, i))}}
			return &model.Response{Message: m, StopReason: model.StopToolUse, Usage: model.Usage{InputTokens: 500, OutputTokens: 100}}, nil
		}
	}
	f := newFake(t, big(1), big(2), big(3))
	s := newSession(f, &fakeTools{ro: readOnlyTools})
	s.Limits.MaxTokens = 1000
	stop, err := s.RunTurn(t.Context(), "spend", nil)
	if err != nil || stop != StopTokenBudget {
		t.Fatalf("RunTurn = %q, %v; want token_budget", stop, err)
	}
	if n := len(f.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (600 tokens, then 1200 >= 1000)", n)
	}
}

// barrierTools makes each read_file wait until `want` of them are running at the same time, or until guard passes. The guard
// only ends a wait that can never succeed (calls run one at a time); it asserts nothing about time.
func barrierTools(want int, guard time.Duration, readOnly bool) *fakeTools {
	var mu sync.Mutex
	running := 0
	all := make(chan struct{})
	ro := map[string]bool{ToolReadFile: readOnly}
	return &fakeTools{ro: ro, run: func(ctx context.Context, c ToolCall, _ func(string)) ToolResult {
		mu.Lock()
		running++
		if running == want {
			close(all)
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			running--
			mu.Unlock()
		}()
		select {
		case <-all:
			return ToolResult{Status: StatusCompleted, Content: "overlapped " + c.ID}
		case <-time.After(guard):
			return ToolResult{Status: StatusCompleted, Content: "alone " + c.ID}
		}
	}}
}

func TestReadOnlyCallsRunInParallel(t *testing.T) {
	run := func(t *testing.T, tools *fakeTools) []model.Block {
		f := newFake(t, answerCalls(use("a", ToolReadFile, `{"path":"a"}`), use("b", ToolReadFile, `{"path":"b"}`), use("c",
			ToolReadFile, `{"path":"c"}`)),
			answerText("done"))
		s := newSession(f, tools)
		if stop, err := s.RunTurn(t.Context(), "read", nil); err != nil || stop != StopDone {
			t.Fatalf("RunTurn = %q, %v", stop, err)
		}
		return lastResults(f.Requests()[1])
	}
	got := run(t, barrierTools(3, 10*time.Second, true))
	for i, id := range []string{"a", "b", "c"} {
		if got[i].ToolUseID != id || got[i].Text != "overlapped "+id {
			t.Errorf("result %d = %s %q; want %s, overlapped with the others", i, got[i].ToolUseID, got[i].Text, id)
		}
	}
	// Negative control: the same calls of a tool that is not read-only never meet at the barrier.
	got = run(t, barrierTools(3, 50*time.Millisecond, false))
	for i, b := range got {
		if !strings.HasPrefix(b.Text, "alone") {
			t.Errorf("control: result %d = %q; calls that are not read-only overlapped", i, b.Text)
		}
	}
}

// Calls that are not read-only run one at a time in the order of the calls; reads after a write wait for it.
func TestWritesRunInOrder(t *testing.T) {
	var mu sync.Mutex
	running, maxWriteOverlap := 0, 0
	var log []string
	tools := &fakeTools{ro: readOnlyTools, run: func(ctx context.Context, c ToolCall, _ func(string)) ToolResult {
		mu.Lock()
		running++
		if !readOnlyTools[c.Name] {
			maxWriteOverlap = max(maxWriteOverlap, running)
		}
		log = append(log, "start "+c.ID)
		mu.Unlock()
		mu.Lock()
		running--
		log = append(log, "end "+c.ID)
		mu.Unlock()
		return ToolResult{Status: StatusCompleted, Content: "ok " + c.ID}
	}}
	calls := []model.Block{
		use("r1", ToolReadFile, `{"path":"a"}`), use("r2", ToolGrep, `{"pattern":"x"}`),
		use("w1", ToolWriteFile, `{"path":"c","content":"1"}`), use("w2", ToolEditFile, `{"path":"c","old_string":"1","new_string":"2"}`),
		use("r3", ToolReadFile, `{"path":"c"}`), use("b1", ToolBash, `{"command":"go test"}`),
	}
	f := newFake(t, answerCalls(calls...), answerText("done"))
	s := newSession(f, tools)
	if stop, err := s.RunTurn(t.Context(), "change", nil); err != nil || stop != StopDone {
		t.Fatalf("RunTurn = %q, %v", stop, err)
	}
	if maxWriteOverlap != 1 {
		t.Errorf("a write ran while %d calls were running", maxWriteOverlap)
	}
	at := func(s string) int {
		for i, l := range log {
			if l == s {
				return i
			}
		}
		t.Fatalf("%q not in %v", s, log)
		return -1
	}
	for _, order := range [][2]string{{"end r1", "start w1"}, {"end r2", "start w1"}, {"end w1", "start w2"}, {"end w2",
		"start r3"}, {"end r3", "start b1"}} {
		if at(order[0]) > at(order[1]) {
			t.Errorf("%s came after %s: %v", order[0], order[1], log)
		}
	}
	res := lastResults(f.Requests()[1])
	for i, c := range calls {
		if res[i].ToolUseID != c.ToolUseID {
			t.Errorf("tool_result %d is for %s, want %s", i, res[i].ToolUseID, c.ToolUseID)
		}
	}
}

func TestToolEvents(t *testing.T) {
	tools := &fakeTools{run: func(ctx context.Context, c ToolCall, progress func(string)) ToolResult {
		progress("compiling")
		return ToolResult{Status: StatusCompleted, Content: "PASS", Locations: []Location{{Path: "/p/x.go", Line: 3}}}
	}}
	f := newFake(t, answerCalls(use("c1", ToolBash, `{"command":"go test"}`)), answerText("ok"))
	s := newSession(f, tools)
	var rec recorder
	if _, err := s.RunTurn(t.Context(), "test", rec.emit); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range rec.events {
		if e.Type != EventTextDelta {
			types = append(types, string(e.Type))
		}
	}
	if got, want := strings.Join(types, " "), "tool_call tool_progress tool_result step_end step_end"; got != want {
		t.Errorf("events = %s; want %s", got, want)
	}
	c := rec.of(EventToolCall)[0].Call
	if c.ID != "c1" || c.Name != ToolBash || string(c.Input) != `{"command":"go test"}` {
		t.Errorf("tool_call = %+v", c)
	}
	if p := rec.of(EventToolProgress)[0]; p.Text != "compiling" || p.Call.ID != "c1" {
		t.Errorf("tool_progress = %+v", p)
	}
	r := rec.of(EventToolResult)[0]
	if r.Result.CallID != "c1" || r.Result.Status != StatusCompleted || len(r.Result.Locations) != 1 || r.Call.ID != "c1" {
		t.Errorf("tool_result = %+v", r.Result)
	}
	if b := lastResults(f.Requests()[1])[0]; b.Text != "PASS" || b.IsError {
		t.Errorf("model got %+v", b)
	}
}

func TestDenialReachesModel(t *testing.T) {
	tools := &fakeTools{run: func(context.Context, ToolCall, func(string)) ToolResult {
		return ToolResult{Status: StatusDenied, Content: "the user chose Deny for writing README.md"}
	}}
	f := newFake(t, answerCalls(use("w", ToolWriteFile, `{"path":"README.md","content":"x"}`)), answerText("understood"))
	s := newSession(f, tools)
	var rec recorder
	if stop, err := s.RunTurn(t.Context(), "write", rec.emit); err != nil || stop != StopDone {
		t.Fatalf("RunTurn = %q, %v", stop, err)
	}
	b := lastResults(f.Requests()[1])[0]
	if !b.IsError || !strings.Contains(b.Text, "the user chose Deny for writing README.md") || !strings.Contains(b.Text, "Denied") {
		t.Errorf("the model got %+v; want an error result with the reason", b)
	}
	if r := rec.of(EventToolResult)[0].Result; r.Status != StatusDenied {
		t.Errorf("tool_result status = %q", r.Status)
	}
}

func TestRepeatedCallsWarnThenStop(t *testing.T) {
	// The same input, spelled differently each time: normalised, it is one call.
	inputs := []string{`{"path":"a","limit":5}`, `{"limit":5,"path":"a"}`, `{ "path": "a", "limit": 5 }`,
		`{"limit":5, "path":"a"}`, `{"path":"a","limit":5}`, `{"path":"a","limit":5}`}
	var steps []step
	for i, in := range inputs {
		steps = append(steps, answerCalls(use(fmt.Sprint("c", i), ToolReadFile, in)))
	}
	f := newFake(t, steps...)
	tools := &fakeTools{ro: readOnlyTools}
	s := newSession(f, tools)
	s.Limits.MaxSteps = 20
	stop, err := s.RunTurn(t.Context(), "loop", nil)
	if err != nil || stop != StopRepeatedCalls {
		t.Fatalf("RunTurn = %q, %v; want repeated_calls", stop, err)
	}
	if n := len(tools.started()); n != 4 {
		t.Errorf("%d calls ran; want 4 (the 5th is not run)", n)
	}
	reqs := f.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	warned := func(req model.Request) bool {
		for _, b := range lastResults(req) {
			if b.Type == model.BlockText && strings.Contains(b.Text, "same input") {
				return true
			}
		}
		return false
	}
	for i, want := range []bool{false, false, false, true, true} {
		if got := warned(reqs[i]); got != want {
			t.Errorf("request %d warned = %v, want %v", i+1, got, want)
		}
	}
	last := s.History[len(s.History)-1].Content[0]
	if !last.IsError || !strings.Contains(last.Text, "Not run") {
		t.Errorf("the 5th call's result = %+v", last)
	}
	if err := validHistory(s.History); err != nil {
		t.Error(err)
	}

	// Negative control: different inputs are no repetition.
	steps = nil
	for i := range 6 {
		steps = append(steps, answerCalls(use(fmt.Sprint("c", i), ToolReadFile, fmt.Sprintf(`{"path":"a","offset":%d}`, i+1))))
	}
	f = newFake(t, steps...)
	s = newSession(f, &fakeTools{ro: readOnlyTools})
	s.Limits.MaxSteps = 6
	if stop, err := s.RunTurn(t.Context(), "read on", nil); stop != StopMaxSteps || err != nil {
		t.Errorf("control: RunTurn = %q, %v; want max_steps", stop, err)
	}
	for i, req := range f.Requests() {
		if warned(req) {
			t.Errorf("control: request %d warned", i+1)
		}
	}
}

func TestRetryableStreamErrorRetries(t *testing.T) {
	broke := &model.StreamError{Err: errors.New("connection reset"), Started: true, Retryable: true}
	f := newFake(t, fail(broke), fail(broke), answerText("whole answer"))
	s := newSession(f, &fakeTools{})
	var rec recorder
	stop, err := s.RunTurn(t.Context(), "hi", rec.emit)
	if err != nil || stop != StopDone {
		t.Fatalf("RunTurn = %q, %v", stop, err)
	}
	rs := rec.of(EventModelRetry)
	if len(rs) != 2 || !strings.Contains(rs[0].Text, "attempt 2 of 5") || !strings.Contains(rs[1].Text, "attempt 3 of 5") ||
		!strings.HasPrefix(rs[0].Text, "Garuda: ") || !strings.Contains(rs[0].Text, "broke off") {
		t.Errorf("model_retry events = %+v", rs)
	}
	if len(s.History) != 2 || s.History[1].Content[0].Text != "whole answer" {
		t.Errorf("history = %+v", s.History)
	}
}

// A retry waits what the provider asked (retry-after), and its notice says so.
func TestRetryHonoursRetryAfter(t *testing.T) {
	limited := &model.StreamError{Err: errors.New("anthropic: HTTP 429: slow down"), Retryable: true,
		RetryAfter: 3 * time.Millisecond, Status: 429}
	f := newFake(t, fail(limited), answerText("ok"))
	s := newSession(f, &fakeTools{})
	s.Limits.RetryBase = time.Hour // a wait from the backoff would never end
	var rec recorder
	if stop, err := s.RunTurn(t.Context(), "hi", rec.emit); err != nil || stop != StopDone {
		t.Fatalf("RunTurn = %q, %v", stop, err)
	}
	rs := rec.of(EventModelRetry)
	want := "Garuda: the model did not answer (anthropic: HTTP 429: slow down); trying again in 3ms (attempt 2 of 5)."
	if len(rs) != 1 || rs[0].Text != want {
		t.Errorf("model_retry events = %+v", rs)
	}
}

func TestStreamErrorsEndTheTurn(t *testing.T) {
	retryable := &model.StreamError{Err: errors.New("overloaded"), Retryable: true}
	for _, tc := range []struct {
		name     string
		steps    []step
		requests int
		is       error
	}{
		{"not retryable", []step{fail(&model.StreamError{Err: errors.New("bad request: tools.0")})}, 1, nil},
		{"auth", []step{fail(&model.StreamError{Err: fmt.Errorf("401: %w", model.ErrAuth), Retryable: true})}, 1, model.ErrAuth},
		{"not found", []step{fail(&model.StreamError{Err: fmt.Errorf("404: %w", model.ErrNotFound), Status: 404})}, 1, model.ErrNotFound},
		{"400", []step{fail(&model.StreamError{Err: errors.New("HTTP 400: messages.0"), Status: 400})}, 1, nil},
		{"context too long", []step{fail(&model.StreamError{Err: fmt.Errorf("413: %w", model.ErrContextTooLong), Status: 413})}, 1,
			model.ErrContextTooLong},
		{"asks to wait too long", []step{fail(&model.StreamError{Err: errors.New("HTTP 429"), Retryable: true, RetryAfter: time.Hour})}, 1, nil},
		{"plain error", []step{fail(errors.New("no route"))}, 1, nil},
		{"retries used up", []step{fail(retryable), fail(retryable), fail(retryable)}, 3, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.steps...)
			s := newSession(f, &fakeTools{})
			s.Limits.Retries = 2
			var rec recorder
			stop, err := s.RunTurn(t.Context(), "hi", rec.emit)
			if err == nil || stop != "" {
				t.Fatalf("RunTurn = %q, %v; want an error", stop, err)
			}
			if n := len(f.Requests()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			if n := len(rec.of(EventModelRetry)); n != tc.requests-1 {
				t.Errorf("%d model_retry events, want %d", n, tc.requests-1)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if err := validHistory(s.History); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestCancelDuringToolCall(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	tools := &fakeTools{run: func(ctx context.Context, c ToolCall, _ func(string)) ToolResult {
		cancel() // the user stops the turn while the command runs
		<-ctx.Done()
		return ToolResult{Status: StatusCancelled, Content: "$ sleep 60 cancelled"}
	}}
	f := newFake(t, answerCalls(use("b1", ToolBash, `{"command":"sleep 60"}`), use("b2", ToolBash, `{"command":"echo hi"}`)),
		answerText("next turn works"))
	s := newSession(f, tools)
	var rec recorder
	stop, err := s.RunTurn(ctx, "run", rec.emit)
	if err != nil || stop != StopCancelled {
		t.Fatalf("RunTurn = %q, %v; want cancelled, nil", stop, err)
	}
	if got := tools.started(); len(got) != 1 {
		t.Errorf("calls started: %v; the second must not run after the cancel", got)
	}
	if err := validHistory(s.History); err != nil {
		t.Fatal(err)
	}
	res := s.History[len(s.History)-1].Content
	if res[0].Text != "$ sleep 60 cancelled" || !res[0].IsError || !res[1].IsError || !strings.Contains(res[1].Text, "Cancelled") {
		t.Errorf("results = %+v", res)
	}
	if n := len(rec.of(EventToolResult)); n != 2 {
		t.Errorf("%d tool_result events; every announced call needs an end", n)
	}
	if stop, err := s.RunTurn(t.Context(), "again", nil); err != nil || stop != StopDone {
		t.Errorf("next turn = %q, %v", stop, err)
	}
}

// A tool that ignores the cancel is ended by the loop after the settle delay, so that the turn ends.
func TestCancelStuckToolCall(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	tools := &fakeTools{run: func(_ context.Context, c ToolCall, _ func(string)) ToolResult {
		cancel()
		<-release
		return ToolResult{Status: StatusCompleted, Content: "too late"}
	}}
	f := newFake(t, answerCalls(use("b1", ToolBash, `{"command":"sleep 60"}`)))
	s := newSession(f, tools)
	s.Settle = time.Millisecond
	stop, err := s.RunTurn(ctx, "run", nil)
	if err != nil || stop != StopCancelled {
		t.Fatalf("RunTurn = %q, %v", stop, err)
	}
	if r := s.History[len(s.History)-1].Content[0]; !r.IsError || r.Text != "Cancelled." {
		t.Errorf("result = %+v", r)
	}
}

func TestCancelDuringStream(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	blocked := func(ctx context.Context, _ model.Request, h model.Handler) (*model.Response, error) {
		h.Delta(model.DeltaText, "half an ans")
		cancel()
		<-ctx.Done()
		return nil, &model.StreamError{Err: ctx.Err(), Started: true, Retryable: true}
	}
	f := newFake(t, blocked, answerText("fine"))
	s := newSession(f, &fakeTools{})
	var rec recorder
	stop, err := s.RunTurn(ctx, "hi", rec.emit)
	if err != nil || stop != StopCancelled {
		t.Fatalf("RunTurn = %q, %v", stop, err)
	}
	if n := len(rec.of(EventModelRetry)); n != 0 {
		t.Errorf("a cancelled stream was retried")
	}
	if stop, err := s.RunTurn(t.Context(), "again", nil); err != nil || stop != StopDone {
		t.Errorf("next turn = %q, %v", stop, err)
	}
}

func TestRecord(t *testing.T) {
	var kinds []string
	f := newFake(t, answerCalls(use("g", ToolGlob, `{"pattern":"*"}`)), answerText("ok"))
	s := newSession(f, &fakeTools{ro: readOnlyTools})
	s.Record = func(kind string, v any) { kinds = append(kinds, kind) }
	if _, err := s.RunTurn(t.Context(), "hi", nil); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(kinds, " "), "message message message message stop"; got != want {
		t.Errorf("records = %s; want %s", got, want)
	}
}

// Repetition counts only within the window: a call that comes back every third step is no loop with a window of 3.
func TestRepeatedCallsWindow(t *testing.T) {
	run := func(window int) (warnings int) {
		var steps []step
		for i := range 9 {
			steps = append(steps, answerCalls(use(fmt.Sprint("c", i), ToolGrep, fmt.Sprintf(`{"pattern":"p%d"}`, i%3))))
		}
		f := newFake(t, steps...)
		s := newSession(f, &fakeTools{ro: readOnlyTools})
		s.Limits.MaxSteps, s.Limits.RepeatWindow = 9, window
		var rec recorder
		if stop, err := s.RunTurn(t.Context(), "cycle", rec.emit); err != nil || stop != StopMaxSteps {
			t.Fatalf("window %d: RunTurn = %q, %v; want max_steps", window, stop, err)
		}
		for _, e := range rec.of(EventNotice) {
			if strings.Contains(e.Text, "same input") {
				warnings++
			}
		}
		return warnings
	}
	if n := run(3); n != 0 {
		t.Errorf("window 3: %d warnings, want none", n)
	}
	// Control: with the default window the 7th to 9th steps are each a third repetition.
	if n := run(10); n != 3 {
		t.Errorf("window 10: %d warnings, want 3", n)
	}
}

func TestEmptyPromptIsRefused(t *testing.T) {
	f := newFake(t)
	s := newSession(f, &fakeTools{})
	if stop, err := s.RunTurn(t.Context(), " \n", nil); err == nil || stop != "" || len(s.History) != 0 || len(f.Requests()) != 0 {
		t.Errorf("RunTurn = %q, %v with %d messages; want an error and nothing sent", stop, err, len(s.History))
	}
}

// Tool call ids are unique in a session, whatever the provider sends: an id reused in a later answer, twice in one
// answer, or empty gets a new one, and its result comes back under the new id.
func TestToolCallIDsAreUniqueInASession(t *testing.T) {
	tools := &fakeTools{run: func(ctx context.Context, c ToolCall, progress func(string)) ToolResult {
		return ToolResult{Status: StatusCompleted, Content: "ran " + c.ID}
	}}
	f := newFake(t,
		answerCalls(use("call_0", ToolGlob, `{"pattern":"a"}`), use("call_0", ToolGlob, `{"pattern":"b"}`)),
		answerCalls(use("call_0", ToolGlob, `{"pattern":"c"}`), use("", ToolGlob, `{"pattern":"d"}`)),
		answerText("ok"))
	s := newSession(f, tools)
	var rec recorder
	if _, err := s.RunTurn(t.Context(), "go", rec.emit); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range rec.of(EventToolCall) {
		if e.Call.ID == "" || seen[e.Call.ID] {
			t.Errorf("tool call id %q is empty or used twice", e.Call.ID)
		}
		seen[e.Call.ID] = true
	}
	if len(seen) != 4 || !seen["call_0"] {
		t.Errorf("ids %v: want 4, the first kept as the provider sent it", seen)
	}
	for _, e := range rec.of(EventToolResult) {
		if e.Result.CallID != e.Call.ID || e.Result.Content != "ran "+e.Call.ID {
			t.Errorf("result %+v of call %q", e.Result, e.Call.ID)
		}
	}
}

// The ids a session remembers to keep them unique are bounded: a long session does not keep every call's id for its
// whole life, yet an id its provider keeps reusing (a local server's call_0 in every answer) is never let through.
func TestToolCallIDMemoryIsBounded(t *testing.T) {
	s := &Conversation{}
	got := map[string]bool{}
	for i := range 20 * callIDMemory {
		for _, id := range []string{"call_0", fmt.Sprintf("toolu_%d", i)} {
			u := s.uniqueCallID(id)
			if got[u] {
				t.Fatalf("call %d: id %q given twice", i, u)
			}
			got[u] = true
		}
	}
	if n := len(s.callIDs); n > 2*callIDMemory {
		t.Errorf("%d ids remembered after %d calls; want at most %d", n, 2*20*callIDMemory, 2*callIDMemory)
	}
	if u := s.uniqueCallID("call_0"); u == "call_0" {
		t.Errorf("call_0, reused in every answer, was let through after %d calls", s.calls)
	}
}
