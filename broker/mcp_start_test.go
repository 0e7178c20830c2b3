package broker_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// A stdio server whose program is missing, or is no program, did not start because of its definition: the notice
// names the program and what is wrong, not "sandbox unavailable" with the advice to run `garuda-exec doctor`.
func TestMCPServerProgramThatCannotRun(t *testing.T) {
	e := brokertest.New(t)
	plain := filepath.Join(e.Root, "notes.txt")
	brokertest.MustWrite(t, plain, "not a program\n")
	missing := filepath.Join(e.Root, "missing-server")
	def, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"missing": map[string]any{"command": missing}, "plain": map[string]any{"command": plain},
		"unknown": map[string]any{"command": "no-such-mcp-server"}}})
	brokertest.MustWrite(t, filepath.Join(e.Home, "mcp.json"), string(def))
	c := e.Client()
	sid := e.Open(c)
	res, _, err := brokertest.Run(t,
		brokertest.Start(t, c, brokertest.Ctx(t), sid, &execv1.Start{Op: &execv1.Start_McpStart{McpStart: &execv1.McpStart{}}}),
		execv1.Choice_CHOICE_ONCE)
	if err != nil {
		t.Fatal(err)
	}
	notices := strings.Join(res.GetNotices(), "\n")
	for _, want := range []string{
		`"missing" (` + filepath.Join(e.Home, "mcp.json") + `:1) did not start: its program could not be started: cannot run ` +
			missing + `: no such file or directory`,
		`"plain" (` + filepath.Join(e.Home, "mcp.json") + `:1) did not start: its program could not be started: cannot run ` +
			plain + `: permission denied`,
		`"unknown" (` + filepath.Join(e.Home, "mcp.json") + `:1) did not start: its program could not be started: cannot run ` +
			`no-such-mcp-server: not found on the command's PATH`,
	} {
		if !strings.Contains(notices, want) {
			t.Errorf("no notice %q in:\n%s", want, notices)
		}
	}
	for _, wrong := range []string{"doctor", "sandbox unavailable", "sandbox set-up"} {
		if strings.Contains(notices, wrong) {
			t.Errorf("the notices blame the sandbox (%q):\n%s", wrong, notices)
		}
	}
	// The audit log says that they did not start, and why, not only that their start was allowed.
	var ended string
	for _, r := range brokertest.AuditRecords(t, e.Home) {
		if r.Event == audit.EventExecution && r.Op == policy.OpMCPStart {
			ended = r.Input
		}
	}
	for _, name := range []string{"missing", "plain", "unknown"} {
		if !strings.Contains(ended, `MCP server "`+name+`"`) || !strings.Contains(ended, "its program could not be started") {
			t.Errorf("the execution record of mcp_start does not say that %s did not start: %q", name, ended)
		}
	}
}
