package broker_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/policy"
)

// A stdio server whose program is missing, or is no program, did not start because of its definition: the notice
// names the program and what is wrong, not "sandbox unavailable" with the advice to run `garuda-exec doctor`.
func TestMCPServerProgramThatCannotRun(t *testing.T) {
	e := brokertest.New(t)
	plain := filepath.Join(e.Root, "notes.txt")
	brokertest.MustWrite(t, plain, "not a program\n")
	missing := filepath.Join(e.Root, "missing-server")
	c := e.Client()
	_, res := e.MCPStart(t, c, map[string]any{
		"missing": map[string]any{"command": missing}, "plain": map[string]any{"command": plain},
		"unknown": map[string]any{"command": "no-such-mcp-server"}})
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
