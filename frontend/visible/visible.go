package visible

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Warning is the line shown above a preview that had hidden characters (the same text as in the terminal).
const Warning = "Warning: this text contains hidden characters (control, invisible or bidirectional); they are " +
	"shown as \\u escapes. Check what it really does."

// MaxTitle is the longest title OneLine returns, in runes (the rest is cut with "…").
const MaxTitle = 200

// hidden reports whether r must be shown as an escape. Newline and tab are kept: they are visible as layout.
// Defends against text that looks like something else: terminal escapes, right-to-left overrides (Trojan Source),
// zero-width characters, soft hyphens, byte order marks and blank-looking fillers.
func hidden(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || (r >= 0x7f && r <= 0x9f): // C0, DEL, C1 controls (ESC sequences, carriage return)
		return true
	case unicode.Is(unicode.Cf, r): // format: zero-width space/joiners, bidi marks/embeddings/isolates, soft hyphen, BOM, tags
		return true
	case unicode.Is(unicode.Bidi_Control, r):
		return true
	case r == 0x2028 || r == 0x2029: // line and paragraph separators: a line break the eye does not expect
		return true
	case unicode.Is(unicode.Variation_Selector, r):
		return true
	case r == 0x115f || r == 0x1160 || r == 0x3164 || r == 0xffa0 || r == 0x2800 || r == 0x17b4 || r == 0x17b5 || r == 0x180e:
		// Hangul fillers, the braille blank and Khmer/Mongolian invisibles render as nothing or as a plain space.
		return true
	case r == 0xfffc || r == 0xfff9 || r == 0xfffa || r == 0xfffb:
		return true
	case unicode.Is(unicode.Co, r) || unicode.Is(unicode.Cs, r) || unicode.Is(unicode.Noncharacter_Code_Point, r):
		return true
	case unicode.IsSpace(r) && r != ' ': // no-break, em, ideographic ... spaces look like a plain space
		return true
	}
	return false
}

// escape writes the visible escape of r: \u202e for the basic plane, \U000e0041 above it.
func escape(b *strings.Builder, r rune) {
	if r > 0xffff {
		fmt.Fprintf(b, "\\U%08x", r)
		return
	}
	fmt.Fprintf(b, "\\u%04x", r)
}

// Visible returns s with every control, invisible and bidirectional character replaced by its escape (\u202e),
// and every byte that is not UTF-8 by \xNN. Newlines and tabs stay.
func Visible(s string) string {
	if !HasHidden(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case hidden(r):
			escape(&b, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// HasHidden reports whether Visible would change s: it has a control, invisible or bidirectional character, or
// bytes that are not UTF-8.
func HasHidden(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
			i++ // printable ASCII, the common case
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || hidden(r) {
			return true
		}
		i += n
	}
	return false
}

// OneLine makes s a visible one-line title: hidden characters escaped, a line break shown as " ⏎ " (so a second
// line of a command is not lost from sight), a tab as a space, at most MaxTitle runes.
func OneLine(s string) string {
	s = Visible(strings.TrimSpace(s))
	s = strings.NewReplacer("\n", " ⏎ ", "\t", " ").Replace(s)
	if utf8.RuneCountInString(s) > MaxTitle {
		r := []rune(s)
		s = string(r[:MaxTitle-1]) + "…"
	}
	return s
}
