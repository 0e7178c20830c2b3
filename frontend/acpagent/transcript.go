package acpagent

import (
	"encoding/json"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// Kinds of the session file's entries that the front end writes (the broker writes the header).
const (
	recUpdate     = "update"     // a session/update as the editor saw it: the replay source
	recPrompt     = "prompt"     // the prompt's text as the model got it
	recMessage    = "message"    // a model message added to the conversation
	recCompaction = "compaction" // the conversation replaced by a compacted one, which it holds whole
	recMode       = "mode"       // the mode from then on
	recConfig     = "config"     // a config option's value from then on
	recTitle      = "title"      // the session's title
	recStop       = "stop"       // how a turn ended
)

// chunkLimit bounds one recorded run of message or thought text; a longer run is kept as several entries.
const chunkLimit = 64 << 10

// entryLimit bounds one recorded update: a tool call's input or content past it is kept shorter.
const entryLimit = 1 << 20

// transcript turns the updates sent to the editor into the session file's update entries, so that a replay
// shows what the editor saw, in its order: a run of message (or thought) chunks becomes one chunk, a tool call is
// its tool_call and its final tool_call_update (progress is left out), and everything else is kept as sent.
type transcript struct {
	mu        sync.Mutex
	chunkKind string // "message" or "thought": the kind of the run being gathered
	chunk     strings.Builder
	write     func(kind string, v any) // session.record
}

// add notes one update sent to the editor.
func (tr *transcript) add(u acp.SessionUpdate) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	switch {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		tr.gather("message", u.AgentMessageChunk.Content.Text.Text)
	case u.AgentThoughtChunk != nil && u.AgentThoughtChunk.Content.Text != nil:
		tr.gather("thought", u.AgentThoughtChunk.Content.Text.Text)
	case u.AvailableCommandsUpdate != nil:
		// The / menu is sent afresh whenever a session opens: not part of the conversation.
	case u.ToolCallUpdate != nil:
		st := u.ToolCallUpdate.Status
		if st == nil || (*st != acp.ToolCallStatusCompleted && *st != acp.ToolCallStatusFailed) {
			return // progress: the replay shows the call's end only
		}
		tr.flushLocked()
		tr.write(recUpdate, bounded(u))
	default:
		tr.flushLocked()
		tr.write(recUpdate, bounded(u))
	}
}

// user notes the user's prompt blocks, which the editor showed itself: the replay sends them as user chunks.
func (tr *transcript) user(blocks []acp.ContentBlock) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.flushLocked()
	for _, b := range blocks {
		u := acp.SessionUpdate{UserMessageChunk: &acp.SessionUpdateUserMessageChunk{Content: b}}
		if j, err := json.Marshal(u); err == nil && len(j) > entryLimit {
			u.UserMessageChunk.Content = acp.TextBlock("(a part of the prompt too large to keep in the session file)")
		}
		tr.write(recUpdate, u)
	}
}

// flush writes the run of text being gathered.
func (tr *transcript) flush() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.flushLocked()
}

func (tr *transcript) gather(kind, text string) {
	if tr.chunkKind != kind || tr.chunk.Len()+len(text) > chunkLimit {
		tr.flushLocked()
	}
	tr.chunkKind = kind
	tr.chunk.WriteString(text)
}

func (tr *transcript) flushLocked() {
	if tr.chunk.Len() == 0 {
		return
	}
	text := tr.chunk.String()
	tr.chunk.Reset()
	u := acp.UpdateAgentMessageText(text)
	if tr.chunkKind == "thought" {
		u = acp.UpdateAgentThoughtText(text)
	}
	tr.write(recUpdate, u)
}

// bounded keeps an update under entryLimit: a tool call's raw input goes first, then its content becomes a note.
func bounded(u acp.SessionUpdate) acp.SessionUpdate {
	j, err := json.Marshal(u)
	if err != nil || len(j) <= entryLimit {
		return u
	}
	note := []acp.ToolCallContent{acp.ToolContent(acp.TextBlock("(too large to keep in the session file)"))}
	switch {
	case u.ToolCall != nil:
		c := *u.ToolCall
		c.RawInput = nil
		if j, _ := json.Marshal(acp.SessionUpdate{ToolCall: &c}); len(j) > entryLimit {
			c.Content = note
		}
		return acp.SessionUpdate{ToolCall: &c}
	case u.ToolCallUpdate != nil:
		c := *u.ToolCallUpdate
		c.RawInput, c.RawOutput = nil, nil
		if j, _ := json.Marshal(acp.SessionUpdate{ToolCallUpdate: &c}); len(j) > entryLimit {
			c.Content = note
		}
		return acp.SessionUpdate{ToolCallUpdate: &c}
	}
	return u
}
