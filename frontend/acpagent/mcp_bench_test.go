package acpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/broker/mcphost/mcptest"
	"github.com/garuda-dev/garuda/frontend/brokerconn"
	"github.com/garuda-dev/garuda/frontend/model"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// BenchmarkMCPFirstPromptFiveServers is a session's first prompt with 5 of the user's stdio servers: each started
// in the sandbox and its tools listed, in parallel, before the model's first request (the fake model answers at
// once). BenchmarkMCPFirstPromptNoServers is the same prompt without them: the difference is what listing the
// tools of 5 servers adds (target: under 50 ms).
func BenchmarkMCPFirstPromptFiveServers(b *testing.B) { benchFirstPrompt(b, 5) }

func BenchmarkMCPFirstPromptNoServers(b *testing.B) { benchFirstPrompt(b, 0) }

func BenchmarkMCPFirstPromptOneServer(b *testing.B) { benchFirstPrompt(b, 1) }

func benchFirstPrompt(b *testing.B, n int) {
	e := newEnv(b)
	exe, _ := os.Executable()
	servers := map[string]any{}
	for i := range n {
		servers[fmt.Sprintf("s%d", i)] = map[string]any{"command": exe, "args": []string{mcptest.Arg, mcptest.Good}}
	}
	def, _ := json.Marshal(map[string]any{"mcpServers": servers})
	if err := os.WriteFile(filepath.Join(e.home, "mcp.json"), def, 0o600); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		sid := e.newSession()
		e.fake.Push(model.TextStep("ok"))
		b.StartTimer()
		if res, err := e.prompt(sid, acp.TextBlock("hi")); err != nil || res.StopReason != acp.StopReasonEndTurn {
			b.Fatal(res, err)
		}
		b.StopTimer()
		if len(e.fake.Requests()[len(e.fake.Requests())-1].Tools) < 5*n {
			b.Fatal("the servers' tools were not offered")
		}
		e.conn.CloseSession(e.ctx(), acp.CloseSessionRequest{SessionId: acp.SessionId(sid)})
		b.StartTimer()
	}
}

// BenchmarkMCPCallThroughBroker is one mcp_call of the echo tool (allowed by a rule) through the broker: the gRPC
// call, the decision, the audit records and the MCP request. BenchmarkCallDirect in broker/mcphost is the same MCP
// request without the broker: the difference is the broker's share (target: under 2 ms).
func BenchmarkMCPCallThroughBroker(b *testing.B) {
	e := newEnv(b)
	if err := os.WriteFile(filepath.Join(e.home, "mcp.json"), []byte(mcpJSON(b, "bench", mcptest.Good, nil)), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "settings.json"), []byte(`{"permissions": {"allow": ["mcp__bench__echo"]}}`),
		0o600); err != nil {
		b.Fatal(err)
	}
	sid := e.newSession()
	r := &brokerconn.Runner{Client: e.broker, SessionID: sid}
	ctx := context.Background()
	if _, err := r.Call(ctx, &execv1.Start{Op: &execv1.Start_McpStart{McpStart: &execv1.McpStart{}}}, nil); err != nil {
		b.Fatal(err)
	}
	start := func() *execv1.Start {
		return &execv1.Start{Op: &execv1.Start_McpCall{McpCall: &execv1.McpCall{Server: "bench", Tool: "echo", ArgumentsJson: `{"text":"x"}`}}}
	}
	for b.Loop() {
		res, err := r.Call(ctx, start(), nil)
		if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			b.Fatal(res, err)
		}
	}
}
