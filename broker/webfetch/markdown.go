package webfetch

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// toMarkdown converts an HTML page to Markdown: parsed by golang.org/x/net/html (the HTML5 parsing algorithm, so
// unclosed and misnested tags are read as a browser reads them), then written in one walk of the tree. What never
// becomes text a reader sees — scripts, styles, SVG, templates, frames, forms' fields, the head but its title — is
// left out. Links and images become absolute, relative to the page's URL. Nothing is made before the first call.
func toMarkdown(ctx context.Context, page string, base *url.URL) (string, error) {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return "", err
	}
	w := &mdWriter{ctx: ctx, base: base}
	w.out = make([]byte, 0, len(page)/2)
	title := w.walk(doc)
	if w.err != nil {
		return "", w.err
	}
	body := strings.TrimSpace(string(w.out))
	if title = escapeText(collapseSpace(title), false); title != "" && !strings.HasPrefix(body, "# "+title) {
		body = "# " + title + "\n\n" + body
	}
	return strings.TrimSpace(body), nil
}

// mdWriter writes Markdown as the walk goes: block boundaries and spaces are held back until text follows (so that
// neither piles up, nor ends a document), as are the opening marks of emphasis and links (an element with no text
// leaves no marks).
type mdWriter struct {
	ctx    context.Context
	base   *url.URL
	out    []byte
	err    error
	nodes  int
	breaks int      // newlines owed before the next text (at most 2: a blank line)
	space  bool     // a space owed before the next text on this line
	opens  []string // opening marks owed before the next text
	prefix []linePrefix
	inline int // inside a link, a heading or a table cell: block boundaries are spaces
	title  string
}

// linePrefix is what each line inside a blockquote or list item begins with; a list item's first line has its
// marker instead.
type linePrefix struct {
	indent, marker string
	item           bool
	started        bool // a line of it was written: blank lines carry it from then on
}

// maxPrefix bounds the width of a line's prefixes: past it only the innermost are written (defends against a page
// of deeply nested lists or quotes whose every short line would cost the whole depth).
const maxPrefix = 16

// walk writes n and its children; it returns the document's title when it meets one.
func (w *mdWriter) walk(n *html.Node) string {
	if w.err != nil {
		return ""
	}
	if w.nodes++; w.nodes&1023 == 0 {
		if w.err = w.ctx.Err(); w.err != nil {
			return ""
		}
	}
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return ""
	case html.DocumentNode:
		w.children(n)
		return w.title
	case html.ElementNode:
	default:
		return "" // comments, doctypes
	}
	switch n.DataAtom {
	case atom.Head:
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.DataAtom == atom.Title && w.title == "" {
				w.title = textContent(c)
			}
		}
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Iframe, atom.Frame, atom.Frameset, atom.Object,
		atom.Embed, atom.Svg, atom.Math, atom.Canvas, atom.Link, atom.Meta, atom.Input, atom.Textarea, atom.Select,
		atom.Button, atom.Title, atom.Base, atom.Audio, atom.Video, atom.Source, atom.Track, atom.Map, atom.Dialog:
		// Never text a reader of the page sees.
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		w.block()
		w.open(strings.Repeat("#", int(n.Data[1]-'0')) + " ")
		w.inline++
		w.children(n)
		w.inline--
		w.close("")
		w.block()
	case atom.P, atom.Div, atom.Section, atom.Article, atom.Main, atom.Header, atom.Footer, atom.Nav, atom.Aside,
		atom.Figure, atom.Figcaption, atom.Address, atom.Details, atom.Summary, atom.Form, atom.Fieldset, atom.Legend,
		atom.Center, atom.Dl, atom.Dt, atom.Hgroup, atom.Caption:
		w.block()
		w.children(n)
		w.block()
	case atom.Dd:
		w.block()
		w.prefix = append(w.prefix, linePrefix{indent: "  ", marker: ": "})
		w.children(n)
		w.prefix = w.prefix[:len(w.prefix)-1]
		w.block()
	case atom.Br:
		w.newline()
	case atom.Hr:
		w.block()
		w.raw("* * *")
		w.block()
	case atom.Blockquote:
		w.block()
		w.prefix = append(w.prefix, linePrefix{indent: "> "})
		w.children(n)
		w.prefix = w.prefix[:len(w.prefix)-1]
		w.block()
	case atom.Ul, atom.Ol:
		w.list(n)
	case atom.Li: // outside a list
		w.newline()
		w.children(n)
		w.newline()
	case atom.Pre:
		w.preformatted(n)
	case atom.Code, atom.Kbd, atom.Samp, atom.Tt:
		w.code(textContent(n))
	case atom.Strong, atom.B:
		w.wrap(n, "**")
	case atom.Em, atom.I, atom.Cite, atom.Var, atom.Dfn:
		w.wrap(n, "*")
	case atom.Del, atom.S, atom.Strike:
		w.wrap(n, "~~")
	case atom.A:
		w.link(n)
	case atom.Img:
		w.image(n)
	case atom.Table:
		w.table(n)
	default:
		w.children(n)
	}
	return ""
}

