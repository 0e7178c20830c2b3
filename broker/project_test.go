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

// The instructions above the root are looked for only where the read policy allows reading without a question:
// reads outside the project folder ask, and nothing can be asked while a session opens, so by default neither the
// repository's AGENTS.md above the root nor its .git is touched. Control: a rule that allows reading the repository
// brings its AGENTS.md (and, on the code before, it came without the rule).
func TestInstructionsAboveTheRootOnlyWhereReadsAreAllowed(t *testing.T) {
	dir := t.TempDir()
	repo, home := filepath.Join(dir, "repo"), filepath.Join(dir, "home")
	root := filepath.Join(repo, "sub")
	for _, d := range []string{filepath.Join(repo, ".git"), root, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "AGENTS.md"), []byte("the repository's instructions"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func() *execv1.OpenSessionResponse {
		s := NewService(Config{Home: home, ManagedPolicy: filepath.Join(dir, "managed.json"), Version: "test"})
		t.Cleanup(s.Shutdown)
		res, err := s.OpenSession(context.Background(), &execv1.OpenSessionRequest{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := open(); res.GetInstructions() != "" {
		t.Errorf("with reads above the root asked, the instructions came from %s: %q", res.GetInstructionsFile(), res.GetInstructions())
	}
	rule := `{"permissions": {"allow": ["read_file(//` + strings.TrimPrefix(filepath.ToSlash(repo), "/") + `/**)"]}}`
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(rule), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := open(); res.GetInstructions() != "the repository's instructions" {
		t.Errorf("control: with reads of the repository allowed, instructions %q from %q", res.GetInstructions(), res.GetInstructionsFile())
	}
}
