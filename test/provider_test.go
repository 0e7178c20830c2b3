package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/frontend/model/fakeprovider"
)

// The confined front end (Landlock: reads only the DNS files and the CA certificates; a static binary with Go's own
// resolver) reaches a provider by its host name: "localhost" is looked up in /etc/hosts after confinement.
func TestAcpReachesProviderByName(t *testing.T) {
	hosts, _ := os.ReadFile("/etc/hosts")
	if !strings.Contains(string(hosts), "localhost") {
		t.Skip("/etc/hosts names no localhost here")
	}
	srv, err := fakeprovider.Serve("127.0.0.1:0", []fakeprovider.Turn{{Text: "reached by name"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	if byName == srv.URL {
		t.Fatalf("the fake provider's URL %s has no 127.0.0.1 to replace", srv.URL)
	}
	home := t.TempDir()
	models := fmt.Sprintf(`{"default":"fake","providers":{"local":{"type":"anthropic","base_url":%q,"api_key_env":"LOCAL_API_KEY"}},"models":{"fake":{"provider":"local","id":"fake-model"}}}`, byName)
	if err := os.WriteFile(filepath.Join(home, "models.json"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startEditor(t, home, "LOCAL_API_KEY=k", "TMPDIR="+t.TempDir())
	e.request("initialize", initParams())
	res := e.request("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}})
	r, _ := res["result"].(map[string]any)
	sid, _ := r["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new: %v\nstderr:\n%s", res, e.stderr)
	}
	res = e.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
	if r, _ := res["result"].(map[string]any); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v\nstderr:\n%s", res, e.stderr)
	}
	if all := strings.Join(e.lines, ""); !strings.Contains(all, "reached by name") {
		t.Errorf("the model's text never reached the editor:\n%s", all)
	}
	if code, _ := e.closeAndWait(); code != 0 {
		t.Errorf("exit %d\nstderr:\n%s", code, e.stderr)
	}
}
