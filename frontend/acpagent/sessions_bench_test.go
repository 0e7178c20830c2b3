package acpagent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
			cid, path := fmt.Sprintf("toolu_%d_%d", t, c), fmt.Sprintf("src/file%d.go", c)
			in, _ := json.Marshal(map[string]string{"path": path})
			use := model.Block{Type: model.BlockToolUse, ToolUseID: cid, Name: "read_file", Input: in}
			put(recMessage, model.Message{Role: model.RoleAssistant, Content: []model.Block{use}})
			up(acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: acp.ToolCallId(cid), Title: "Read " + path,
				Kind: acp.ToolKindRead, Status: acp.ToolCallStatusPending, Locations: []acp.ToolCallLocation{{Path: root + "/" + path}},
				RawInput: map[string]any{"path": path}}})
			up(acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: acp.ToolCallId(cid),
				Status: acp.Ptr(acp.ToolCallStatusCompleted), Content: []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(result))}}})
			res := model.Block{Type: model.BlockToolResult, ToolUseID: cid, Text: result}
			put(recMessage, model.Message{Role: model.RoleUser, Content: []model.Block{res}})
		}
		answer := fmt.Sprintf("Turn %d: the files say what they should. %s", t, strings.Repeat("More words. ", 20))
		up(acp.UpdateAgentMessageText(answer))
		put(recMessage, model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: model.BlockText, Text: answer}}})
		put(recStop, "done")
	}
	return updates
}

// BenchmarkLoad200Turns is session/load of a session with 200 turns and 1,000 tool calls, driven as an editor
// drives the built garuda acp: from the request written to its answer read, which comes after the last replayed
// update (target: under 150 ms). Raw lines, not the Go SDK's client: that client closes the connection when more
// than 1,024 notifications wait in its queue, and its own decoding is not Garuda's time. It runs the binaries of
// `make build` (make bench builds them first): the process tests of the built binaries live in test/, which builds
// its own; this one stays here for the session file it writes with this package's record kinds.
func BenchmarkLoad200Turns(b *testing.B) {
	bin, err := filepath.Abs(filepath.Join("..", "..", "bin"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bin, "garuda")); err != nil {
		b.Skipf("no built garuda in %s: run make build first (make bench does): %v", bin, err)
	}
	base := b.TempDir()
	home, root := filepath.Join(base, "garuda-home"), filepath.Join(base, "proj")
	for _, d := range []string{home, root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	models := `{"default":"fake","providers":{"local":{"type":"openai","base_url":"http://127.0.0.1:9/v1"}},` +
		`"models":{"fake":{"provider":"local"}}}`
	if err := os.WriteFile(filepath.Join(home, "models.json"), []byte(models), 0o600); err != nil {
		b.Fatal(err)
	}
	const id = "bench-session"
	n := writeBigSession(b, home, root, id, 200, 5)
	fi, _ := os.Stat(filepath.Join(home, "sessions", id+".jsonl"))
	cmd := exec.Command(filepath.Join(bin, "garuda"), "acp")
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + base, "GARUDA_HOME=" + home, "TMPDIR=" + base}
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	out := bufio.NewReaderSize(outPipe, 1<<20)
	reqID := 0
	call := func(method string, params any) int {
		reqID++
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": reqID, "method": method, "params": params})
		if _, err := in.Write(append(line, '\n')); err != nil {
			b.Fatal(err)
		}
		updates := 0
		for {
			l, err := out.ReadBytes('\n')
			if err != nil {
				b.Fatal(err)
			}
			var m struct {
				ID     *int            `json:"id"`
				Method string          `json:"method"`
				Error  json.RawMessage `json:"error"`
			}
			json.Unmarshal(l, &m)
			if m.ID != nil && *m.ID == reqID {
				if m.Error != nil {
					b.Fatalf("%s: %s", method, m.Error)
				}
				return updates
			}
			if m.Method == "session/update" {
				updates++
			}
		}
	}
	call("initialize", map[string]any{"protocolVersion": 1})
	for b.Loop() {
		if got := call("session/load", map[string]any{"sessionId": id, "cwd": root, "mcpServers": []any{}}); got != n+1 {
			b.Fatalf("%d updates before the answer, want %d (the replay and the / menu)", got, n+1)
		}
		b.StopTimer()
		call("session/close", map[string]any{"sessionId": id})
		b.StartTimer()
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "MiB-file")
	b.ReportMetric(float64(n), "updates")
}

// BenchmarkList1000Sessions is session/list of the newest 100 of 1,000 sessions on the root (written a minute
// apart), through the real broker (target: under 50 ms).
func BenchmarkList1000Sessions(b *testing.B) {
	e := newEnv(b)
	start := time.Now().Add(-1000 * time.Minute)
	for i := range 1000 {
		id := fmt.Sprintf("s%04d", i)
		writeBigSession(b, e.home, e.root, id, 2, 2)
		at := start.Add(time.Duration(i) * time.Minute)
		os.Chtimes(e.sessionFile(id), at, at)
	}
	for b.Loop() {
		res, err := e.conn.ListSessions(e.ctx(), acp.ListSessionsRequest{Cwd: acp.Ptr(e.root)})
		if err != nil || len(res.Sessions) != 100 || res.NextCursor == nil {
			b.Fatal(len(res.Sessions), err)
		}
	}
}
