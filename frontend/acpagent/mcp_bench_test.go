package acpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/broker/mcphost/mcptest"
	"github.com/garuda-dev/garuda/frontend/brokerconn"
	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
	"github.com/garuda-dev/garuda/test/release"
)

// BenchmarkMCPFirstPromptFiveServers is a session's first prompt with 5 of the user's stdio servers: each started
// in the sandbox and its tools listed, in parallel, before the model's first request (the fake model answers at
// once). BenchmarkMCPFirstPromptNoServers is the same prompt without them: the difference is what listing the
// tools of 5 servers adds (target: under 50 ms). The server is mcptest's, built as a small binary of its own
// (mcptestserver), whose start is what a small real server's would be; the test binary would add its own start,
// about 4 ms of CPU a server (the init of every package the tests link).
func BenchmarkMCPFirstPromptFiveServers(b *testing.B) { benchFirstPrompt(b, 5) }

func BenchmarkMCPFirstPromptNoServers(b *testing.B) { benchFirstPrompt(b, 0) }

func BenchmarkMCPFirstPromptOneServer(b *testing.B) { benchFirstPrompt(b, 1) }

// BenchmarkMCPFirstPromptFiveServersBigProject is the first prompt with 5 servers in a project of 20,000 files in
// 1,000 folders and 3 repositories, where the command guard's scan before the servers is no longer free: the
// session's first scan walks the whole project (issue 18's BenchmarkScanCold20k), and each further scan re-reads
// what changed. BenchmarkMCPFirstPromptNoServersBigProject is the same prompt without servers (no scan at all).
func BenchmarkMCPFirstPromptFiveServersBigProject(b *testing.B) {
	benchFirstPrompt(b, 5, testenv.BigProject)
}

func BenchmarkMCPFirstPromptNoServersBigProject(b *testing.B) {
	benchFirstPrompt(b, 0, testenv.BigProject)
}

var (
	serverOnce  sync.Once
	serverBin   string
	serverBuild error
)

// mcpTestServer builds mcptest's server as a binary of its own, once per run of the tests (or takes the one
// $MCPTEST_SERVER names, built before: a profile of the benchmark then holds no build).
func mcpTestServer(b testing.TB) string {
	if p := os.Getenv("MCPTEST_SERVER"); p != "" {
		return p
	}
	serverOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcptestserver")
		if err != nil {
			serverBuild = err
			return
		}
		serverBin = filepath.Join(dir, "mcptestserver")
		if out, err := release.Command("../..", "", serverBin, "./broker/mcphost/mcptest/mcptestserver").CombinedOutput(); err != nil {
			serverBuild = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if serverBuild != nil {
		b.Fatal(serverBuild)
	}
	return serverBin
}

// settle lets the kernel finish tearing down the closed session's sandboxes (their network namespaces are freed
// by a kernel worker after the processes are gone), so that the next first prompt is not measured beside it.
func settle() { time.Sleep(150 * time.Millisecond) }

func benchFirstPrompt(b *testing.B, n int, project ...func(testing.TB, string)) {
	server := mcpTestServer(b) // before newEnv changes HOME, and with it the build cache
	e := newEnv(b)
	for _, fill := range project {
		fill(b, e.root)
	}
	servers := map[string]any{}
	for i := range n {
		servers[fmt.Sprintf("s%d", i)] = map[string]any{"command": server, "args": []string{mcptest.Good}}
	}
	def, _ := json.Marshal(map[string]any{"mcpServers": servers})
	e.writeHome("mcp.json", string(def))
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
		settle()
		b.StartTimer()
	}
}

// BenchmarkMCPCallThroughBroker is one mcp_call of the echo tool (allowed by a rule) through the broker: the gRPC
// call, the decision, the audit records and the MCP request. BenchmarkCallDirect in broker/mcphost is the same MCP
// request without the broker: the difference is the broker's share (target: under 2 ms).
func BenchmarkMCPCallThroughBroker(b *testing.B) {
	e := newEnv(b)
	e.writeHome("mcp.json", mcpJSON(b, "bench", mcptest.Good, nil))
	e.writeHome("settings.json", `{"permissions": {"allow": ["mcp__bench__echo"]}}`)
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
