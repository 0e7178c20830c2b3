package policy

import (
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/internal/pathglob"
)

// The rules' folder rule: a pattern that matches a folder covers what it holds.
func TestPathRuleCovers(t *testing.T) {
	cases := []struct {
		pat, path string
		want      bool
	}{
		{"a/b", "a/b", true}, {"a/b", "a/b/c", true}, {"a/b", "a", false}, {"**", "", true}, {"**/x", "x", true},
		{"**/x", "a/b/x", true}, {"**/x", "a/b/y", false}, {"a/**/z", "a/z", true}, {"a/**/z", "a/b/c/z/w", true},
		{"*.go", "a.go", true}, {"*.go", "a.c", false}, {"a/*/c", "a/b/c", true}, {"a/*/c", "a/b/b/c", false},
		{"**/**/**/**/**/**/**/**/q", strings.Repeat("a/", 60) + "b", false},
	}
	for _, c := range cases {
		if got := pathglob.Pattern(strings.Split(c.pat, "/")).Covers(pathglob.Split(c.path)); got != c.want {
			t.Errorf("Covers(%q, %q) = %v", c.pat, c.path, got)
		}
	}
}

// BenchmarkSlowInputs guards against inputs that blow up: many "**" and nested wrapped shells.
func BenchmarkSlowInputs(b *testing.B) {
	st := newState(ModeBuild)
	st.User = mustSettings(b, "/u/.garuda/settings.json", `{"permissions":{"deny":["read_file(**/**/**/**/**/**/**/**/q)","bash(rm *)"]}}`)
	deep := tRoot + "/" + strings.Repeat("a/", 100) + "b"
	nested := "env " + strings.Repeat("sh ", 50) + "'" + "env " + strings.Repeat("bash ", 50) + "x'"
	for b.Loop() {
		Decide(Request{Kind: KindRead, Path: deep}, st)
		Decide(Request{Kind: KindCommand, Command: nested, Sandboxed: true}, st)
	}
}
