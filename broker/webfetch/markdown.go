package webfetch

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// toMarkdown converts an HTML page to Markdown in one pass over golang.org/x/net/html's tokens (entities, raw text
// and attributes as the HTML5 tokenizer reads them), with no tree: the open elements are a stack, closed as a
// browser closes them (a new paragraph, list item or cell closes the open one; an end tag closes what it contains,
// and an end tag with nothing open to close is ignored). What never becomes text a reader sees — scripts, styles,
// SVG, templates, frames, form fields, the head but its title — is skipped as it is read. Links and images become
// absolute, relative to the page's URL. Nothing is made before the first call.
func toMarkdown(ctx context.Context, page string, base *url.URL) (string, error) {
	c := &converter{base: base, last: map[atom.Atom]int{}}
	c.w = &mdWriter{out: make([]byte, 0, len(page)/2)}
	z := html.NewTokenizer(strings.NewReader(page))
	for n := 1; ; n++ {
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		switch tt := z.Next(); tt {
		case html.ErrorToken:
			if err := z.Err(); !errors.Is(err, io.EOF) {
				return "", err
			}
			c.popTo(0)
			c.endCapture()
			body := strings.TrimSpace(string(c.w.out))
			if title := escapeText(collapseSpace(c.title)); title != "" && !strings.HasPrefix(body, "# "+title) {
				body = "# " + title + "\n\n" + body
			}
			return strings.TrimSpace(body), nil
		case html.TextToken:
			c.text(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken:
			c.start(c.tagAtom(z.Raw()), z, tt == html.SelfClosingTagToken)
		case html.EndTagToken:
			c.end(c.tagAtom(z.Raw()))
		}
	}
}

// converter is the state of one conversion.
type converter struct {
	base  *url.URL
	w     *mdWriter // the writer of the document, or of the table cell being read
	title string

	stack    []elem
	last     map[atom.Atom]int // the topmost open element of each name (its index in stack)
	scopes   []int             // open elements that end a scope: tables, cells, captions
	specials []int             // open elements that stop a "close the open X" search (the spec's special elements)
	tables   []*tableState

	skip      atom.Atom // skipping an element's content (script, svg, …) until its end
	skipDepth int
	capture   atom.Atom // reading a pre, code or title as raw text
	capDepth  int
	capText   []byte
	capLang   string
	name      [16]byte  // a tag's name, lower-cased
	spare     *mdWriter // a cell's writer, for the next cell
}

// elem is an open element.
type elem struct {
	a     atom.Atom
	kind  kind
	mark  string // the closing mark of emphasis, or a link's "](url)"
	label string // a link's aria-label or title
	num   int    // the next number of an ordered list
	prev  int    // the index of the open element of the same name below it, -1 none
	flags uint8
	saved *mdWriter // a cell's, the writer to go back to
}

const (
	fOrdered uint8 = 1 << iota
	fNested        // a list inside a list item
	fPrefix        // pushed a line prefix, or a heading's mark
	fScope
	fSpecial
)

type kind uint8

const (
	kGeneric kind = iota
	kBlock
	kHeading
	kQuote // a blockquote or a definition
	kList
	kItem
	kMark
	kLink
	kTable
	kRow
	kCell
	kCaption
	kCapture
)

type tableState struct {
	rows    [][]string
	caption string
	index   int  // of the table in stack
	flat    bool // a table inside a cell, link or heading: its text only
}

const spaces = "                "

var headingMarks = [...]string{"# ", "## ", "### ", "#### ", "##### ", "###### "}

// maxOpen bounds the open elements; deeper ones are read as their text (defends against a page of endless nesting).
const maxOpen = 1024

func (c *converter) text(t []byte) {
	switch {
	case c.skip != 0:
	case c.capture != 0:
		c.capText = append(c.capText, t...)
	default:
		c.w.text(t)
	}
}

func (c *converter) start(a atom.Atom, z *html.Tokenizer, selfClosing bool) {
	if c.skip != 0 {
		if a == c.skip && !selfClosing {
			c.skipDepth++
		}
		return
	}
	if skipped(a) {
		// Never text a reader of the page sees.
		if !selfClosing {
			c.skip, c.skipDepth = a, 1
		}
		return
	}
	if c.capture != 0 {
		switch {
		case a == atom.Br && c.capture == atom.Pre:
			c.capText = append(c.capText, '\n')
		case a == c.capture && !selfClosing:
			c.capDepth++
		case a == atom.Code && c.capture == atom.Pre && c.capLang == "":
			c.capLang = language(readAttrs(z).class)
		}
		return
	}
	switch a {
	case atom.Html, atom.Head, atom.Body, atom.Meta, atom.Link, atom.Base, atom.Input, atom.Embed, atom.Param,
		atom.Source, atom.Track, atom.Area, atom.Col, atom.Wbr, atom.Keygen, atom.Frame:
		return
	case atom.Title:
		c.beginCapture(a, "")
		return
	case atom.Br:
		c.w.newline()
		return
	case atom.Hr:
		c.closeP()
		c.w.block()
		c.w.raw("* * *")
		c.w.block()
		return
	case atom.Img:
		m := readAttrs(z)
		alt, src := escapeText(collapseSpace(m.alt)), resolve(c.base, m.src)
		switch {
		case src != "":
			c.w.raw("![" + alt + "](" + src + titlePart(m.title) + ")")
		case alt != "":
			c.w.raw(alt)
		}
		return
	}
	if selfClosing && a != 0 { // <div/> is an open div in HTML; only unknown (foreign) elements close themselves
		selfClosing = false
	}
	if selfClosing {
		return
	}
	if len(c.stack) >= maxOpen {
		return
	}
	c.implied(a)
	e := elem{a: a}
	switch a {
	case atom.P, atom.Div, atom.Section, atom.Article, atom.Main, atom.Header, atom.Footer, atom.Nav, atom.Aside,
		atom.Figure, atom.Figcaption, atom.Address, atom.Details, atom.Summary, atom.Form, atom.Fieldset, atom.Legend,
		atom.Center, atom.Dl, atom.Dt, atom.Hgroup, atom.Menu, atom.Dir, atom.Search, atom.Listing, atom.Xmp:
		e.kind = kBlock
		c.w.block()
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		e.kind = kHeading
		c.w.block()
		if c.w.inline == 0 { // a heading inside a link or a cell is its text
			c.w.open(headingMarks[a.String()[1]-'1'])
			e.flags |= fPrefix
		}
		c.w.inline++
	case atom.Blockquote, atom.Dd:
		e.kind = kQuote
		c.w.block()
		if c.w.inline == 0 {
			if a == atom.Dd {
				c.w.pushPrefix("  ", ": ")
			} else {
				c.w.pushPrefix("> ", "")
			}
			e.flags |= fPrefix
		}
	case atom.Ul, atom.Ol:
		e.kind, e.num = kList, 1
		if a == atom.Ol {
			e.flags |= fOrdered
			if v, err := strconv.Atoi(strings.TrimSpace(readAttrs(z).start)); err == nil && v >= 0 && v < 1e6 {
				e.num = v
			}
		}
		if _, ok := c.last[atom.Li]; ok {
			e.flags |= fNested
			c.w.newline()
		} else {
			c.w.block()
		}
	case atom.Li:
		e.kind = kItem
		c.w.newline()
		marker := "- "
		if i := max(c.index(atom.Ul), c.index(atom.Ol)); i >= 0 && c.stack[i].flags&fOrdered != 0 {
			marker = strconv.Itoa(c.stack[i].num) + ". "
			c.stack[i].num++
		}
		if c.w.inline == 0 {
			c.w.pushPrefix(spaces[:len(marker)], marker)
			e.flags |= fPrefix
		}
	case atom.Pre:
		e.kind = kCapture
		c.beginCapture(a, language(readAttrs(z).class))
	case atom.Code, atom.Kbd, atom.Samp, atom.Tt:
		e.kind = kCapture
		c.beginCapture(a, "")
	case atom.Strong, atom.B:
		e.kind, e.mark = kMark, "**"
	case atom.Em, atom.I, atom.Cite, atom.Var, atom.Dfn:
		e.kind, e.mark = kMark, "*"
	case atom.Del, atom.S, atom.Strike:
		e.kind, e.mark = kMark, "~~"
	case atom.A:
		m := readAttrs(z)
		if href := resolve(c.base, m.href); href != "" {
			e.kind, e.mark = kLink, "]("+href+titlePart(m.title)+")"
			e.label = escapeText(collapseSpace(cmp.Or(m.label, m.title))) // an icon's link: its label is its text
			c.w.inline++
		}
	case atom.Table:
		e.kind = kTable
		e.flags |= fScope
		c.w.block()
		c.tables = append(c.tables, &tableState{index: len(c.stack), flat: c.w.inline > 0})
	case atom.Tr:
		if t := c.table(); t != nil && !t.flat {
			e.kind = kRow
			t.rows = append(t.rows, nil)
		} else {
			c.w.newline()
		}
	case atom.Td, atom.Th, atom.Caption:
		e.flags |= fScope
		if t := c.table(); t != nil && !t.flat {
			e.kind, e.saved = kCell, c.w
			if a == atom.Caption {
				e.kind = kCaption
			} else if c.index(atom.Tr) < t.index {
				t.rows = append(t.rows, nil) // a cell with no row: the row is implied
			}
			c.w = c.cellWriter()
		} else {
			c.w.space = true
		}
	}
	c.push(e)
	switch e.kind {
	case kMark:
		c.w.open(e.mark)
	case kLink:
		c.w.open("[")
	}
}

// implied closes what a start tag of a closes in a browser: an open paragraph before a block, the open list item
// before the next, a heading before a heading, the open cell and row before the next.
func (c *converter) implied(a atom.Atom) {
	switch a {
	case atom.Li:
		c.closeOpen(atom.Li)
	case atom.Dd, atom.Dt:
		c.closeOpen(atom.Dd)
		c.closeOpen(atom.Dt)
	case atom.A:
		if i := c.index(atom.A); i >= 0 && i > c.top(c.scopes) {
			c.popTo(i) // links do not nest
		}
	case atom.Tr, atom.Td, atom.Th, atom.Caption, atom.Tbody, atom.Thead, atom.Tfoot:
		if t := c.table(); t != nil {
			for _, cell := range []atom.Atom{atom.Td, atom.Th, atom.Caption} {
				if i := c.index(cell); i > t.index {
					c.popTo(i)
				}
			}
			if a != atom.Td && a != atom.Th {
				if i := c.index(atom.Tr); i > t.index {
					c.popTo(i)
				}
			}
		}
		return
	}
	if closesP(a) {
		c.closeP()
	}
	if isHeading(a) {
		if n := len(c.stack); n > 0 && isHeading(c.stack[n-1].a) {
			c.popTo(n - 1)
		}
	}
}

// closeOpen closes the open a when no special element other than address, div and p is above it.
func (c *converter) closeOpen(a atom.Atom) {
	i := c.index(a)
	if i < 0 {
		return
	}
	for j := len(c.specials) - 1; j >= 0 && c.specials[j] > i; j-- {
		if s := c.stack[c.specials[j]].a; s != atom.Address && s != atom.Div && s != atom.P {
			return
		}
	}
	c.popTo(i)
}

func (c *converter) closeP() {
	if i := c.index(atom.P); i >= 0 && i > c.top(c.scopes) {
		c.popTo(i)
	}
}

func (c *converter) end(a atom.Atom) {
	if c.skip != 0 {
		if a == c.skip {
			if c.skipDepth--; c.skipDepth == 0 {
				c.skip = 0
			}
		}
		return
	}
	if c.capture != 0 {
		switch {
		case a == c.capture:
			if c.capDepth--; c.capDepth > 0 {
				return
			}
			if a == atom.Title {
				c.endCapture()
				return
			}
		case isSpecial(a) && c.index(a) >= 0:
			// An unclosed pre or code ends with the element that holds it.
		default:
			return
		}
	}
	if isHeading(a) { // any heading's end tag ends the open heading
		for _, h := range []atom.Atom{atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6} {
			if c.index(h) > c.index(a) {
				a = h
			}
		}
	}
	i := c.index(a)
	switch {
	case i < 0:
		switch a {
		case atom.P: // </p> with no paragraph open is an empty paragraph
			c.w.block()
		case atom.Br:
			c.w.newline()
		}
		return
	case a == atom.Table:
	case a == atom.Tr || a == atom.Td || a == atom.Th || a == atom.Caption || a == atom.Tbody || a == atom.Thead || a == atom.Tfoot:
		if t := c.table(); t == nil || i < t.index {
			return
		}
	case a == atom.Li:
		if i < c.top(c.scopes) || i < max(c.index(atom.Ul), c.index(atom.Ol)) {
			return
		}
	case isSpecial(a) || isFormatting(a):
		if i < c.top(c.scopes) {
			return
		}
	default: // any other end tag closes its element only when no special element is above it
		if i < c.top(c.specials) {
			return
		}
	}
	c.popTo(i)
}

func (c *converter) push(e elem) {
	i := len(c.stack)
	e.prev = -1
	if j, ok := c.last[e.a]; ok {
		e.prev = j
	}
	c.last[e.a] = i
	if e.flags&fScope != 0 || e.a == atom.Table {
		c.scopes = append(c.scopes, i)
	}
	if isSpecial(e.a) {
		e.flags |= fSpecial
		c.specials = append(c.specials, i)
	}
	c.stack = append(c.stack, e)
}

// popTo closes the open elements down to index i, i included, innermost first.
func (c *converter) popTo(i int) {
	for len(c.stack) > i {
		n := len(c.stack) - 1
		e := c.stack[n]
		c.stack = c.stack[:n]
		if e.prev >= 0 {
			c.last[e.a] = e.prev
		} else {
			delete(c.last, e.a)
		}
		if k := len(c.scopes); k > 0 && c.scopes[k-1] == n {
			c.scopes = c.scopes[:k-1]
		}
		if k := len(c.specials); k > 0 && c.specials[k-1] == n {
			c.specials = c.specials[:k-1]
		}
		c.closeElem(e, n)
	}
}

func (c *converter) closeElem(e elem, n int) {
	w := c.w
	switch e.kind {
	case kBlock:
		w.block()
	case kHeading:
		w.inline--
		if e.flags&fPrefix != 0 {
			w.close("")
		}
		w.block()
	case kQuote:
		if e.flags&fPrefix != 0 {
			w.popPrefix()
		}
		w.block()
	case kList:
		if e.flags&fNested != 0 {
			w.newline()
		} else {
			w.block()
		}
	case kItem:
		if e.flags&fPrefix != 0 {
			w.popPrefix()
		}
		w.newline()
	case kCapture:
		c.endCapture()
	case kMark:
		w.close(e.mark)
	case kLink:
		w.inline--
		if !w.close(e.mark) && e.label != "" {
			w.raw("[" + e.label + e.mark)
		}
	case kCell, kCaption:
		text := strings.TrimSpace(string(w.out))
		c.w = e.saved
		c.spare = w
		if t := c.table(); t != nil {
			if e.kind == kCaption {
				t.caption = text
			} else if len(t.rows) > 0 {
				t.rows[len(t.rows)-1] = append(t.rows[len(t.rows)-1], text)
			}
		}
	case kTable:
		if t := c.table(); t != nil && t.index == n {
			c.tables = c.tables[:len(c.tables)-1]
			if !t.flat {
				w.table(t.caption, t.rows)
			}
		}
		w.block()
	}
}

func (c *converter) beginCapture(a atom.Atom, lang string) {
	c.capture, c.capDepth, c.capText, c.capLang = a, 1, c.capText[:0], lang
}

// endCapture writes what a pre or code held, or keeps the first title.
func (c *converter) endCapture() {
	a, text := c.capture, string(c.capText)
	c.capture = 0
	switch a {
	case atom.Title:
		if c.title == "" {
			c.title = text
		}
	case atom.Pre:
		c.w.codeBlock(text, c.capLang)
	case 0:
	default:
		c.w.code(text)
	}
}

// tagAtom is the element a tag token names, read from the token as it came (the tokenizer's TagName copies each
// name): the name ends at a space, '/' or '>', in any case.
func (c *converter) tagAtom(raw []byte) atom.Atom {
	raw = bytes.TrimLeft(raw, "</")
	n := 0
	for n < len(raw) && n < len(c.name) && !isSpace(raw[n]) && raw[n] != '/' && raw[n] != '>' {
		b := raw[n]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		c.name[n] = b
		n++
	}
	if n == len(c.name) && n < len(raw) && !isSpace(raw[n]) && raw[n] != '/' && raw[n] != '>' {
		return 0 // longer than any element's name
	}
	return atom.Lookup(c.name[:n])
}

// index is the stack index of the topmost open a, -1 when none is open.
func (c *converter) index(a atom.Atom) int {
	if i, ok := c.last[a]; ok {
		return i
	}
	return -1
}

func (c *converter) top(s []int) int {
	if len(s) == 0 {
		return -1
	}
	return s[len(s)-1]
}

// cellWriter is an empty writer for a table cell (one line).
func (c *converter) cellWriter() *mdWriter {
	w := c.spare
	c.spare = nil
	if w == nil {
		w = &mdWriter{}
	}
	*w = mdWriter{out: w.out[:0], opens: w.opens[:0], prefix: w.prefix[:0], inline: 1}
	return w
}

// table is the innermost open table.
func (c *converter) table() *tableState {
	if len(c.tables) == 0 {
		return nil
	}
	return c.tables[len(c.tables)-1]
}

// tagAttrs are the attributes Garuda reads.
type tagAttrs struct{ href, src, alt, title, label, class, start string }

// readAttrs reads the current start tag's attributes; of a repeated one the first counts, as in a browser.
func readAttrs(z *html.Tokenizer) tagAttrs {
	var m tagAttrs
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		var p *string
		switch string(k) {
		case "href":
			p = &m.href
		case "src":
			p = &m.src
		case "alt":
			p = &m.alt
		case "title":
			p = &m.title
		case "aria-label":
			p = &m.label
		case "class":
			p = &m.class
		case "start":
			p = &m.start
		default:
			continue
		}
		if *p == "" {
			*p = string(v)
		}
	}
	return m
}

