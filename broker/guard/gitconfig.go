package guard

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// entry is one key of a git config file: its name and value as git reads them, and where it is in the file.
type entry struct {
	base       string // the section, lower-case, then "." and the subsection as written, if any
	key        string // lower-case
	value      string
	noValue    bool // "key" alone: a boolean true
	start, end int  // the bytes [start, end) hold the key, its value and the rest of its (last) line
}

// name is the key in git's flat spelling: section.subsection.key.
func (e entry) name() string {
	if e.base == "" {
		return e.key // a key before any section: git reads it, and nothing uses it
	}
	return e.base + "." + e.key
}

// parts splits the name as git's parse_config_key does: the section up to the first dot, the key after the
// last, the subsection between ("diff.a.b.command" is the command of diff driver "a.b").
func (e entry) parts() (section, sub string, hasSub bool, key string) {
	n := e.name()
	first, last := strings.IndexByte(n, '.'), strings.LastIndexByte(n, '.')
	if first < 0 {
		return "", "", false, n
	}
	if first == last {
		return n[:first], "", false, n[last+1:]
	}
	return n[:first], n[first+1 : last], true, n[last+1:]
}

var errConfigSyntax = errors.New("not a valid git config file")

// parseConfig reads a git config file the way git's own parser does (config.c, git 2.39): sections and
// subsections, the old [section.sub] syntax, keys on the header's line, quoting, backslash escapes, line
// continuations, comments, CRLF and a UTF-8 BOM. Where git would refuse the file, it fails too; a NUL byte, which
// git's reading and this one could see differently, fails it as well.
func parseConfig(data []byte) ([]entry, error) {
	p := &cfgParser{data: data}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		p.pos = 3
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, fmt.Errorf("a NUL byte: %w", errConfigSyntax)
	}
	var out []entry
	var base string
	comment := false
	for {
		start := p.pos
		c, ok := p.next()
		if !ok {
			return out, nil
		}
		switch {
		case c == '\n':
			comment = false
			continue
		case comment || isSpace(c):
			continue
		case c == '#' || c == ';':
			comment = true
			continue
		case c == '[':
			var err error
			if base, err = p.header(); err != nil {
				return nil, err
			}
			continue
		case !isAlpha(c):
			return nil, fmt.Errorf("byte %d: %w", start, errConfigSyntax)
		}
		e := entry{base: base, start: start}
		var name strings.Builder
		name.WriteByte(lower(c))
		for {
			c, ok = p.peek()
			if !ok || !isKeyChar(c) {
				break
			}
			p.next()
			name.WriteByte(lower(c))
		}
		e.key = name.String()
		for {
			c, ok = p.peek()
			if !ok || c == '\n' || !isSpace(c) {
				break
			}
			p.next()
		}
		switch {
		case !ok || c == '\n':
			e.noValue = true
			if ok {
				p.next()
			}
		case c == '=':
			p.next()
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			e.value = v
		default:
			return nil, fmt.Errorf("byte %d: key %s: %w", p.pos, e.key, errConfigSyntax)
		}
		e.end = p.pos
		out = append(out, e)
	}
}

type cfgParser struct {
	data []byte
	pos  int
}

// next returns the next byte, reading CRLF as LF like git.
func (p *cfgParser) next() (byte, bool) {
	if p.pos >= len(p.data) {
		return 0, false
	}
	c := p.data[p.pos]
	p.pos++
	if c == '\r' && p.pos < len(p.data) && p.data[p.pos] == '\n' {
		p.pos++
		return '\n', true
	}
	return c, true
}

func (p *cfgParser) peek() (byte, bool) {
	save := p.pos
	c, ok := p.next()
	p.pos = save
	return c, ok
}

// header reads a section header after its '[' and returns the section, lower-case, with "." and its subsection.
// [section.sub] is the old spelling of [section "sub"], lower-cased by git.
func (p *cfgParser) header() (string, error) {
	var b strings.Builder
	for {
		c, ok := p.next()
		switch {
		case !ok || c == '\n':
			return "", fmt.Errorf("unterminated section header: %w", errConfigSyntax)
		case isSpace(c):
			sub, err := p.extendedHeader()
			if err != nil {
				return "", err
			}
			if b.Len() == 0 {
				return "", fmt.Errorf("a subsection without a section: %w", errConfigSyntax)
			}
			return b.String() + "." + sub, nil
		case c == ']':
			if b.Len() == 0 || strings.HasPrefix(b.String(), ".") || strings.HasSuffix(b.String(), ".") {
				return "", fmt.Errorf("an empty section name: %w", errConfigSyntax)
			}
			return b.String(), nil
		case !isKeyChar(c) && c != '.':
			return "", fmt.Errorf("byte %q in a section name: %w", c, errConfigSyntax)
		}
		b.WriteByte(lower(c))
	}
}

