package fsops

import (
	"unicode"
	"unicode/utf8"
)

// HasHidden reports whether b holds characters that a reader of a preview would not see or would see in another
// order: control characters other than tab, newline and carriage return, format characters (zero-width spaces and
// joiners, the bidirectional embeddings, overrides and isolates of "Trojan Source", tag characters), and invalid
// UTF-8. It defends the question: what the user approves must look like what is written.
func HasHidden(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return true
		}
		if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return true
		}
		i += size
	}
	return false
}
