package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/garuda-dev/garuda/frontend/model"
)

// summaryMarker begins the message that holds a compaction summary, so that a later compaction tells it from the
// user's own messages.
const summaryMarker = "[Garuda: summary of the earlier conversation, written when it was compacted to fit the " +
	"context window. The user's recent messages are kept above and below it, word for word; older ones are only in this summary.]"

const compactSystem = "You summarise a coding session of Garuda, a coding agent, so that it can go on with a shorter context. " +
	"You see a transcript of the earlier conversation; some tool outputs in it were shortened or dropped."

const compactInstructions = `Write a summary of the conversation above for the agent that will continue it. The user's recent messages are kept word for word elsewhere: do not repeat them, refer to them; their older messages are kept only in your summary. Include:
- what the user asked for, and any constraint or preference they stated (for the older messages, as exactly as needed);
- what has been done: files read, created or changed (with paths), commands run and their outcomes;
- facts found that are still needed: names, paths, line numbers, error messages, decisions and their reasons;
- calls that were denied by the user or the policy, so they are not tried again;
- what remains to do, and the next step.
Be precise and brief: plain text, no preamble, at most about 800 words.`

const (
	// Each tool output in the summary request is shortened to this many bytes before any is dropped.
	compactToolCap = 2000
	// A tool input (for example write_file content) in the summary request is shortened to this many bytes.
	compactInputCap = 1000
	// Without a known context window, the summary request's transcript is at most this many bytes.
	compactDefaultBudget = 400_000
	compactMaxOutput     = 4096
	// The user's own messages kept word for word take at most this share of the transcript budget; older ones are
	// left to the summary, so that a long session's history (and the front end's memory) stays bounded.
	compactPromptShare = 4
)

// keptPrompts returns the newest prompts whose text fits in budget bytes (the latest one always), oldest first.
func keptPrompts(prompts []model.Message, budget int) []model.Message {
	size := 0
	for i := len(prompts) - 1; i >= 0; i-- {
		size += len(messageText(prompts[i]))
		if size > budget && i < len(prompts)-1 {
			return prompts[i+1:]
		}
	}
	return prompts
}

func isToolResults(m model.Message) bool {
	return m.Role == model.RoleUser && len(m.Content) > 0 && m.Content[0].Type == model.BlockToolResult
}

// isPrompt reports whether m is one of the user's own messages: user text, not tool results, not a summary.
func isPrompt(m model.Message) bool {
	if m.Role != model.RoleUser || len(m.Content) == 0 {
		return false
	}
	for _, b := range m.Content {
		if b.Type != model.BlockText {
			return false
		}
	}
	return !strings.HasPrefix(m.Content[0].Text, summaryMarker)
}

// compact replaces the older part of History by a summary written by the model: the user's own messages stay word
// for word (the newest of them, up to a quarter of the transcript budget; older ones live on in the summary), the
// last step (a tool call and its results) stays as it is, the rest becomes one summary message. It reports false
// when there was nothing to summarise.
func (t *turnLoop) compact(ctx context.Context) (bool, error) {
	s := t.s
	if s.BeforeCompact != nil {
		s.BeforeCompact(ctx, "auto")
	}
	h := s.History
	cut := len(h)
	if n := len(h); n >= 2 && isToolResults(h[n-1]) && h[n-2].Role == model.RoleAssistant {
		cut = n - 2
	}
	head, tail := h[:cut], h[cut:]
	budget := compactDefaultBudget
	if s.ContextWindow > 0 {
		budget = s.ContextWindow * 4 / 2 // bytes: about half the window in tokens
	}
	var all []model.Message
	for _, m := range head {
		if isPrompt(m) {
			all = append(all, m)
		}
	}
	prompts := keptPrompts(all, budget/compactPromptShare)
	if len(prompts) == len(head) {
		return false, nil
	}
	before := s.estimate(s.buildRequest())
	var summary string
	var dropped int
	for try := 0; ; try++ {
		transcript, d := renderTranscript(head, budget)
		dropped = d
		maxOut := s.MaxOutputTokens
		if maxOut <= 0 || maxOut > compactMaxOutput {
			maxOut = compactMaxOutput
		}
		req := model.Request{
			System: compactSystem,
			Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText,
				Text: transcript + "\n\n" + compactInstructions}}}},
			MaxTokens: maxOut,
		}
		resp, err := t.stream(ctx, req, discardHandler{})
		if err != nil && errors.Is(err, model.ErrContextTooLong) && try < 2 && ctx.Err() == nil {
			budget /= 2
			continue
		}
		if err != nil {
			return false, fmt.Errorf("compact the conversation (%d messages): %w", len(h), err)
		}
		t.tokens += resp.Usage.Total()
		summary = strings.TrimSpace(messageText(resp.Message))
		if summary == "" {
			return false, fmt.Errorf("compact the conversation (%d messages): the model wrote an empty summary", len(h))
		}
		break
	}

	out := make([]model.Message, 0, len(prompts)+2+len(tail))
	summaryMsg := model.Message{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText, Text: summaryMarker + "\n\n" + summary}}}
	if len(prompts) == 0 {
		out = append(out, summaryMsg)
	} else {
		// The latest prompt comes after the summary, so that the model reads it last before its own work.
		out = append(out, prompts[:len(prompts)-1]...)
		out = append(out, summaryMsg, prompts[len(prompts)-1])
	}
	out = append(out, shortenTail(tail, budget)...)
	s.History = out
	s.usageMark = 0
	after := s.estimate(s.buildRequest())
	c := Compaction{Summary: summary, MessagesBefore: len(h), MessagesAfter: len(out), TokensBefore: before,
		TokensAfter: after, DroppedToolBytes: dropped}
	s.record("compaction", c)
	kept := "your own messages kept"
	if older := len(all) - len(prompts); older > 0 {
		kept = fmt.Sprintf("your %d latest messages kept, %d older ones summarised", len(prompts), older)
	}
	t.emit(Event{Type: EventCompaction, Text: fmt.Sprintf("Garuda: the conversation was compacted to fit the model's context: "+
		"%d earlier messages summarised, %s (about %d tokens, now %d).", len(head)-len(prompts), kept, before, after)})
	return true, nil
}