// language is a code block's language from its class (language-go, lang-go).
func language(class string) string {
	for f := range strings.FieldsSeq(class) {
		for _, p := range []string{"language-", "lang-"} {
			if l, ok := strings.CutPrefix(f, p); ok && l != "" && !strings.ContainsAny(l, "`~") {
				return l
			}
		}
	}
	return ""
}

// skipped reports the elements whose content is never text a reader of the page sees.
func skipped(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Iframe, atom.Noembed, atom.Noframes, atom.Frameset,
		atom.Object, atom.Svg, atom.Math, atom.Canvas, atom.Textarea, atom.Select, atom.Audio, atom.Video,
		atom.Map, atom.Dialog, atom.Datalist:
		return true
	}
	return false
}

func isHeading(a atom.Atom) bool {
	return a == atom.H1 || a == atom.H2 || a == atom.H3 || a == atom.H4 || a == atom.H5 || a == atom.H6
}

// closesP reports whether a start tag of a closes an open paragraph.
func closesP(a atom.Atom) bool {
	switch a {
	case atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Center, atom.Details, atom.Dialog, atom.Dir,
		atom.Div, atom.Dl, atom.Fieldset, atom.Figcaption, atom.Figure, atom.Footer, atom.Form, atom.H1, atom.H2,
		atom.H3, atom.H4, atom.H5, atom.H6, atom.Header, atom.Hgroup, atom.Hr, atom.Main, atom.Menu, atom.Nav,
		atom.Ol, atom.P, atom.Pre, atom.Search, atom.Section, atom.Summary, atom.Table, atom.Ul, atom.Li, atom.Dd,
		atom.Dt, atom.Listing, atom.Xmp:
		return true
	}
	return false
}

