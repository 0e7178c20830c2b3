package policy

import "testing"

func TestProtected(t *testing.T) {
	yes := []string{
		".git/hooks/pre-commit", ".git/hooks", ".git/config", ".git", "sub/.git", "vendor/lib/.git/hooks/post-checkout",
		"vendor/lib/.git/config", ".git/modules/lib/hooks/x", ".git/modules/lib/config", ".git/info/attributes",
		".gitmodules", "a/.gitmodules", ".garuda/settings.json", ".claude/settings.json", ".agents/x", ".vscode/tasks.json",
		".idea/workspace.xml", ".envrc", "pkg/.envrc", ".mcp.json", ".bashrc", ".zshrc", ".profile", "home/.bash_profile",
		".GIT/HOOKS/pre-commit", ".Git/Config", ".VSCode/settings.json", ".ENVRC", ".g\u200cit/hooks/x", ".vs\ufeffcode/a",
		"/.git/config/",
	}
	no := []string{"", "src/main.go", ".gitignore", ".github/workflows/ci.yml", "git/hooks/x", ".git/objects/ab/cd",
		".git/HEAD", "hooks/pre-commit", "config", "docs/.vscode.md", "envrc", ".mcp.json.bak"}
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
