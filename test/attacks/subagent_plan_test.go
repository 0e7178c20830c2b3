package attacks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/broker/mcphost/mcptest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// mcpEnv is a broker whose user mcp.json runs this test binary as mcptest's well-behaved stdio server ("test"),
// started in a build-mode session.
func mcpEnv(t *testing.T) (*brokertest.Env, execv1.ExecServiceClient, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := brokertest.New(t)
	c := e.Client()
	sid, res := e.MCPStart(t, c, map[string]any{"test": map[string]any{"command": exe, "args": []string{mcptest.Arg, mcptest.Good}}})
	if !strings.Contains(res.GetContent(), "test") {
		t.Fatalf("mcp_start: %s %v", res.GetContent(), res.GetNotices())
	}
	return e, c, sid
}

// mcpCallOp is an mcp_call of the test server's tool with args, in mode (a subagent's plan mode, or the session's).
func mcpCallOp(tool, args string, mode execv1.Mode) *execv1.Start {
	return &execv1.Start{Mode: mode, Op: &execv1.Start_McpCall{McpCall: &execv1.McpCall{Server: "test", Tool: tool, ArgumentsJson: args}}}
}

// TestRedTeamPlanSubagentWritesNothingThroughMCP: a subagent in plan mode (Start.mode plan in a build-mode session)
// calls a stdio MCP server's tool that writes the project, and the user allows the call (or a session rule does):
// the server started under the session's build mode, with the project writable, so the write would land although
// plan mode allows no edit. Session-wide plan mode restarts stdio servers read-only; a plan-narrowed call must not
// reach one that is not. Control: the same call in the session's build mode writes. Found by red team.
func TestRedTeamPlanSubagentWritesNothingThroughMCP(t *testing.T) {
	e, c, sid := mcpEnv(t)
	call := func(name string, mode execv1.Mode) (*execv1.Result, bool) {
		args, _ := json.Marshal(map[string]string{"path": filepath.Join(e.Root, name)})
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, mcpCallOp("write", string(args), mode)),
			execv1.Choice_CHOICE_ONCE)
		if err != nil {
			t.Fatal(err)
		}
		return res, brokertest.Exists(filepath.Join(e.Root, name))
	}
	if res, wrote := call("control", execv1.Mode_MODE_BUILD); !wrote {
		t.Fatalf("control: the build-mode call should write: %s", res.GetContent())
	}
	res, wrote := call("plan-wrote", execv1.Mode_MODE_PLAN)
	if wrote {
		t.Fatalf("a plan-mode call wrote the project through an MCP server: %s %s", res.GetStatus(), res.GetContent())
	}
	if res.GetStatus() == execv1.Status_STATUS_COMPLETED || !strings.Contains(res.GetContent(), "plan mode") {
		t.Errorf("the refusal should say why (plan mode): %s %s", res.GetStatus(), res.GetContent())
	}
	// A tool that only reads is refused as well: the broker cannot tell (readOnlyHint is the server's claim).
	if res, _ := call("echo-too", execv1.Mode_MODE_PLAN); res.GetStatus() == execv1.Status_STATUS_COMPLETED {
		t.Errorf("a plan-mode call reached a writable server: %s", res.GetContent())
	}
}

// TestRedTeamPlanSubagentGivesNoInputToABuildProcess: a background shell started in build mode reads its commands
// from its standard input; a subagent in plan mode that gives it input would write the project through it. Control:
// the same input from a build-mode call writes. Found by red team.
func TestRedTeamPlanSubagentGivesNoInputToABuildProcess(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	res := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_START, Command: "sh"})
	id, _, _ := strings.Cut(strings.TrimPrefix(res.GetContent(), "id: "), "\n")
	if !strings.HasPrefix(id, "bg-") {
		t.Fatalf("start: %s", res.GetContent())
	}
	input := func(file string, mode execv1.Mode) *execv1.Result {
		op := &execv1.Start{Mode: mode, Op: &execv1.Start_ProcessManager{ProcessManager: &execv1.ProcessManager{
			Action: execv1.ProcessAction_PROCESS_ACTION_INPUT, Id: id, Input: "echo x > " + file + "\n"}}}
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	landed := func(file string) bool {
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if brokertest.Exists(filepath.Join(e.Root, file)) {
				return true
			}
		}
		return false
	}
	if res := input("control", execv1.Mode_MODE_BUILD); !landed("control") {
		t.Fatalf("control: build-mode input should write through the shell: %s", res.GetContent())
	}
	res = input("plan-wrote", execv1.Mode_MODE_PLAN)
	if landed("plan-wrote") {
		t.Fatalf("a plan-mode call wrote the project through a build-mode process: %s", res.GetContent())
	}
	if res.GetStatus() == execv1.Status_STATUS_COMPLETED || !strings.Contains(res.GetContent(), "plan mode") {
		t.Errorf("the refusal should say why (plan mode): %s %s", res.GetStatus(), res.GetContent())
	}
}
