package visible

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzProse: the model's prose keeps what well-formed text needs, but never a raw control (newline and tab aside),
// a bidirectional control, a line separator or a byte that is not UTF-8; text without hidden characters is
// unchanged, and Prose is stable when applied again.
func FuzzProse(f *testing.F) {
	for _, s := range []string{"plain", "a\u00a0b\u3000c", "⚠️ 👨\u200d👩\u200d👧",
		"\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", "x\u202ey",
		"a\u200bb", "a\x1b[2Kb", "a\u2028b", "\xff", "\u200d", "\ufe0f", "\U000e0067"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := Prose(s)
		if !utf8.ValidString(p) {
			t.Fatalf("Prose(%q) = %q is not UTF-8", s, p)
		}
		for _, r := range p {
			if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) || unicode.Is(unicode.Bidi_Control, r) ||
				r == 0x2028 || r == 0x2029 {
				t.Fatalf("Prose(%q) = %q keeps %U", s, p, r)
			}
		}
		if !HasHidden(s) && p != s {
			t.Fatalf("Prose changed %q, which has nothing hidden, to %q", s, p)
		}
		for i, r := range p { // a joiner or selector is kept only after an emoji part
			if r == zwj || r == vs16 || r == vs15 {
				if prev, _ := utf8.DecodeLastRuneInString(p[:i]); !emojiPart(prev) && !keycapBase(prev) {
					t.Fatalf("Prose(%q) = %q keeps %U after %U", s, p, r, prev)
				}
			}
		}
		if Prose(p) != p {
			t.Fatalf("Prose is not stable on %q: %q then %q", s, p, Prose(p))
		}
	})
}
