package webfetch

import (
	"net/url"
	"slices"
	"strings"
)

// mdWriter writes Markdown as the page is read: block boundaries and spaces are held back until text follows (so
// that neither piles up, nor ends a document), as are the opening marks of emphasis and links (an element with no
// text leaves no marks).
type mdWriter struct {
	out    []byte
	breaks int      // newlines owed before the next text (at most 2: a blank line)
	space  bool     // a space owed before the next text on this line
	opens  []string // opening marks owed before the next text
	prefix []linePrefix
	inline int // inside a link, a heading or a table cell: block boundaries are spaces
}

// linePrefix is what each line inside a blockquote or list item begins with; a list item's first line has its
// marker instead.
type linePrefix struct {
	indent, marker string
	started        bool // a line of it was written: blank lines carry it from then on
}

// maxPrefix bounds the width of a line's prefixes: past it only the innermost are written (defends against a page
// of deeply nested lists or quotes whose every short line would cost the whole depth).
const maxPrefix = 16

// block owes a blank line; inside a link, heading or cell, a space.
func (w *mdWriter) block() {
	if w.inline > 0 {
		w.space = true
		return
	}
	w.breaks = 2
}

func (w *mdWriter) newline() {
	if w.inline > 0 {
		w.space = true
		return
	}
	w.breaks = max(w.breaks, 1)
}

// begin pays what is owed before text: line breaks with the prefixes, or a space, then the opening marks. It
// reports whether the text that follows starts its line.
func (w *mdWriter) begin() bool {
	lineStart := false
	switch {
	case w.breaks > 0 && len(w.out) > 0:
		for i := 0; i < w.breaks; i++ {
			if i > 0 { // a blank line keeps the quote marks
				w.writePrefix(true)
			}
			w.out = append(w.out, '\n')
		}
		w.writePrefix(false)
		lineStart = true
	case len(w.out) == 0:
		w.writePrefix(false)
		lineStart = true
	case w.space:
		w.out = append(w.out, ' ')
	}
	w.breaks, w.space = 0, false
	if len(w.opens) > 0 {
		for _, o := range w.opens {
			w.out = append(w.out, o...)
		}
		w.opens = w.opens[:0]
		lineStart = false
	}
	return lineStart
}

// writePrefix writes the innermost prefixes that fit in maxPrefix; a blank line's without trailing spaces.
func (w *mdWriter) writePrefix(blank bool) {
	first, width := len(w.prefix), 0
	for first > 0 && width+len(w.prefix[first-1].indent) <= maxPrefix {
		first--
		width += len(w.prefix[first].indent)
	}
	start := len(w.out)
	for i := first; i < len(w.prefix); i++ {
		p := &w.prefix[i]
		switch {
		case blank && !p.started:
		case !blank && p.marker != "":
			w.out = append(w.out, p.marker...)
			p.marker, p.started = "", true
		default:
			w.out = append(w.out, p.indent...)
			p.started = p.started || !blank
		}
	}
	if blank {
		for len(w.out) > start && w.out[len(w.out)-1] == ' ' {
			w.out = w.out[:len(w.out)-1]
		}
	}
}

// text writes text: whitespace collapsed, Markdown's own characters escaped.
func (w *mdWriter) text(s []byte) {
	for len(s) > 0 {
		i := 0
		for i < len(s) && !isSpace(s[i]) {
			i++
		}
		if i > 0 {
			w.out = appendEscaped(w.out, s[:i], w.begin())
			s = s[i:]
		}
		j := 0
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		if j > 0 {
			w.space = true
			s = s[j:]
		}
	}
}

func (w *mdWriter) raw(s string) {
	w.begin()
	w.out = append(w.out, s...)
}

func (w *mdWriter) open(mark string) { w.opens = append(w.opens, mark) }

// close writes mark after an element's text, or forgets the element's opening mark when it had none (and says so).
func (w *mdWriter) close(mark string) bool {
	if n := len(w.opens); n > 0 {
		w.opens = w.opens[:n-1]
		return false
	}
	w.out = append(w.out, mark...)
	return true
}

func (w *mdWriter) pushPrefix(indent, marker string) {
	w.prefix = append(w.prefix, linePrefix{indent: indent, marker: marker})
}

