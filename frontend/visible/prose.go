package visible

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Prose is Visible for the model's own prose (its answer and its thinking), which is read, not run: it keeps what
// well-formed text of any language and emoji needs, and escapes everything else Visible does. Kept: the spaces of
// other scripts (no-break, ideographic, en/em spaces: category Zs), and inside an emoji cluster its variation
// selector (⚠️), its zero-width joiners (👨‍👩‍👧) and a subdivision flag's tags (🏴 + tags + cancel tag). Still escaped:
// bidirectional controls, zero-width characters outside an emoji cluster, C0/C1 controls but newline and tab,
// line separators, fillers. Titles, questions, previews, commands, paths and tool content keep the exact Visible:
// there, a character that looks like another can make one command pass for another.
func Prose(s string) string {
	if !HasHidden(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	prev := rune(-1) // the rune before, as written
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r == blackFlag:
			// A subdivision flag: the black flag, tag letters, the cancel tag; kept whole, else the tags are escaped.
			end := flagEnd(s, i+n)
			b.WriteString(s[i:end])
			n = end - i
		case !hidden(r):
			b.WriteString(s[i : i+n])
		case unicode.Is(unicode.Zs, r): // a space of another script: it looks like what it is
			b.WriteString(s[i : i+n])
		case (r == vs15 || r == vs16) && emojiBase(prev):
			b.WriteString(s[i : i+n])
		case r == vs16 && keycapBase(prev) && strings.HasPrefix(s[i+n:], "\u20e3"):
			b.WriteString(s[i : i+n])
		case r == zwj && emojiPart(prev) && emojiBase(nextRune(s[i+n:])):
			b.WriteString(s[i : i+n])
		default:
			escape(&b, r)
		}
		prev, _ = utf8.DecodeLastRuneInString(s[:i+n])
		i += n
	}
	return b.String()
}

const (
	zwj       = 0x200d
	vs15      = 0xfe0e
	vs16      = 0xfe0f
	blackFlag = 0x1f3f4
	cancelTag = 0xe007f
)

// emojiBase approximates Extended_Pictographic, which the unicode package lacks: the other symbols (So), which hold
// every emoji base and pictograph. Not U+FFFD, also So, which is what a byte that is not UTF-8 decodes to: defends
// against a joiner or selector kept raw between two such bytes.
func emojiBase(r rune) bool { return r >= 0 && r != utf8.RuneError && unicode.Is(unicode.So, r) }

// emojiPart is a rune an emoji cluster may have before a joiner: a base, a variation selector, a skin tone.
func emojiPart(r rune) bool { return emojiBase(r) || r == vs16 || (r >= 0x1f3fb && r <= 0x1f3ff) }

func keycapBase(r rune) bool { return r == '#' || r == '*' || (r >= '0' && r <= '9') }

func nextRune(s string) rune {
	if s == "" {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// flagEnd is the end of a subdivision flag's tags that start at i (tag letters then the cancel tag), or i when
// what follows is not such a sequence.
func flagEnd(s string, i int) int {
	j := i
	for j < len(s) {
		r, n := utf8.DecodeRuneInString(s[j:])
		switch {
		case r == cancelTag && j > i:
			return j + n
		case r >= 0xe0020 && r <= 0xe007e:
			j += n
		default:
			return i
		}
	}
	return i
}

// ProseStream applies Prose to text that arrives in pieces (a model's stream): a possible emoji cluster at the end
// of a piece is held until the next piece or Flush, so that a joiner split from what follows is not escaped as one
// outside a cluster.
type ProseStream struct {
	held string
}

// Write returns the visible prose of what can be decided now.
func (p *ProseStream) Write(s string) string {
	s = p.held + s
	cut := len(s)
	for cut > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:cut])
		if !(emojiPart(r) || keycapBase(r) || r == zwj || r == vs15 || (r >= 0xe0020 && r <= cancelTag) || r == 0x20e3) {
			break
		}
		cut -= n
	}
	p.held = s[cut:]
	return Prose(s[:cut])
}

// Flush returns what is held.
func (p *ProseStream) Flush() string {
	s := p.held
	p.held = ""
	return Prose(s)
}
