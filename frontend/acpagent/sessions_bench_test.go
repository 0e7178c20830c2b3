package acpagent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/broker/sessionlog"
	"github.com/garuda-dev/garuda/frontend/model"
)

// writeBigSession writes, as the front end records it, a session of turns turns with calls tool calls each
// (read_file, a 400-byte result), a thought and a text answer per turn.
func writeBigSession(b *testing.B, home, root, id string, turns, calls int) int {
	w := sessionlog.Create(filepath.Join(home, "sessions"), id, sessionlog.Header{Root: root, UID: uint32(os.Getuid())})
	defer w.Close()
	put := func(kind string, v any) {
		d, _ := json.Marshal(v)
		if err := w.Append(kind, d); err != nil {
			b.Fatal(err)
		}
	}
	updates := 0
	up := func(u acp.SessionUpdate) { put(recUpdate, u); updates++ }
	result := strings.Repeat("line of the file\n", 24)
	for t := range turns {
		prompt := fmt.Sprintf("turn %d: look at the files", t)
		up(acp.SessionUpdate{UserMessageChunk: &acp.SessionUpdateUserMessageChunk{Content: acp.TextBlock(prompt)}})
		if t == 0 {
			put(recTitle, prompt)
			up(acp.SessionUpdate{SessionInfoUpdate: &acp.SessionSessionInfoUpdate{Title: acp.Ptr(prompt)}})
		}
		put(recMessage, model.Message{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText, Text: prompt}}})
		up(acp.UpdateAgentThoughtText("I should read the files one by one."))
		for c := range calls {
			cid := fmt.Sprintf("toolu_%d_%d", t, c)
			in := json.RawMessage(fmt.Sprintf(`{"path":"src/file%d.go"}`, c))
			put(recMessage, model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: model.BlockToolUse, ToolUseID: cid, Name: "read_file", Input: in}}})
			up(acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: acp.ToolCallId(cid), Title: fmt.Sprintf("Read src/file%d.go", c),
				Kind: acp.ToolKindRead, Status: acp.ToolCallStatusPending, Locations: []acp.ToolCallLocation{{Path: root + fmt.Sprintf("/src/file%d.go", c)}},
				RawInput: map[string]any{"path": fmt.Sprintf("src/file%d.go", c)}}})
			up(acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: acp.ToolCallId(cid), Status: acp.Ptr(acp.ToolCallStatusCompleted),
				Content: []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(result))}}})
			put(recMessage, model.Message{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockToolResult, ToolUseID: cid, Text: result}}})
		}
		answer := fmt.Sprintf("Turn %d: the files say what they should. %s", t, strings.Repeat("More words. ", 20))
		up(acp.UpdateAgentMessageText(answer))
		put(recMessage, model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: model.BlockText, Text: answer}}})
		put(recStop, "done")
	}
	return updates
}

// BenchmarkLoad200Turns is session/load of a session with 200 turns and 1,000 tool calls, through the real broker:
// from the request to its answer, which comes after the last replayed update (target: under 150 ms).
func BenchmarkLoad200Turns(b *testing.B) {
	e := newEnv(b)
	const id = "bench-session"
	n := writeBigSession(b, e.home, e.root, id, 200, 5)
	fi, _ := os.Stat(filepath.Join(e.home, "sessions", id+".jsonl"))
	b.ReportMetric(float64(fi.Size())/(1<<20), "MiB-file")
	for b.Loop() {
		before, _ := e.ed.snapshot()
		if _, err := e.conn.LoadSession(e.ctx(), acp.LoadSessionRequest{SessionId: id, Cwd: e.root, McpServers: []acp.McpServer{}}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		after, _ := e.ed.snapshot()
		if got := len(after) - len(before); got != n+1 { // the replay and the / menu
			b.Fatalf("%d updates before the answer, want %d", got, n+1)
		}
		if _, err := e.conn.CloseSession(e.ctx(), acp.CloseSessionRequest{SessionId: id}); err != nil {
			b.Fatal(err)
		}
		e.ed.mu.Lock()
		e.ed.updates = nil
		e.ed.mu.Unlock()
		b.StartTimer()
	}
}

// BenchmarkList1000Sessions is session/list of the newest 100 of 1,000 sessions on the root, through the real
// broker (target: under 50 ms).
func BenchmarkList1000Sessions(b *testing.B) {
	e := newEnv(b)
	for i := range 1000 {
		writeBigSession(b, e.home, e.root, fmt.Sprintf("s%04d", i), 2, 2)
	}
	for b.Loop() {
		res, err := e.conn.ListSessions(e.ctx(), acp.ListSessionsRequest{Cwd: acp.Ptr(e.root)})
		if err != nil || len(res.Sessions) != 100 || res.NextCursor == nil {
			b.Fatal(len(res.Sessions), err)
		}
	}
}
