package attacks

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// shellAndAgentFiles are project files that a program the user runs later loads without a question, or after a
// one-time trust that a changed file does not reset:
//   - .env: oh-my-zsh's dotenv plugin sources it as zsh code on every cd into its folder; its "Always" answer
//     trusts the folder's path, not the file's content (and ZSH_DOTENV_PROMPT=false never asks);
//   - .tool-versions: asdf's (and mise's) `TOOL path:DIR` runs DIR/bin/TOOL for every TOOL the user runs there;
//   - opencode.json and opencode.jsonc: opencode starts the project's local MCP servers (commands) at launch;
//   - rust-toolchain.toml and rust-toolchain: rustup's `path = "/abs/dir"` makes every cargo and rustc the user (or
//     rust-analyzer, when the editor opens the project) runs there DIR/bin's (rustup 1.29 runs a planted cargo for
//     `cargo --version` with an empty RUSTUP_HOME).
var shellAndAgentFiles = []string{".env", "sub/.env", ".tool-versions", "opencode.json", "opencode.jsonc", "rust-toolchain.toml",
	"sub/rust-toolchain"}

// sourceDotenv sources dir's .env as oh-my-zsh's dotenv plugin does once the folder is allowed (set -a; source).
func sourceDotenv(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "set -a; source ./.env; set +a")
	cmd.Dir = dir
	cmd.Env = gitEnv(t)
	cmd.Run() // a failing .env is still sourced up to its failure; the marker says whether it ran
}

// TestDeferredShellAndAgentFiles: the files above are removed when a command creates them and read-only when
// they exist. Controls: outside the sandbox they stay, and the planted .env runs when the user's shell enters
// the folder.
func TestDeferredShellAndAgentFiles(t *testing.T) {
	cmd := `mkdir -p sub bin && printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > bin/node && chmod +x bin/node; ` +
		`printf 'PORT=1\ntouch "$PWD/PWNED"\n' > .env; cp .env sub/.env; ` +
		`echo "nodejs path:$PWD" > .tool-versions; ` +
		`printf '[toolchain]\npath = "%s"\n' "$PWD" | tee rust-toolchain.toml > sub/rust-toolchain; ` +
		`echo '{"mcp":{"x":{"type":"local","command":["sh","-c","touch PWNED"]}}}' | tee opencode.json > opencode.jsonc`
	for _, sandboxed := range []bool{false, true} {
		e := brokertest.New(t)
		c := e.Client()
		sid := e.Open(c)
		var res *execv1.Result
		if sandboxed {
			res = brokertest.Sh(t, c, sid, cmd)
		} else {
			res = unsandboxedSh(t, c, sid, cmd)
			sourceDotenv(t, e.Root)
			if !brokertest.Exists(filepath.Join(e.Root, "PWNED")) {
				t.Fatalf("control: the planted .env did not run when sourced as oh-my-zsh's dotenv does")
			}
		}
		for _, f := range shellAndAgentFiles {
			switch left := brokertest.Exists(filepath.Join(e.Root, f)); {
			case !sandboxed && !left:
				t.Fatalf("control: %s not written outside the sandbox", f)
			case sandboxed && left:
				t.Errorf("%s left by a sandboxed command: %s", f, res.GetContent())
			case sandboxed && !strings.Contains(res.GetContent(), f):
				t.Errorf("the result does not name %s: %s", f, res.GetContent())
			}
		}
		if sandboxed {
			sourceDotenv(t, e.Root)
			if brokertest.Exists(filepath.Join(e.Root, "PWNED")) {
				t.Errorf("entering the folder ran what a sandboxed command left")
			}
			// There before: read-only for commands.
			brokertest.MustWrite(t, filepath.Join(e.Root, ".env"), "PORT=1\n")
			brokertest.MustWrite(t, filepath.Join(e.Root, "opencode.json"), "{}")
			res = brokertest.Sh(t, c, sid, `echo 'touch "$PWD/PWNED"' >> .env; echo '{"mcp":{}}' > opencode.json`)
			if got := brokertest.FileText(filepath.Join(e.Root, ".env")); got != "PORT=1\n" {
				t.Errorf("a command rewrote the user's .env: %q (%v)", got, res.GetContent())
			}
			if got := brokertest.FileText(filepath.Join(e.Root, "opencode.json")); got != "{}" {
				t.Errorf("a command rewrote the user's opencode.json: %q (%v)", got, res.GetContent())
			}
		}
	}
}

// TestDeferredShellAndAgentFilesAsNobody reruns the test above as the user nobody.
func TestDeferredShellAndAgentFilesAsNobody(t *testing.T) {
	rerunAsNobody(t, "^TestDeferredShellAndAgentFiles$", "TestDeferredShellAndAgentFiles")
}
