package agent

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/frontend/model"
)

func textMsg(role model.Role, text string) model.Message {
	return model.Message{Role: role, Content: []model.Block{{Type: model.BlockText, Text: text}}}
}

func resultsMsg(id, text string) model.Message {
	return model.Message{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockToolResult, ToolUseID: id, Text: text}}}
}

// earlier is a finished conversation of two prompts; its one tool output is large and marked OLD-OUTPUT.
func earlier() []model.Message {
	return []model.Message{
		textMsg(model.RoleUser, "first prompt: fix the parser ✓  (kept word for word)"),
		{Role: model.RoleAssistant, Content: []model.Block{{Type: model.BlockThinking, Text: "hmm", Signature: "sig"},
			use("t1", ToolReadFile, `{"path":"parser.go"}`)}},
		resultsMsg("t1", "OLD-OUTPUT "+strings.Repeat("x", 3000)),
		textMsg(model.RoleAssistant, "The parser is fixed."),
		textMsg(model.RoleUser, "second prompt:\n  now the lexer"),
		textMsg(model.RoleAssistant, "The lexer is fixed too."),
	}
}

// summarise answers a summary request, checking that it is one: no tools, the transcript of the earlier part.
func summarise(t *testing.T, summary string) step {
	return func(ctx context.Context, req model.Request, h model.Handler) (*model.Response, error) {
		if len(req.Tools) != 0 || req.System != compactSystem || len(req.Messages) != 1 {
			t.Errorf("summary request: %d tools, system %.40q, %d messages", len(req.Tools), req.System, len(req.Messages))
		} else if tr := req.Messages[0].Content[0].Text; !strings.Contains(tr, "first prompt: fix the parser") ||
			!strings.Contains(tr, "The parser is fixed.") {
			t.Errorf("the summary request lacks the conversation: %.300q", tr)
		}
		return answerText(summary)(ctx, req, h)
	}
}

func TestCompactionWhenContextTooLong(t *testing.T) {
	tooLong := &model.StreamError{Err: fmt.Errorf("400 prompt is too long: %w", model.ErrContextTooLong)}
	f := newFake(t, fail(tooLong), summarise(t, "SUMMARY: parser and lexer fixed"), answerText("done"))
	s := newSession(f, &fakeTools{})
	s.History = earlier()
	var rec recorder
	var recorded []Compaction
	s.Record = func(kind string, v any) {
		if c, ok := v.(Compaction); ok {
			recorded = append(recorded, c)
		}
	}
	stop, err := s.RunTurn(t.Context(), "third prompt", rec.emit)
	if err != nil || stop != StopDone {
		t.Fatalf("RunTurn = %q, %v", stop, err)
	}
	if ev := rec.of(EventCompaction); len(ev) != 1 || !strings.HasPrefix(ev[0].Text, "Garuda: ") {
		t.Errorf("compaction events = %+v", ev)
	}
	if len(recorded) != 1 || recorded[0].MessagesBefore != 7 {
		t.Errorf("recorded compactions = %+v", recorded)
	}
	reqs := f.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	msgs := reqs[2].Messages
	old := earlier()
	want := []model.Message{old[0], old[4], {}, textMsg(model.RoleUser, "third prompt")}
	if len(msgs) != len(want) {
		t.Fatalf("after compaction %d messages: %+v", len(msgs), msgs)
	}
	for _, i := range []int{0, 1, 3} {
		if !reflect.DeepEqual(msgs[i], want[i]) {
			t.Errorf("message %d = %+v; want the user's message verbatim: %+v", i, msgs[i], want[i])
		}
	}
	if !strings.Contains(msgs[2].Content[0].Text, "SUMMARY: parser and lexer fixed") || msgs[2].Role != model.RoleUser {
		t.Errorf("message 2 = %+v; want the summary", msgs[2])
	}
	for _, m := range msgs {
		for _, b := range m.Content {
			if strings.Contains(b.Text, "OLD-OUTPUT") {
				t.Errorf("an old tool output is still in the history")
			}
		}
	}
	if !reflect.DeepEqual(s.History[:4], msgs) {
		t.Errorf("History is not the compacted one")
	}
}

// A tool output that pushes the next request past 85% of the window compacts the history before it is sent, in the
// middle of a turn; the step being answered is kept whole.
func TestCompactionAtEightyFivePercent(t *testing.T) {
	run := func(t *testing.T, window int, steps ...step) (*fakeModel, *Conversation, *recorder) {
		tools := &fakeTools{ro: readOnlyTools, run: func(context.Context, ToolCall, func(string)) ToolResult {
			return ToolResult{Status: StatusCompleted, Content: "NEW-OUTPUT " + strings.Repeat("y", 12000)}
		}}
		f := newFake(t, steps...)
		s := newSession(f, tools)
		s.History = earlier()
		s.ContextWindow = window
		rec := &recorder{}
		if stop, err := s.RunTurn(t.Context(), "third prompt", rec.emit); err != nil || stop != StopDone {
			t.Fatalf("RunTurn = %q, %v", stop, err)
		}
		return f, s, rec
	}
	// The first request is about 2,600 tokens (the tools' schemas are 1,700) of 5,000: under 85%; after the new
	// output, about 5,600: over.
	f, _, rec := run(t, 5000, answerCalls(use("t2", ToolReadFile, `{"path":"lexer.go"}`)), summarise(t, "SUMMARY"), answerText("done"))
	reqs := f.Requests()
	if len(reqs) != 3 || len(reqs[1].Tools) != 0 {
		t.Fatalf("%d requests; want the summary request second", len(reqs))
	}
	if len(rec.of(EventCompaction)) != 1 {
		t.Errorf("no compaction event")
	}
	msgs := reqs[2].Messages
	old := earlier()
	if len(msgs) != 6 || !reflect.DeepEqual(msgs[0], old[0]) || !reflect.DeepEqual(msgs[1], old[4]) ||
		!reflect.DeepEqual(msgs[3], textMsg(model.RoleUser, "third prompt")) {
		t.Fatalf("after compaction: %+v", msgs)
	}
	if msgs[4].Content[0].ToolUseID != "t2" || !strings.HasPrefix(msgs[5].Content[0].Text, "NEW-OUTPUT") {
		t.Errorf("the last step was not kept: %+v %+v", msgs[4], msgs[5])
	}
	for _, m := range msgs {
		for _, b := range m.Content {
			if strings.Contains(b.Text, "OLD-OUTPUT") {
				t.Errorf("an old tool output is still in the history")
			}
		}
	}

	// Negative control: with a large window the same turn is not compacted.
	f, s, rec := run(t, 1_000_000, answerCalls(use("t2", ToolReadFile, `{"path":"lexer.go"}`)), answerText("done"))
	if n := len(f.Requests()); n != 2 || len(rec.of(EventCompaction)) != 0 || len(s.History) != 10 {
		t.Errorf("control: %d requests, %d compactions, %d messages", n, len(rec.of(EventCompaction)), len(s.History))
	}
}