func (w *mdWriter) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
}

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

// text writes a text node: whitespace collapsed, Markdown's own characters escaped.
func (w *mdWriter) text(s string) {
	for len(s) > 0 {
		i := strings.IndexFunc(s, isSpace)
		if i != 0 {
			word := s
			if i > 0 {
				word = s[:i]
			}
			w.out = appendEscaped(w.out, word, w.begin())
			if i < 0 {
				return
			}
			s = s[i:]
		}
		w.space = true
		j := strings.IndexFunc(s, notSpace)
		if j < 0 {
			return
		}
		s = s[j:]
	}
}

func (w *mdWriter) raw(s string) {
	w.begin()
	w.out = append(w.out, s...)
}

func (w *mdWriter) open(mark string) { w.opens = append(w.opens, mark) }

// close writes mark after an element's text, or forgets the element's opening mark when it had none.
func (w *mdWriter) close(mark string) bool {
	if n := len(w.opens); n > 0 {
		w.opens = w.opens[:n-1]
		return false
	}
	w.out = append(w.out, mark...)
	return true
}

func (w *mdWriter) wrap(n *html.Node, mark string) {
	w.open(mark)
	w.children(n)
	w.close(mark)
}

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

func (w *mdWriter) preformatted(n *html.Node) {
	s := strings.Trim(textContent(n), "\n")
	if strings.TrimSpace(s) == "" {
		return
	}
	if w.inline > 0 {
		w.code(s)
		return
	}
	lang := language(n)
	if c := n.FirstChild; lang == "" && c != nil && c.DataAtom == atom.Code {
		lang = language(c)
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

// language is a code block's language from its class (language-go, lang-go).
func language(n *html.Node) string {
	for f := range strings.FieldsSeq(attr(n, "class")) {
		for _, p := range []string{"language-", "lang-"} {
			if l, ok := strings.CutPrefix(f, p); ok && l != "" && !strings.ContainsAny(l, "`~") {
				return l
			}
		}
	}
	return ""
}

func (w *mdWriter) list(n *html.Node) {
	nested := len(w.prefix) > 0 && w.prefix[len(w.prefix)-1].item
	if nested {
		w.newline()
	} else {
		w.block()
	}
	num := 1
	if v, err := strconv.Atoi(attr(n, "start")); err == nil && v >= 0 && v < 1e6 {
		num = v
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode || c.DataAtom != atom.Li {
			w.walk(c)
			continue
		}
		marker := "- "
		if n.DataAtom == atom.Ol {
			marker = strconv.Itoa(num) + ". "
			num++
		}
		w.newline()
		w.prefix = append(w.prefix, linePrefix{indent: strings.Repeat(" ", len(marker)), marker: marker, item: true})
		w.children(c)
		if p := w.prefix[len(w.prefix)-1]; p.marker != "" { // an empty item still shows
			w.raw("")
		}
		w.prefix = w.prefix[:len(w.prefix)-1]
		w.newline()
	}
	if nested {
		w.newline()
	} else {
		w.block()
	}
}

func (w *mdWriter) link(n *html.Node) {
	href := w.resolve(attr(n, "href"))
	if href == "" {
		w.children(n)
		return
	}
	w.open("[")
	w.inline++
	w.children(n)
	w.inline--
	w.close("](" + href + titlePart(attr(n, "title")) + ")")
}

func (w *mdWriter) image(n *html.Node) {
	alt := escapeText(collapseSpace(attr(n, "alt")), false)
	src := w.resolve(attr(n, "src"))
	switch {
	case src == "" && alt == "":
	case src == "":
		w.raw(alt)
	default:
		w.raw("![" + alt + "](" + src + titlePart(attr(n, "title")) + ")")
	}
}

func titlePart(t string) string {
	if t = collapseSpace(t); t == "" {
		return ""
	}
	return ` "` + strings.ReplaceAll(strings.ReplaceAll(t, `\`, `\\`), `"`, `\"`) + `"`
}

// resolve makes a link absolute against the page; what a reader cannot follow (javascript:, data:, a bad URL) is
// dropped, and spaces and parentheses are escaped so the link stays one.
func (w *mdWriter) resolve(ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	u, err := w.base.Parse(ref)
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

// table writes a table as a GFM table: its first row the header, every row as wide as the widest, a cell's text on
// one line with its pipes escaped.
func (w *mdWriter) table(n *html.Node) {
	if w.inline > 0 { // a table inside a cell or link: its text only
		w.children(n)
		return
	}
	var rows [][]string
	var caption string
	var visit func(*html.Node)
	visit = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.DataAtom {
			case atom.Caption:
				caption = w.cell(c)
			case atom.Thead, atom.Tbody, atom.Tfoot:
				visit(c)
			case atom.Tr:
				var row []string
				for d := c.FirstChild; d != nil; d = d.NextSibling {
					if d.Type == html.ElementNode && (d.DataAtom == atom.Td || d.DataAtom == atom.Th) {
						row = append(row, w.cell(d))
					}
				}
				if len(row) > 0 {
					rows = append(rows, row)
				}
			}
		}
	}
	visit(n)
	if w.err != nil {
		return
	}
	if caption != "" {
		w.block()
		w.raw(caption)
	}
	if len(rows) == 0 {
		return
	}
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	w.block()
	for i, r := range rows {
		var b strings.Builder
		b.WriteByte('|')
		for j := range len(r) {
			b.WriteByte(' ')
			b.WriteString(r[j])
			b.WriteString(" |")
		}
		if i == 0 { // the header is as wide as the widest row; the others as they are
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

// cell renders a table cell's content on one line.
func (w *mdWriter) cell(n *html.Node) string {
	c := &mdWriter{ctx: w.ctx, base: w.base, nodes: w.nodes, inline: 1}
	c.children(n)
	w.nodes = c.nodes
	if c.err != nil {
		w.err = c.err
	}
	return strings.ReplaceAll(strings.TrimSpace(string(c.out)), "|", `\|`)
}

// textContent is the text of n and its descendants, as it is.
func textContent(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	var visit func(*html.Node)
	visit = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode:
				b.WriteString(c.Data)
			case c.Type == html.ElementNode && c.DataAtom == atom.Br:
				b.WriteByte('\n')
			case c.Type == html.ElementNode:
				visit(c)
			}
		}
	}
	visit(n)
	return b.String()
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key && a.Namespace == "" {
			return a.Val
		}
	}
	return ""
}

func notSpace(r rune) bool { return !isSpace(r) }

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f'
}

func collapseSpace(s string) string {
	return strings.Join(strings.FieldsFunc(s, isSpace), " ")
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

func escapeText(s string, lineStart bool) string {
	return string(appendEscaped(nil, s, lineStart))
}

// appendEscaped appends a word of text with the characters that Markdown would read as markup escaped: emphasis,
// code, links, HTML; at a line's start also headings, quotes and list markers.
func appendEscaped(out []byte, s string, lineStart bool) []byte {
	if lineStart && s != "" {
		switch s[0] {
		case '#', '>', '-', '+', '=', '~':
			out = append(out, '\\')
		default:
			if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i > 0 && (s[i] == '.' || s[i] == ')') {
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
