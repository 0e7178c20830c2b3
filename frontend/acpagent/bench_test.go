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

// BenchmarkChunkToNotification streams an answer of 1000 text chunks through the agent loop and the ACP layer to
// the client; chunk-ns is the time from one chunk to its agent_message_chunk notification read by the editor
// (target: under 1 ms).
func BenchmarkChunkToNotification(b *testing.B) {
	const chunks = 1000
	e := newEnv(b)
	sid := e.newSession()
	deltas := make([]model.FakeDelta, chunks)
	for i := range deltas {
		deltas[i] = model.FakeDelta{Kind: model.DeltaText, Text: "word "}
	}
	b.ResetTimer()
	for b.Loop() {
		step := model.TextStep("done")
		step.Deltas = deltas
		e.fake.Push(step)
		res, err := e.prompt(sid, acp.TextBlock("talk"))
		if err != nil || res.StopReason != acp.StopReasonEndTurn {
			b.Fatal(res, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunks), "chunk-ns")
}

// BenchmarkTurnWithSubagent is a turn whose model hands a task to explore, which answers at once: three model
// requests (the fake answers at once). BenchmarkTurnWithPlan is the same turn with a local call that starts no
// loop (two requests); the difference is what starting a subagent adds (target: under 5 ms).
func BenchmarkTurnWithSubagent(b *testing.B) {
	e := newEnv(b)
	sid := e.newSession()
	for b.Loop() {
		e.fake.Push(tool("toolu_s", "subagent", `{"agent":"explore","task":"look"}`), model.TextStep("found"), model.TextStep("done"))
		res, err := e.prompt(sid, acp.TextBlock("explore"))
		if err != nil || res.StopReason != acp.StopReasonEndTurn {
			b.Fatal(res, err)
		}
	}
}

func BenchmarkTurnWithPlan(b *testing.B) {
	e := newEnv(b)
	sid := e.newSession()
	for b.Loop() {
		e.fake.Push(tool("toolu_t", "todo", `{"todos":[{"content":"look","status":"pending"}]}`), model.TextStep("done"))
		res, err := e.prompt(sid, acp.TextBlock("plan"))
		if err != nil || res.StopReason != acp.StopReasonEndTurn {
			b.Fatal(res, err)
		}
	}
}
