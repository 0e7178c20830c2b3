package visible

import (
	"strings"
	"testing"
)

// Prose keeps what well-formed text and emoji need; Visible, for titles, commands and paths, keeps nothing hidden.
func TestProseAndTitles(t *testing.T) {
	cases := []struct {
		name, in, prose, exact string
	}{
		{"warning sign with VS16", "⚠️ careful", "⚠️ careful", `⚠\ufe0f careful`},
		{"text-style VS15", "☺︎", "☺︎", `☺\ufe0e`},
		{"family ZWJ sequence", "👨‍👩‍👧", "👨‍👩‍👧", `👨\u200d👩\u200d👧`},
		{"skin tone then ZWJ", "👩🏽‍💻", "👩🏽‍💻", `👩🏽\u200d💻`},
		{"rainbow flag", "🏳️‍🌈", "🏳️‍🌈", `🏳\ufe0f\u200d🌈`},
		{"keycap", "1️⃣", "1️⃣", `1\ufe0f⃣`},
		{"subdivision flag", "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f", "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",
			`🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f`},
		{"ideographic space", "日本語\u3000テキスト", "日本語\u3000テキスト", `日本語\u3000テキスト`},
		{"no-break space", "10\u00a0km", "10\u00a0km", `10\u00a0km`},
		{"narrow no-break space", "5\u202f%", "5\u202f%", `5\u202f%`},
		// What deceives stays escaped in prose too.
		{"ZWJ between letters", "ad\u200dmin", `ad\u200dmin`, `ad\u200dmin`},
		{"ZWJ after an emoji, before a letter", "👨\u200dx", `👨\u200dx`, `👨\u200dx`},
		{"VS16 after a letter", "a\ufe0f", `a\ufe0f`, `a\ufe0f`},
		{"zero-width space", "cu\u200brl", `cu\u200brl`, `cu\u200brl`},
		{"right-to-left override", "x\u202ey", `x\u202ey`, `x\u202ey`},
		{"bidi isolate", "a\u2066b\u2069", `a\u2066b\u2069`, `a\u2066b\u2069`},
		{"escape sequence", "ok\x1b[2Kfake", `ok\u001b[2Kfake`, `ok\u001b[2Kfake`},
		{"carriage return", "safe\rrm", `safe\u000drm`, `safe\u000drm`},
		{"tags without a flag", "x\U000e0041\U000e007f", `x\U000e0041\U000e007f`, `x\U000e0041\U000e007f`},
		{"a flag with loose tags", "🏴\U000e0041", `🏴\U000e0041`, `🏴\U000e0041`},
		{"line separator", "a\u2028b", `a\u2028b`, `a\u2028b`},
		{"hangul filler", "a\u3164b", `a\u3164b`, `a\u3164b`},
		{"invalid utf-8", "a\xffb", `a\xffb`, `a\xffb`},
		{"newline and tab", "a\n\tb", "a\n\tb", "a\n\tb"},
	}
	for _, c := range cases {
		if got := Prose(c.in); got != c.prose {
			t.Errorf("%s: Prose(%q) = %q, want %q", c.name, c.in, got, c.prose)
		}
		if got := Visible(c.in); got != c.exact {
			t.Errorf("%s: Visible(%q) = %q, want %q", c.name, c.in, got, c.exact)
		}
	}
	// Two titles that differ only by a no-break space or a joiner must not look alike.
	for _, pair := range [][2]string{{"rm -rf build", "rm -rf\u00a0build"}, {"Write admin.go", "Write ad\u200dmin.go"},
		{"Run 👨‍👩‍👧", "Run 👨👩👧"}} {
		if OneLine(pair[0]) == OneLine(pair[1]) {
			t.Errorf("titles %q and %q look the same: %q", pair[0], pair[1], OneLine(pair[0]))
		}
	}
}

// A cluster split across stream pieces is held until the next piece: its joiner is not escaped as a loose one.
func TestProseStream(t *testing.T) {
	for _, pieces := range [][]string{
		{"family: 👨\u200d", "👩\u200d👧 done"},
		{"family: 👨", "\u200d👩", "\u200d", "👧 done"},
		{"warn ⚠", "\ufe0f done"},
	} {
		var p ProseStream
		var out strings.Builder
		for _, s := range pieces {
			out.WriteString(p.Write(s))
		}
		out.WriteString(p.Flush())
		want := Prose(strings.Join(pieces, ""))
		if out.String() != want || strings.Contains(want, `\u`) {
			t.Errorf("pieces %q: streamed %q, whole %q", pieces, out.String(), want)
		}
	}
	// A loose joiner at the end is escaped once the stream ends.
	var p ProseStream
	if got := p.Write("ad\u200d") + p.Flush(); got != `ad\u200d` {
		t.Errorf("a trailing joiner: %q", got)
	}
}
