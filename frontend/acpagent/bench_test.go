package acpagent

import (
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/model"
)

// BenchmarkInitialize is one initialize round trip over the pipes (the process spawn is in make bench).
func BenchmarkInitialize(b *testing.B) {
	e := newEnv(b)
	for b.Loop() {
		if _, err := e.conn.Initialize(e.ctx(), acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewSession is one session/new: prepare and open through the real broker (target: under 10 ms).
func BenchmarkNewSession(b *testing.B) {
	e := newEnv(b)
	for b.Loop() {
		if _, err := e.conn.NewSession(e.ctx(), acp.NewSessionRequest{Cwd: e.root, McpServers: []acp.McpServer{}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTurnEcho is a turn with two model requests and one sandboxed `echo hello` (target: under 50 ms of
// Garuda's own time; the fake model answers at once).
func BenchmarkTurnEcho(b *testing.B) {
	e := newEnv(b)
	sid := e.newSession()
	for b.Loop() {
		e.fake.Push(tool("toolu_e", "bash", `{"command":"echo hello"}`), model.TextStep("done"))
		res, err := e.prompt(sid, acp.TextBlock("say hello"))
		if err != nil || res.StopReason != acp.StopReasonEndTurn {
			b.Fatal(res, err)
		}
	}
}
