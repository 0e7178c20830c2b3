package attacks

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// plantNested makes a nested repository in dir whose core.fsmonitor is a program leaving PWNED where git runs it.
func plantNested(dir string) string {
	return "cd " + dir + " && " + planter("fsm") + `git init -q nested && git -C nested config core.fsmonitor "$PWD/fsm"`
}

// TestRedTeamMCPCallLeavesNothingWhenItReturns: a stdio MCP server's tool (here a shell tool the model drives) plants
// a nested repository with core.fsmonitor during its call. As after a command, what the call left must be undone
// before its result returns: the user's git (a shell prompt, the editor's git view) may run the moment the turn
// ends. The guard's check after a call ran beside the result, and a call within 2 s of another waited for the
// next round: git status right after the second call ran the planted program. Control: the same plant made outside
// the sandbox runs in the user's git status. Found by red team.
func TestRedTeamMCPCallLeavesNothingWhenItReturns(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	e, c, sid := mcpEnv(t)
	t.Run("control", func(t *testing.T) {
		dir := t.TempDir()
		if res := unsandboxedSh(t, c, sid, plantNested(dir)); res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			t.Fatalf("control plant: %s", res.GetContent())
		}
		if asUser(t, filepath.Join(dir, "nested"), "status"); !brokertest.Exists(filepath.Join(dir, "nested", "PWNED")) {
			t.Fatal("control: the planted fsmonitor should run in the user's git status")
		}
	})
	call := func(cmd string) string {
		args, _ := json.Marshal(map[string]string{"text": cmd})
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, mcpCallOp("sh", string(args), 0)),
			execv1.Choice_CHOICE_ONCE)
		if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			t.Fatalf("mcp_call sh %q: %v %s", cmd, err, res.GetContent())
		}
		return res.GetContent()
	}
	call("true") // a first call: its check is under way, or just done, when the next call returns
	said := call(plantNested(e.Root))
	nested := filepath.Join(e.Root, "nested")
	asUser(t, nested, "status")
	if brokertest.Exists(filepath.Join(nested, "PWNED")) {
		t.Errorf("the user's git status, run as the MCP call returned, ran the fsmonitor the call planted (%s)",
			strings.TrimSpace(asUser(t, nested, "config", "core.fsmonitor")))
	}
	if !strings.Contains(said, "Undone") || !strings.Contains(said, "fsmonitor") {
		t.Errorf("the call's result should say what was undone after it: %s", said)
	}
}
