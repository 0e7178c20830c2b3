package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
	"github.com/garuda-dev/garuda/test/editor"
)

// The built binaries, as an editor runs them: a PreToolUse hook that denies bash makes the editor's tool call end
// failed with the hook's reason, the command does not run, and at stdin's close the SessionEnd hook runs before
// garuda exits 0 with no broker left. Control: without the hook the same bash call completes
// (TestProcessStdoutOnlyProtocolAndCleanExit).
func TestProcessHookDeniesBash(t *testing.T) {
	m := &fakeOpenAI{answers: [][]string{bashAnswer("call_b", "touch ran"), textAnswer("done")}}
	settings := `{"hooks": {
		"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "cat >/dev/null; echo 'the team forbids shell commands' >&2; exit 2"}]}],
		"SessionEnd": [{"hooks": [{"type": "command", "command": "cat > \"$CLAUDE_PROJECT_DIR/ended.json\""}]}]}}`
	p := startGarudaWith(t, m, map[string]string{"settings.json": settings})
	p.initialize()
	sid := p.newSession("")
	p.promptEndsTurn(sid, "run it")
	ups, _ := p.ed.Snapshot()
	if _, st, texts := editor.ToolCall(ups, "call_b"); st != acp.ToolCallStatusFailed ||
		!strings.Contains(strings.Join(texts, ""), "the team forbids shell commands") {
		t.Fatalf("bash call %q %q", st, texts)
	}
	if _, err := os.Lstat(filepath.Join(p.root, "ran")); err == nil {
		t.Fatal("the denied command ran")
	}
	if code, _ := p.closeAndWait(); code != 0 {
		t.Errorf("garuda acp exited with %d after stdin closed, want 0", code)
	}
	data, err := os.ReadFile(filepath.Join(p.root, "ended.json"))
	if err != nil || !strings.Contains(string(data), `"hook_event_name":"SessionEnd"`) {
		t.Errorf("SessionEnd did not run at stdin's close: %q %v", data, err)
	}
	waitBrokerGone(t, waitLimit)
}