func messageText(m model.Message) string {
	var b strings.Builder
	for _, bl := range m.Content {
		if bl.Type == model.BlockText {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// renderTranscript writes head as plain text of at most about budget bytes for the summary request. Old tool outputs
// go first: each is shortened, then they are dropped oldest first, and only then is the oldest text cut. It returns
// the bytes of tool output left out.
func renderTranscript(head []model.Message, budget int) (string, int) {
	type entry struct {
		text string
		tool bool
	}
	var es []entry
	dropped := 0
	for _, m := range head {
		switch {
		case isPrompt(m):
			es = append(es, entry{text: "## User\n" + messageText(m)})
			continue
		case m.Role == model.RoleUser && len(m.Content) > 0 && strings.HasPrefix(m.Content[0].Text, summaryMarker):
			es = append(es, entry{text: "## Summary of what came before\n" + strings.TrimPrefix(m.Content[0].Text, summaryMarker)})
			continue
		}
		for _, b := range m.Content {
			switch b.Type {
			case model.BlockText:
				if m.Role == model.RoleAssistant {
					es = append(es, entry{text: "## Assistant\n" + b.Text})
				}
			case model.BlockToolUse:
				in, d := shorten(string(b.Input), compactInputCap)
				dropped += d
				es = append(es, entry{text: "## Tool call " + b.Name + " " + in})
			case model.BlockToolResult:
				head := "## Tool result\n"
				if b.IsError {
					head = "## Tool result (error)\n"
				}
				out, d := shorten(b.Text, compactToolCap)
				dropped += d
				es = append(es, entry{text: head + out, tool: true})
			}
		}
	}
	total := 0
	for _, e := range es {
		total += len(e.text) + 2
	}
	for i := range es {
		if total <= budget {
			break
		}
		if es[i].tool {
			const gone = "## Tool result\n[output dropped]"
			total -= len(es[i].text) - len(gone)
			dropped += len(es[i].text) - len(gone)
			es[i].text = gone
		}
	}
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.text
	}
	text := strings.Join(parts, "\n\n")
	if len(text) > budget {
		cut := len(text) - budget
		for cut < len(text) && !utf8.RuneStart(text[cut]) {
			cut++
		}
		text = "[the earliest part of the conversation was dropped]\n\n" + text[cut:]
	}
	return text, dropped
}

// shorten keeps the start and the end of s within about n bytes, saying how much was left out.
func shorten(s string, n int) (string, int) {
	if len(s) <= n {
		return s, 0
	}
	a, b := n*3/4, len(s)-n/4
	for a > 0 && !utf8.RuneStart(s[a]) {
		a--
	}
	for b < len(s) && !utf8.RuneStart(s[b]) {
		b++
	}
	return s[:a] + fmt.Sprintf("\n[... %d bytes left out ...]\n", b-a) + s[b:], b - a
}

// shortenTail shortens the tool outputs of the kept last step when they alone pass budget bytes. It copies what it
// changes: earlier requests may still share the old blocks.
func shortenTail(tail []model.Message, budget int) []model.Message {
	if messagesBytes(tail) <= budget {
		return tail
	}
	out := make([]model.Message, len(tail))
	for i, m := range tail {
		out[i] = m
		if !isToolResults(m) {
			continue
		}
		per := budget / max(1, len(m.Content))
		out[i].Content = make([]model.Block, len(m.Content))
		for j, b := range m.Content {
			if b.Type == model.BlockToolResult {
				b.Text, _ = shorten(b.Text, per)
			}
			out[i].Content[j] = b
		}
	}
	return out
}
