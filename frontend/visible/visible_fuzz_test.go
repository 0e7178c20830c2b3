package visible

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzVisible: whatever the text, Visible leaves no control, bidirectional, invisible or non-UTF-8 character
// (newlines and tabs stay), changes nothing in a text that has none, and is stable when applied again; OneLine is
// one visible line of at most MaxTitle runes.
func FuzzVisible(f *testing.F) {
	for _, s := range []string{"ls -la && echo ok", "a\n\tb", "café → 日本", "rm -rf /tmp/x\u202e; echo", "cu\u200brl",
		"ev\u00adil", "\ufeffls", "ok\x1b[2Kfake", "safe\rrm -rf", "a\u2066b\u2069", "x\U000e0041", "a\u00a0b", "a\u3164b",
		"a\xffb", "a\u2028b", "\xed\xa0\x80", "\U0010ffff\ufdd0\ue000", "x\ufe0f\u180e", `\u202e`, strings.Repeat("é", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := Visible(s)
		if !utf8.ValidString(v) {
			t.Fatalf("Visible(%q) = %q is not UTF-8", s, v)
		}
		for _, r := range v {
			if r != '\n' && r != '\t' && hidden(r) {
				t.Fatalf("Visible(%q) = %q keeps %U", s, v, r)
			}
		}
		if HasHidden(v) {
			t.Fatalf("HasHidden(Visible(%q)) is true", s)
		}
		if (v == s) == HasHidden(s) {
			t.Fatalf("Visible(%q) = %q, but HasHidden = %v", s, v, HasHidden(s))
		}
		if Visible(v) != v {
			t.Fatalf("Visible is not stable on %q", s)
		}
		o := OneLine(s)
		if strings.ContainsAny(o, "\n\t") || HasHidden(o) || utf8.RuneCountInString(o) > MaxTitle {
			t.Fatalf("OneLine(%q) = %q is not one visible line within %d runes", s, o, MaxTitle)
		}
	})
}
