package acpagent

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

func processAnswer(id string, input map[string]any) []string {
	args, _ := json.Marshal(input)
	b, _ := json.Marshal(string(args))
	return []string{
		chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"`+id+`","type":"function","function":{"name":"process_manager","arguments":`+string(b)+`}}]}`, ""),
		chunk(`{}`, "tool_calls"),
	}
}

// A background process that ignores SIGTERM and forks a setsid child is gone once the front end is SIGKILLed:
// the broker dies with its parent and its commands' pid namespaces with it.
func TestProcessBackgroundGoneAfterSIGKILL(t *testing.T) {
	m := &fakeOpenAI{answers: [][]string{
		processAnswer("call_bg", map[string]any{"action": "start", "command": "trap '' TERM; (setsid sleep 61.61 &); sleep 61.62"}),
		textAnswer("started"),
	}}
	p := startGaruda(t, m)
	if _, err := p.conn.Initialize(p.ctx(t), acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	ns, err := p.conn.NewSession(p.ctx(t), acp.NewSessionRequest{Cwd: p.root, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.conn.Prompt(p.ctx(t), acp.PromptRequest{SessionId: ns.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("start it")}})
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", res, err)
	}
	waitAlive(t, "61.61", "61.62") // the negative control: both run after the turn ended
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "61.61")
	waitGone(t, "61.62")
	deadline := time.Now().Add(waitLimit)
	for len(brokerPIDs(binDir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("garuda-exec still running after garuda was killed: %v", brokerPIDs(binDir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
