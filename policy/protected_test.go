package policy

import (
	"path"
	"testing"
)

func TestProtected(t *testing.T) {
	yes := []string{
		".git/hooks/pre-commit", ".git/hooks", ".git/config", ".git", "sub/.git", "vendor/lib/.git/hooks/post-checkout",
		"vendor/lib/.git/config", ".git/modules/lib/hooks/x", ".git/modules/lib/config", ".git/info/attributes",
		".gitmodules", "a/.gitmodules", ".garuda/settings.json", ".claude/settings.json", ".agents/x", ".vscode/tasks.json",
		".idea/workspace.xml", ".envrc", "pkg/.envrc", ".mcp.json", ".bashrc", ".zshrc", ".profile", "home/.bash_profile",
		".GIT/HOOKS/pre-commit", ".Git/Config", ".VSCode/settings.json", ".ENVRC", ".g\u200cit/hooks/x", ".vs\ufeffcode/a",
		"/.git/config/", ".helix/languages.toml", "mise.toml", ".mise.toml", "sub/mise.local.toml", "mise.dev.toml",
		".mise.dev.local.toml", ".config/mise/config.toml", ".config/mise.toml", "mise/config.toml", ".mise/config.toml",
		"MISE.TOML", "mi\u200bse.toml", ".devcontainer/devcontainer.json", ".devcontainer.json",
		".cursor/mcp.json", ".gemini/settings.json", ".codex/config.toml", ".continue/config.yaml", ".opencode/x",
		".roo/mcp.json", ".kilocode/mcp.json", ".amazonq/mcp.json", ".kiro/settings/mcp.json", ".aider.conf.yml", ".continuerc.json",
		".tool-versions", "app/.TOOL-VERSIONS", "opencode.json", "sub/OpenCode.jsonc", "rust-toolchain.toml", "a/rust-toolchain",
		"crush.json", ".crush.json", "sub/Crush.json", "crushrc", ".crushrc", ".crush/crush.json", ".qwen/settings.json",
		".windsurf/hooks.json", ".clinerules/hooks/TaskStart", ".clinerules", ".cline/hooks/TaskStart", "sub/.gvimrc",
		".github/hooks/hooks.json", ".GitHub/Hooks", ".hg/hgrc", "lib/.hg/hgrc-not-shared", ".hg/sharedpath",
		".git/lazygit.yml", "sub/.git/lazygit.yml", ".git/worktrees/w/lazygit.yml", ".lazygit.yml", "a/.Lazygit.yml",
	}
	no := []string{"", "src/main.go", ".gitignore", ".github/workflows/ci.yml", "git/hooks/x", ".git/objects/ab/cd",
		".git/HEAD", "hooks/pre-commit", "config", "docs/.vscode.md", "envrc", ".mcp.json.bak", "misery.toml",
		"src/mise.go", "mise.toml.bak", ".config/nextest.toml", "helix/config.toml", ".env", "app/.env", ".env.example",
		"opencode.go", "tool-versions", "rust-toolchain.md", "crush.go", "crush.json.bak", "CRUSH.md", "windsurf/hooks.json",
		"github/hooks/x", "hooks/x", ".hg/store/data/x.i", ".hg/requires", "hgrc", "lazygit.yml", "a/lazygit.yml",
		".lazygit.yml.bak"}
	for _, p := range yes {
		if !Protected(p) {
			t.Errorf("Protected(%q) = false", p)
		}
	}
	for _, p := range no {
		if Protected(p) {
			t.Errorf("Protected(%q) = true", p)
		}
	}
}

// TestMayBeProtectedLetsEveryProtectedNameThrough: the walks' quick test of a name passes the last name of every
// protected path whose parent is not protected itself (else the walk would not ask Protected about it).
func TestMayBeProtectedLetsEveryProtectedNameThrough(t *testing.T) {
	paths := []string{".envrc", "a/.envrc", "x.code-workspace", "mise.toml", "sub/mise", "MISE.dev.toml", "mi\u200bse.toml",
		".config/mise/config.toml", ".VSCode", ".helix", ".g\u200cit", "opencode.json", "sub/OpenCode.jsonc", ".tool-versions",
		"rust-toolchain.toml", "a/Rust-Toolchain", "crush.json", "a/Crushrc", ".crushrc", ".github/hooks", ".hg/hgrc", "x/.hg/sharedpath",
		"a/.lazygit.yml"}
	for _, p := range paths {
		if !Protected(p) {
			t.Fatalf("%q: not protected", p)
		}
		dir, name := path.Split(p)
		if dir != "" && Protected(dir) {
			continue
		}
		if !MayBeProtected(name) {
			t.Errorf("MayBeProtected(%q) = false, but %q is protected", name, p)
		}
	}
	// Control: plain names are let through to no check.
	for _, name := range []string{"main.go", "config.toml", "Makefile", "hook.go", "open.go"} {
		if MayBeProtected(name) {
			t.Errorf("MayBeProtected(%q) = true", name)
		}
	}
}