// When the earlier part is too big for the summary request, old tool outputs go first, oldest first; the user's
// messages and newer outputs stay.
func TestTranscriptDropsOldToolOutputsFirst(t *testing.T) {
	head := []model.Message{
		textMsg(model.RoleUser, "PROMPT-1"),
		{Role: model.RoleAssistant, Content: []model.Block{use("a", ToolReadFile, `{"path":"a"}`)}},
		resultsMsg("a", "OUT-A "+strings.Repeat("a", 1900)),
		{Role: model.RoleAssistant, Content: []model.Block{use("b", ToolReadFile, `{"path":"b"}`)}},
		resultsMsg("b", "OUT-B "+strings.Repeat("b", 1900)),
		textMsg(model.RoleAssistant, "ANSWER"),
		textMsg(model.RoleUser, "PROMPT-2"),
	}
	full, dropped := renderTranscript(head, 100_000)
	if dropped != 0 || !strings.Contains(full, "OUT-A") || !strings.Contains(full, "OUT-B") {
		t.Fatalf("control: with room, nothing is dropped (dropped %d)", dropped)
	}
	tr, dropped := renderTranscript(head, len(full)-1000)
	if strings.Contains(tr, "OUT-A") || !strings.Contains(tr, "OUT-B") || dropped == 0 {
		t.Errorf("want the older output dropped and the newer kept; dropped %d bytes:\n%.500s", dropped, tr)
	}
	for _, keep := range []string{"PROMPT-1", "PROMPT-2", "ANSWER"} {
		if !strings.Contains(tr, keep) {
			t.Errorf("%s was dropped before the tool outputs", keep)
		}
	}
}

// A conversation of nothing but the user's messages cannot be compacted: the provider's error is returned.
func TestCompactionWithNothingToSummarise(t *testing.T) {
	tooLong := &model.StreamError{Err: fmt.Errorf("400: %w", model.ErrContextTooLong)}
	f := newFake(t, fail(tooLong))
	s := newSession(f, &fakeTools{})
	stop, err := s.RunTurn(t.Context(), strings.Repeat("paste ", 100), nil)
	if stop != "" || err == nil || !strings.Contains(err.Error(), "context window") {
		t.Errorf("RunTurn = %q, %v; want the context error", stop, err)
	}
}

// A long session's own messages do not pile up for ever: past a quarter of the transcript budget the oldest are left
// to the summary (which sees them), the newest stay word for word, and a history of nothing but prompts can still be
// compacted. Without the bound the seven big prompts are all kept and the request stays too long.
func TestCompactionBoundsKeptPrompts(t *testing.T) {
	big := func(i int) string { return fmt.Sprintf("prompt %d: %s", i, strings.Repeat("words ", 150)) }
	var h []model.Message
	for i := range 7 {
		h = append(h, textMsg(model.RoleUser, big(i)))
	}
	tooLong := &model.StreamError{Err: fmt.Errorf("400 prompt is too long: %w", model.ErrContextTooLong)}
	var transcript string
	sum := func(ctx context.Context, req model.Request, hd model.Handler) (*model.Response, error) {
		transcript = req.Messages[0].Content[0].Text
		return answerText("SUMMARY")(ctx, req, hd)
	}
	f := newFake(t, fail(tooLong), sum, answerText("done"))
	s := newSession(f, &fakeTools{})
	s.ContextWindow = 4000 // transcript budget 8,000 bytes: 2,000 for kept prompts (two of 900)
	s.History = h
	var rec recorder
	stop, err := s.RunTurn(t.Context(), "last prompt", rec.emit)
	if err != nil || stop != StopDone {
		t.Fatalf("RunTurn = %q, %v", stop, err)
	}
	if !strings.Contains(transcript, "prompt 0:") {
		t.Errorf("the summary request does not see the oldest prompt")
	}
	var kept []string
	for _, m := range s.History {
		if isPrompt(m) {
			kept = append(kept, strings.SplitN(messageText(m), ":", 2)[0])
		}
	}
	if len(kept) == 0 || len(kept) >= 8 || kept[len(kept)-1] != "last prompt" || slices.Contains(kept, "prompt 0") {
		t.Errorf("prompts kept word for word: %q; want the newest only, the latest last", kept)
	}
	if ev := rec.of(EventCompaction); len(ev) != 1 || !strings.Contains(ev[0].Text, "older ones summarised") {
		t.Errorf("compaction events = %+v", ev)
	}
}