// popPrefix ends a blockquote or list item; an item that had no text still shows its marker.
func (w *mdWriter) popPrefix() {
	if n := len(w.prefix); n > 0 {
		if w.prefix[n-1].marker != "" && w.inline == 0 {
			w.raw("")
		}
		w.prefix = w.prefix[:n-1]
	}
}

// code writes inline code, its fence longer than any run of backticks in it.
func (w *mdWriter) code(s string) {
	s = collapseSpace(s)
	if s == "" {
		return
	}
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	pad := ""
	if s[0] == '`' || s[len(s)-1] == '`' {
		pad = " "
	}
	w.raw(fence + pad + s + pad + fence)
}

// codeBlock writes preformatted text as a fenced code block (inline code inside a link, heading or cell).
func (w *mdWriter) codeBlock(s, lang string) {
	s = strings.Trim(s, "\n")
	if strings.TrimSpace(s) == "" {
		return
	}
	if w.inline > 0 {
		w.code(s)
		return
	}
	fence := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	w.block()
	w.raw(fence + lang)
	for line := range strings.SplitSeq(s, "\n") {
		w.breaks = 1
		w.begin()
		w.out = append(w.out, strings.TrimRight(line, "\r")...)
	}
	w.breaks = 1
	w.raw(fence)
	w.block()
}

// table writes rows as a GFM table: its first row the header, as wide as the widest row; a cell's pipes escaped.
func (w *mdWriter) table(caption string, rows [][]string) {
	if caption != "" {
		w.block()
		w.raw(caption)
	}
	if len(rows) == 0 {
		return
	}
	rows = slices.DeleteFunc(rows, func(r []string) bool { return len(r) == 0 })
	if len(rows) == 0 {
		return
	}
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	w.block()
	var b strings.Builder
	for i, r := range rows {
		b.Reset()
		b.WriteByte('|')
		for _, c := range r {
			b.WriteByte(' ')
			b.WriteString(strings.ReplaceAll(c, "|", `\|`))
			b.WriteString(" |")
		}
		if i == 0 { // the other rows as they are: padding every row could make a small page a huge table
			for range cols - len(r) {
				b.WriteString("  |")
			}
		}
		w.newline()
		w.raw(b.String())
		if i == 0 {
			w.newline()
			w.raw("|" + strings.Repeat(" --- |", cols))
		}
	}
	w.block()
}

// resolve makes a link absolute against the page; what a reader cannot follow (javascript:, data:, a bad URL) is
// dropped, and spaces and parentheses are escaped so the link stays one.
func resolve(base *url.URL, ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	u, err := base.Parse(ref)
	if err != nil {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "mailto", "ftp":
	default:
		return ""
	}
	s := u.String()
	if strings.ContainsAny(s, " ()<>") {
		s = strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E").Replace(s)
	}
	return s
}

func titlePart(t string) string {
	if t = collapseSpace(t); t == "" {
		return ""
	}
	return ` "` + strings.ReplaceAll(strings.ReplaceAll(t, `\`, `\\`), `"`, `\"`) + `"`
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

func collapseSpace(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r < 0x80 && isSpace(byte(r)) }), " ")
}

func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

func escapeText(s string) string {
	return string(appendEscaped(nil, []byte(s), false))
}

// appendEscaped appends a word of text with the characters that Markdown would read as markup escaped: emphasis,
// code, links, HTML; at a line's start also headings, quotes, list markers and fences.
func appendEscaped(out, s []byte, lineStart bool) []byte {
	if lineStart && len(s) > 0 {
		switch s[0] {
		case '#', '>', '-', '+', '=', '~':
			out = append(out, '\\')
		default:
			i := 0
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			if i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')') {
				out = append(out, s[:i]...)
				out = append(out, '\\')
				s = s[i:]
			}
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '*', '`', '[', ']', '<':
			out = append(out, '\\', c)
		case '_':
			if i > 0 && i+1 < len(s) && isWordByte(s[i-1]) && isWordByte(s[i+1]) {
				out = append(out, c) // inside a word (snake_case) it is no emphasis
			} else {
				out = append(out, '\\', c)
			}
		default:
			out = append(out, c)
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