// TestHomeProtected: in a home folder inside the root, every dot entry is protected, whatever its name; elsewhere,
// and for the home's own .git, only the fixed names are.
func TestHomeProtected(t *testing.T) {
	for _, c := range []struct {
		rel, home string
		want      bool
	}{
		{".config/git/config", "", true},
		{".local/bin/git", "", true},
		{".config/systemd/user/x.service", "", true},
		{".emacs.d/init.el", "", true},
		{".Config/autostart/x.desktop", "", true},
		{"home/u/.config/git/config", "home/u", true},
		{"home/u/.cargo/bin/ls", "home/u", true},
		{"home/u/.git/config", "home/u", false},
		{".git/hooks", "", false},
		{"home/u", "home/u", false},
		{"home/u/src/.config/x", "home/u", false},
		{"home/v/.config/git/config", "home/u", false},
		{"src/.local/bin/x", "", false},
		{"notes.txt", "", false},
		{"bin/git", "", true},
		{"home/u/bin", "home/u", true},
		{"src/bin/x", "", false},
		{"binaries/x", "", false},
	} {
		if got := HomeProtected(c.rel, c.home); got != c.want {
			t.Errorf("HomeProtected(%q, %q) = %v, want %v", c.rel, c.home, got, c.want)
		}
	}
	for _, c := range []struct {
		root, home, rel string
		ok              bool
	}{
		{"/home/u", "/home/u", "", true}, {"/home", "/home/u", "u", true}, {"/home/u/proj", "/home/u", "", false},
		{"/home/u", "", "", false}, {"/", "/", "", false},
	} {
		if rel, ok := HomeIn(c.root, c.home); rel != c.rel || ok != c.ok {
			t.Errorf("HomeIn(%q, %q) = %q, %v; want %q, %v", c.root, c.home, rel, ok, c.rel, c.ok)
		}
	}
}

// TestHomeDotfilesAsk: with the root the user's home, an edit of a dot file in it asks, whatever the rules, and
// never for the session. Control: the same edit where the root is not the home is allowed by the same rules.
func TestHomeDotfilesAsk(t *testing.T) {
	st := newState(ModeBuild)
	st.User = mustSettings(t, "/u/.garuda/settings.json", `{"permissions":{"allow":["edit_file(**)"]}}`)
	req := Request{Kind: KindEdit, Path: tRoot + "/.config/git/config"}
	if d := Decide(req, st); d.Verdict != Allow {
		t.Fatalf("control: the root is not the home, %v %s", d.Verdict, d.Reason)
	}
	st.UserHome = tRoot
	if d := Decide(req, st); d.Verdict != Ask || has(d.Choices, ChoiceSession) {
		t.Errorf("the root is the home: %v %v, want ask with no session choice", d.Verdict, d.Choices)
	}
	if d := Decide(Request{Kind: KindEdit, Path: tRoot + "/src/a.go"}, st); d.Verdict != Allow {
		t.Errorf("an ordinary file in the home: %v", d.Verdict)
	}
}

// TestProtectedNamesAreProtected keeps the sandbox's list and the file tools' list one list.
func TestProtectedNamesAreProtected(t *testing.T) {
	dirs, files := ProtectedNames()
	if len(dirs) == 0 || len(files) == 0 {
		t.Fatal("empty lists")
	}
	for _, n := range append(dirs, files...) {
		if !Protected(n) {
			t.Errorf("ProtectedNames has %q, which Protected rejects", n)
		}
	}
}

// TestProtectedBeatsRules: a protected path asks whatever an allow rule or session rule says, and a deny
// still wins. The negative control is the same rules on an unprotected path, which they allow.
func TestProtectedBeatsRules(t *testing.T) {
	st := newState(ModeBuild)
	st.User = mustSettings(t, "/u/.garuda/settings.json", `{"permissions":{"allow":["edit_file(**)","write_file(//**)"]}}`)
	sr, _ := ParseRule("edit_file(/**)")
	st.SessionRules = []Rule{sr}
	for _, p := range []string{".git/hooks/pre-commit", ".vscode/settings.json", "sub/.git/config", ".Garuda/settings.json"} {
		d := Decide(Request{Kind: KindEdit, Path: tRoot + "/" + p}, st)
		if d.Verdict != Ask || has(d.Choices, ChoiceSession) {
			t.Errorf("%s: %v %v, want ask with no session choice", p, d.Verdict, d.Choices)
		}
	}
	if d := Decide(Request{Kind: KindEdit, Path: tRoot + "/src/a.go"}, st); d.Verdict != Allow {
		t.Errorf("control: unprotected edit %v", d.Verdict)
	}
	st.User = mustSettings(t, "/u/.garuda/settings.json", `{"permissions":{"deny":["edit_file(.vscode)"]}}`)
	if d := Decide(Request{Kind: KindEdit, Path: tRoot + "/.vscode/x"}, st); d.Verdict != Deny {
		t.Errorf("deny on a protected path: %v", d.Verdict)
	}
	// Reads of protected paths follow the normal rules.
	if d := Decide(Request{Kind: KindRead, Path: tRoot + "/.git/config"}, st); d.Verdict != Allow {
		t.Errorf("read of .git/config: %v", d.Verdict)
	}
}
