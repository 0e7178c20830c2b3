package visible

import (
	"strings"
	"testing"
)

func TestVisible(t *testing.T) {
	cases := []struct {
		name, in, want string
		hidden         bool
	}{
		{"plain", "ls -la && echo ok", "ls -la && echo ok", false},
		{"newline and tab stay", "a\n\tb", "a\n\tb", false},
		{"unicode letters stay", "café → 日本", "café → 日本", false},
		{"right-to-left override", "rm -rf /tmp/x\u202e; echo", `rm -rf /tmp/x\u202e; echo`, true},
		{"zero-width space", "cu\u200brl", `cu\u200brl`, true},
		{"soft hyphen", "ev\u00adil", `ev\u00adil`, true},
		{"byte order mark", "\ufeffls", `\ufeffls`, true},
		{"escape sequence", "ok\x1b[2Kfake", `ok\u001b[2Kfake`, true},
		{"carriage return", "safe\rrm -rf", `safe\u000drm -rf`, true},
		{"bidi isolate", "a\u2066b\u2069", `a\u2066b\u2069`, true},
		{"tag character", "x\U000e0041", `x\U000e0041`, true},
		{"no-break space", "a\u00a0b", `a\u00a0b`, true},
		{"hangul filler", "a\u3164b", `a\u3164b`, true},
		{"invalid utf-8", "a\xffb", `a\xffb`, true},
		{"line separator", "a\u2028b", `a\u2028b`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Visible(c.in); got != c.want {
				t.Errorf("Visible(%q) = %q, want %q", c.in, got, c.want)
			}
			if got := HasHidden(c.in); got != c.hidden {
				t.Errorf("HasHidden(%q) = %v, want %v", c.in, got, c.hidden)
			}
			// What Visible returns never has hidden characters left, whatever the input.
			if HasHidden(strings.ReplaceAll(Visible(c.in), "\n", "")) && c.in != "a\n\tb" {
				t.Errorf("Visible(%q) still has hidden characters", c.in)
			}
		})
	}
}

func TestOneLine(t *testing.T) {
	if got, want := OneLine("echo a\nrm -rf ~\t#"), "echo a ⏎ rm -rf ~ #"; got != want {
		t.Errorf("OneLine = %q, want %q", got, want)
	}
	if got := OneLine("a\u202eb"); got != `a\u202eb` {
		t.Errorf("OneLine did not escape: %q", got)
	}
	long := strings.Repeat("x", 500)
	got := OneLine(long)
	if n := len([]rune(got)); n != MaxTitle || !strings.HasSuffix(got, "…") {
		t.Errorf("OneLine of 500 runes: %d runes, suffix %q", n, got[len(got)-3:])
	}
	if strings.Contains(OneLine("a\r\nb"), "\n") {
		t.Error("OneLine kept a line break")
	}
}

func BenchmarkVisiblePlain(b *testing.B) {
	s := strings.Repeat("func main() { fmt.Println(\"hello\") }\n", 1000)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Visible(s)
	}
}