// extendedHeader reads ` "subsection"]`, after the space that follows the section name.
func (p *cfgParser) extendedHeader() (string, error) {
	c, ok := p.next()
	for ok && isSpace(c) && c != '\n' {
		c, ok = p.next()
	}
	if !ok || c != '"' {
		return "", fmt.Errorf("a subsection must be quoted: %w", errConfigSyntax)
	}
	var b strings.Builder
	for {
		c, ok = p.next()
		switch {
		case !ok || c == '\n':
			return "", fmt.Errorf("unterminated subsection: %w", errConfigSyntax)
		case c == '"':
			if c, ok = p.next(); !ok || c != ']' {
				return "", fmt.Errorf("a subsection must end with \"]: %w", errConfigSyntax)
			}
			return b.String(), nil
		case c == '\\':
			if c, ok = p.next(); !ok || c == '\n' {
				return "", fmt.Errorf("unterminated subsection: %w", errConfigSyntax)
			}
		}
		b.WriteByte(c)
	}
}

// value reads a value after its '=', up to and with the end of its line.
func (p *cfgParser) value() (string, error) {
	var b strings.Builder
	quote, comment, space := false, false, 0
	for {
		c, ok := p.next()
		if !ok {
			c = '\n'
		}
		if c == '\n' {
			if quote {
				return "", fmt.Errorf("an unterminated quote: %w", errConfigSyntax)
			}
			return b.String(), nil
		}
		if comment {
			continue
		}
		if isSpace(c) && !quote {
			if b.Len() > 0 {
				space++
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		for ; space > 0; space-- {
			b.WriteByte(' ')
		}
		switch c {
		case '\\':
			c, ok = p.next()
			switch {
			case !ok:
				return "", fmt.Errorf("a backslash at the end: %w", errConfigSyntax)
			case c == '\n':
				continue // the value goes on on the next line
			case c == 't':
				c = '\t'
			case c == 'b':
				c = '\b'
			case c == 'n':
				c = '\n'
			case c == '\\' || c == '"':
			default:
				return "", fmt.Errorf("a bad escape \\%c: %w", c, errConfigSyntax)
			}
			b.WriteByte(c)
		case '"':
			quote = !quote
		default:
			b.WriteByte(c)
		}
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isKeyChar(c byte) bool {
	return isAlpha(c) || c >= '0' && c <= '9' || c == '-'
}
func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// safeConfig is what a config file that cannot be read safely is replaced with.
const safeConfig = "[core]\n\trepositoryformatversion = 0\n"

// neutralizeConfig returns data without the keys that make git run a program or send data elsewhere (runs), and
// those keys' names. A file it cannot parse, or that still holds such a key once cut (a parser mismatch), is
// replaced whole by safeConfig: defends against a config crafted to read differently here and in git.
func neutralizeConfig(data []byte) (out []byte, removed []string) {
	entries, err := parseConfig(data)
	if err != nil {
		return []byte(safeConfig), []string{"the whole file (" + err.Error() + ")"}
	}
	var b bytes.Buffer
	last := 0
	for _, e := range entries {
		if !runs(e) {
			continue
		}
		b.Write(data[last:e.start])
		if e.end > 0 && data[e.end-1] == '\n' {
			b.WriteByte('\n') // keep the line break, which may end a header's line too
		}
		last = e.end
		removed = append(removed, e.name())
	}
	if len(removed) == 0 {
		return data, nil
	}
	b.Write(data[last:])
	out = b.Bytes()
	again, err := parseConfig(out)
	if err != nil {
		return []byte(safeConfig), []string{"the whole file"}
	}
	for _, e := range again {
		if runs(e) {
			return []byte(safeConfig), []string{"the whole file"}
		}
	}
	return out, removed
}
