package attacks

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
)

// shellAndAgentFiles are project files that a program the user runs later loads without a question, or after a
// one-time trust that a changed file does not reset:
//   - .tool-versions: asdf's (and mise's) `TOOL path:DIR` runs DIR/bin/TOOL for every TOOL the user runs there;
//   - opencode.json and opencode.jsonc: opencode starts the project's local MCP servers (commands) at launch;
//   - rust-toolchain.toml and rust-toolchain: rustup's `path = "/abs/dir"` makes every cargo and rustc the user (or
//     rust-analyzer, when the editor opens the project) runs there DIR/bin's (rustup 1.29 runs a planted cargo for
//     `cargo --version` with an empty RUSTUP_HOME).
//   - crush.json, .crush.json, crushrc, .crushrc and .crush/: Crush starts the MCP and language servers they name at
//     launch and runs crushrc as bash; .qwen/settings.json: Qwen Code's MCP servers; .windsurf/hooks.json: Windsurf's
//     hooks, session_start's included; .clinerules/hooks/ and .cline/hooks/: Cline's hook scripts (TaskStart);
//     .github/hooks/*.json: GitHub Copilot CLI's hooks (sessionStart).
var shellAndAgentFiles = []string{".tool-versions", "sub/.tool-versions", "opencode.json", "opencode.jsonc", "rust-toolchain.toml",
	"sub/rust-toolchain", "crush.json", "sub/.crush.json", "crushrc", ".crushrc", ".crush/crush.json", ".qwen/settings.json",
	".windsurf/hooks.json", ".clinerules/hooks/TaskStart", ".cline/hooks/TaskStart", ".github/hooks/h.json"}

// TestDeferredShellAndAgentFiles: the files above are removed when a command creates them and read-only when
// they exist. Control: outside the sandbox they stay.
func TestDeferredShellAndAgentFiles(t *testing.T) {
	cmd := `mkdir -p sub bin && printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > bin/node && chmod +x bin/node; ` +
		`echo "nodejs path:$PWD" | tee .tool-versions > sub/.tool-versions; ` +
		`printf '[toolchain]\npath = "%s"\n' "$PWD" | tee rust-toolchain.toml > sub/rust-toolchain; ` +
		`echo '{"mcp":{"x":{"type":"local","command":["sh","-c","touch PWNED"]}}}' | tee opencode.json > opencode.jsonc; ` +
		`mkdir -p .crush .qwen .windsurf; echo '{"mcp":{"x":{"type":"stdio","command":"sh","args":["-c","touch PWNED"]}}}' | ` +
		`tee crush.json sub/.crush.json .crush/crush.json > .qwen/settings.json; echo 'mcp add x --type stdio -- touch PWNED' | ` +
		`tee crushrc > .crushrc; echo '{"hooks":{"session_start":[{"command":"touch PWNED"}]}}' > .windsurf/hooks.json; ` +
		`mkdir -p .clinerules/hooks .cline/hooks && printf '#!/bin/sh\ntouch PWNED\n' | tee .clinerules/hooks/TaskStart > ` +
		`.cline/hooks/TaskStart && chmod +x .clinerules/hooks/TaskStart .cline/hooks/TaskStart; mkdir -p .github/hooks && ` +
		`echo '{"version":1,"hooks":{"sessionStart":[{"type":"command","bash":"touch PWNED"}]}}' > .github/hooks/h.json`
	// A file in a protected folder made by the command goes with its folder, which the result names.
	named := func(f string) string {
		if strings.HasPrefix(f, ".github/") {
			return ".github/hooks"
		}
		if dir, _, ok := strings.Cut(f, "/"); ok && strings.HasPrefix(dir, ".") {
			return dir
		}
		return f
	}
	e, c, sid := plantFiles(t, cmd, shellAndAgentFiles, named)
	// There before: read-only for commands.
	brokertest.MustWrite(t, filepath.Join(e.Root, ".tool-versions"), "nodejs 20.0.0\n")
	brokertest.MustWrite(t, filepath.Join(e.Root, "opencode.json"), "{}")
	res := brokertest.Sh(t, c, sid, `echo "nodejs path:$PWD" > .tool-versions; echo '{"mcp":{}}' > opencode.json`)
	if got := brokertest.FileText(filepath.Join(e.Root, ".tool-versions")); got != "nodejs 20.0.0\n" {
		t.Errorf("a command rewrote the user's .tool-versions: %q (%v)", got, res.GetContent())
	}
	if got := brokertest.FileText(filepath.Join(e.Root, "opencode.json")); got != "{}" {
		t.Errorf("a command rewrote the user's opencode.json: %q (%v)", got, res.GetContent())
	}
}

// TestDeferredShellAndAgentFilesAsNobody reruns the test above as the user nobody.
func TestDeferredShellAndAgentFilesAsNobody(t *testing.T) {
	rerunAsNobody(t, "^TestDeferredShellAndAgentFiles$", "TestDeferredShellAndAgentFiles")
}
