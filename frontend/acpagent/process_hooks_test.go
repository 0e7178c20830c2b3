package acpagent

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// The built binaries, as an editor runs them: a PreToolUse hook that denies bash makes the editor's tool call end
// failed with the hook's reason, the command does not run, and at stdin's close the SessionEnd hook runs before
// garuda exits 0 with no broker left. Control: without the hook the same bash call completes
// (TestProcessStdoutOnlyProtocolAndCleanExit).
func TestProcessHookDeniesBash(t *testing.T) {
	m := &fakeOpenAI{answers: [][]string{bashAnswer("call_b", "touch ran"), textAnswer("done")}}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	base := t.TempDir()
	home := filepath.Join(base, "garuda-home")
	os.MkdirAll(home, 0o755)
	settings := `{"hooks": {
		"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "cat >/dev/null; echo 'the team forbids shell commands' >&2; exit 2"}]}],
		"SessionEnd": [{"hooks": [{"type": "command", "command": "cat > \"$CLAUDE_PROJECT_DIR/ended.json\""}]}]}}`
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	models := fmt.Sprintf(`{"default":"fake","providers":{"local":{"type":"openai","base_url":%q,"api_key_env":"LOCAL_API_KEY"}},"models":{"fake":{"provider":"local","id":"fake-model"}}}`, srv.URL+"/v1")
	p := startGarudaIn(t, base, models)
	if _, err := p.conn.Initialize(p.ctx(t), acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	ns, err := p.conn.NewSession(p.ctx(t), acp.NewSessionRequest{Cwd: p.root, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.conn.Prompt(p.ctx(t), acp.PromptRequest{SessionId: ns.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("run it")}})
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", res, err)
	}
	ups, _ := p.ed.snapshot()
	if _, st, texts := toolCall(ups, "call_b"); st != acp.ToolCallStatusFailed || !strings.Contains(strings.Join(texts, ""), "the team forbids shell commands") {
		t.Fatalf("bash call %q %q", st, texts)
	}
	if _, err := os.Lstat(filepath.Join(p.root, "ran")); err == nil {
		t.Fatal("the denied command ran")
	}
	p.stdin.Close()
	select {
	case err := <-p.waited:
		if err != nil {
			t.Errorf("garuda acp exited with %v after stdin closed, want 0", err)
		}
		p.waited <- err
	case <-time.After(waitLimit):
		t.Fatal("garuda acp did not exit after stdin closed")
	}
	data, err := os.ReadFile(filepath.Join(p.root, "ended.json"))
	if err != nil || !strings.Contains(string(data), `"hook_event_name":"SessionEnd"`) {
		t.Errorf("SessionEnd did not run at stdin's close: %q %v", data, err)
	}
	deadline := time.Now().Add(waitLimit)
	for len(brokerPIDs(binDir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("garuda-exec still running after garuda exited: %v", brokerPIDs(binDir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
