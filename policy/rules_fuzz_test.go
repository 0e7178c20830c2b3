package policy

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// printRule writes a parsed rule back in the rule grammar, from what ParseRule understood (not from Text): the
// canonical tool name, each command word single-quoted, a path pattern with its base spelled out
// and a closing "/".
func printRule(r Rule) string {
	switch {
	case r.tool == "mcp":
		if r.mcpTool == "" {
			return "mcp__" + r.mcpServer
		}
		return "mcp__" + r.mcpServer + "__" + r.mcpTool
	case r.all:
		return r.tool
	case r.tool == OpBash:
		q := make([]string, len(r.words))
		for i, w := range r.words {
			q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		if r.restAny {
			q = append(q, "*")
		}
		return "bash(" + strings.Join(q, " ") + ")"
	case r.tool == OpWebFetch:
		return "web_fetch(domain:" + r.host + ")"
	}
	prefix := map[pathBase]string{baseAbs: "//", baseHome: "~/", baseRoot: "/", baseAny: ""}[r.path.base]
	if len(r.path.segs) == 0 {
		return r.tool + "(" + prefix + ")"
	}
	return r.tool + "(" + prefix + strings.Join(r.path.segs, "/") + "/)" // the "/" keeps a name's trailing space
}

// sameRule compares what two rules mean, ignoring how they were written.
func sameRule(a, b Rule) bool {
	a.Text, b.Text, a.Source, b.Source = "", "", "", ""
	for _, r := range []*Rule{&a, &b} {
		if r.all { // bash(*) and bash(* *) are plain bash
			r.words, r.stars, r.restAny = nil, nil, false
		}
	}
	return reflect.DeepEqual(a, b)
}

// FuzzParseRule: a rule that parses prints back (printRule) to a rule that parses to the same meaning, and
// parsing is deterministic; a rule that does not parse says which rule in its error.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		"bash", "Bash", "bash(npm run test *)", "bash(npm run test:*)", "bash(git status)", "bash(*)", "bash(* *)",
		"bash(a *:*)", `bash("a b" 'c' d\ e)`, "bash(rm -rf /)", "bash(x > y)", "bash($(x))", "bash(a;b)",
		"read_file(./secrets/**)", "read_file(//abs/path)", "read_file(~/in/home)", "read_file(~)", "read_file(/)",
		"read_file(*.env)", "Read(dir/sub)", "edit_file(src/**)", "Write(a/)", "glob(**/*.go)", "grep(x)",
		"read_file(..)", "read_file([)", "read_file(a))", "web_fetch(domain:x.com)", "WebFetch(domain:*.X.com.)",
		"web_fetch(domain:a..)", "web_fetch(x.com)", "mcp__server__tool", "mcp__server", "mcp__server__*",
		"mcp__a___b", "mcp__", "mcp__s(x)", "MultiEdit", "frob", "bash()", "bash(x", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, err := ParseRule(text)
		if err != nil {
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("rule %q: ", text)) {
				t.Fatalf("error %q does not name the rule", err)
			}
			return
		}
		if r.String() != text {
			t.Fatalf("String() = %q, want %q", r.String(), text)
		}
		if len(r.kinds) == 0 {
			t.Fatalf("%q covers no kind of request", text)
		}
		again, err := ParseRule(text)
		if err != nil || !sameRule(r, again) {
			t.Fatalf("%q parses differently the second time: %+v, %v", text, again, err)
		}
		printed := printRule(r)
		back, err := ParseRule(printed)
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", text, printed, err)
		}
		if !sameRule(r, back) {
			t.Fatalf("%q printed as %q means something else:\n%+v\n%+v", text, printed, r, back)
		}
	})
}

// FuzzParseSettings: a settings or policy file that parses holds only rules that parse on their own to the same
// meaning, each with the file as its Source; one that does not parse names the file in its error.
func FuzzParseSettings(f *testing.F) {
	for _, s := range []string{
		`{"permissions":{"allow":["bash(npm run test *)"],"ask":["edit_file(src/**)"],"deny":["read_file(./.env)"]}}`,
		`{"permissions":{"deny":["bash(curl *)","mcp__shady"]},"allow_unsandboxed":false,"weaker_sandbox_ok":true,` +
			`"network_allowlist":["*.example.com"],"allowed_modes":["plan"],"audit_dir":"/var/log/garuda"}`,
		`{"permissions":{"allow":["alow"]}}`, `{"permissions":{"allow":["bash"],"allow":[]}}`, `{"x":1}`, `[]`, ``,
		`{"permissions":{"deny":["web_fetch(domain:evil.io)"]}} trailing`, `{"permissions":null}`,
	} {
		f.Add("settings.json", s)
		f.Add("policy.json", s)
	}
	f.Fuzz(func(t *testing.T, base, data string) {
		name := "/u/.garuda/" + base
		s, err := ParseSettings(name, []byte(data))
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not name the file %s", err, name)
			}
			return
		}
		if s.Name != name {
			t.Fatalf("Name %q, want %q", s.Name, name)
		}
		for _, list := range [][]Rule{s.Allow, s.Ask, s.Deny} {
			for _, r := range list {
				alone, err := ParseRule(r.Text)
				if err != nil || !sameRule(r, alone) || r.Source != name {
					t.Fatalf("rule %q from %s: alone %+v, %v; source %q", r.Text, name, alone, err, r.Source)
				}
			}
		}
	})
}
