package broker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// A project's instructions and MCP servers are read through no symbolic link: AGENTS.md linked to a file a read rule
// hides does not bring that file to the model (CLAUDE.md is read instead), nor does a linked .mcp.json put a hidden
// file's server in a consent question; a link out of the project is refused too. Fails on the code before broker/
// conffile: os.Root followed the links inside the project (the hidden text became the session's instructions).
// Control: the same files as regular files are read.
func TestProjectConfigFollowsNoLink(t *testing.T) {
	dir := t.TempDir()
	home, root, outside := filepath.Join(dir, "home"), filepath.Join(dir, "project"), filepath.Join(dir, "outside")
	for p, s := range map[string]string{
		filepath.Join(home, "settings.json"):        `{"permissions":{"deny":["Read(./secret)"]}}`,
		filepath.Join(root, "secret", "notes.md"):   "HIDDEN-INSTRUCTIONS",
		filepath.Join(root, "secret", "mcp.json"):   `{"mcpServers":{"hidden":{"command":"HIDDEN-SERVER"}}}`,
		filepath.Join(root, "CLAUDE.md"):            "claude instructions",
		filepath.Join(outside, "mcp.json"):          `{"mcpServers":{"outside":{"command":"OUTSIDE-SERVER"}}}`,
		filepath.Join(root, "control", "AGENTS.md"): "control instructions",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{
		"AGENTS.md": "secret/notes.md", ".mcp.json": "secret/mcp.json", ".garuda": "../outside",
	} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	s := NewService(Config{Home: home, ManagedPolicy: filepath.Join(dir, "managed.json"), Version: "test"})
	defer s.Shutdown()
	ctx := context.Background()
	res, err := s.OpenSession(ctx, &execv1.OpenSessionRequest{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.GetInstructions(); got != "claude instructions" || strings.Contains(got, "HIDDEN") {
		t.Errorf("instructions %q from %s, want CLAUDE.md's", got, res.GetInstructionsFile())
	}
	sess, err := s.session(ctx, res.GetSessionId())
	if err != nil {
		t.Fatal(err)
	}
	srvs, notices := s.mcpServers(sess)
	for _, srv := range srvs {
		t.Errorf("MCP server %q from %s read through a link", srv.Name, srv.File)
	}
	if n := strings.Join(notices, "\n"); !strings.Contains(n, ".mcp.json is a symbolic link") ||
		!strings.Contains(n, ".garuda/mcp.json is a symbolic link") || strings.Contains(n, "HIDDEN") {
		t.Errorf("notices %q, want each link named", n)
	}
	// Control: the same kind of files, regular, are read.
	ctl, err := s.OpenSession(ctx, &execv1.OpenSessionRequest{Root: filepath.Join(root, "control")})
	if err != nil || ctl.GetInstructions() != "control instructions" {
		t.Fatalf("control: %q %v", ctl.GetInstructions(), err)
	}
}