// isSpecial reports the spec's special elements that Garuda keeps open (void and skipped ones never are).
func isSpecial(a atom.Atom) bool {
	switch a {
	case atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Caption, atom.Center, atom.Dd, atom.Details,
		atom.Dir, atom.Div, atom.Dl, atom.Dt, atom.Fieldset, atom.Figcaption, atom.Figure, atom.Footer, atom.Form,
		atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Header, atom.Hgroup, atom.Li, atom.Listing,
		atom.Main, atom.Marquee, atom.Menu, atom.Nav, atom.Ol, atom.P, atom.Pre, atom.Search, atom.Section,
		atom.Summary, atom.Table, atom.Tbody, atom.Td, atom.Tfoot, atom.Th, atom.Thead, atom.Tr, atom.Ul, atom.Xmp:
		return true
	}
	return false
}

// isFormatting reports the elements whose end tag reaches past other elements to close them (emphasis, links).
func isFormatting(a atom.Atom) bool {
	switch a {
	case atom.A, atom.B, atom.Big, atom.Code, atom.Em, atom.Font, atom.I, atom.Nobr, atom.S, atom.Small, atom.Strike,
		atom.Strong, atom.Tt, atom.U, atom.Del, atom.Kbd, atom.Samp, atom.Cite, atom.Var, atom.Dfn:
		return true
	}
	return false
}
