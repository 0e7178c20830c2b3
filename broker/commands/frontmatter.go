package commands

import (
	"fmt"
	"strings"
)

// fmValue is one frontmatter value: a string, or a list of strings (str then holds a [a, b] list as written).
type fmValue struct {
	str    string
	list   []string
	isList bool
}

// frontmatter is what the tolerant parser read: the keys it understood and what it could not read.
type frontmatter struct {
	present bool
	fields  map[string]fmValue
	errs    []string // "line N: what was wrong", in file order
}

// splitFrontmatter separates the YAML-ish header between "---" lines from the body. src has its line ends
// normalized to "\n". A header that is opened but never closed is an error and the whole text is the body.
func splitFrontmatter(src string) (fm frontmatter, body string) {
	fm.fields = map[string]fmValue{}
	first, rest, _ := strings.Cut(src, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return fm, src
	}
	fm.present = true
	lines := strings.Split(rest, "\n")
	for i, l := range lines {
		if t := strings.TrimRight(l, " \t"); t == "---" || t == "..." {
			parseFrontmatter(&fm, lines[:i])
			return fm, strings.Join(lines[i+1:], "\n")
		}
	}
	fm.errs = append(fm.errs, "line 1: no closing --- line")
	return fm, src
}

func indented(l string) bool { return strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") }

// parseFrontmatter reads "key: value" lines, quoted values, "- item" and "[a, b]" lists, "|" and ">" block
// scalars and indented continuation lines. What it cannot read becomes an error naming the line; the rest is kept.
func parseFrontmatter(fm *frontmatter, lines []string) {
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		n := i + 2 // line 1 is the opening ---
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if indented(line) {
			fm.errs = append(fm.errs, fmt.Sprintf("line %d: indented line without a key", n))
			continue
		}
		if trimmed == "-" || strings.HasPrefix(trimmed, "- ") {
			fm.errs = append(fm.errs, fmt.Sprintf("line %d: list item without a key", n))
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		key := strings.TrimSpace(k)
		if !ok || key == "" || strings.ContainsAny(key, " \t\"'") {
			fm.errs = append(fm.errs, fmt.Sprintf("line %d: expected key: value", n))
			continue
		}
		v = strings.TrimSpace(v)
		// Continuation: the following indented or empty lines belong to this key.
		j := i + 1
		for j < len(lines) && (indented(lines[j]) || strings.TrimSpace(lines[j]) == "") {
			j++
		}
		cont := lines[i+1 : j]
		for len(cont) > 0 && strings.TrimSpace(cont[len(cont)-1]) == "" {
			cont = cont[:len(cont)-1]
		}
		i = j - 1
		val, err := parseValue(v, cont)
		if err != "" {
			fm.errs = append(fm.errs, fmt.Sprintf("line %d: %s: %s", n, key, err))
			continue
		}
		if _, dup := fm.fields[key]; dup {
			fm.errs = append(fm.errs, fmt.Sprintf("line %d: %s given twice; the first is used", n, key))
			continue
		}
		fm.fields[key] = val
	}
}

func parseValue(v string, cont []string) (fmValue, string) {
	switch {
	case v == "" && len(cont) == 0:
		return fmValue{}, ""
	case v == "" && isListBlock(cont):
		var items []string
		for _, c := range cont {
			t := strings.TrimSpace(c)
			if t == "" {
				continue
			}
			if t != "-" && !strings.HasPrefix(t, "- ") {
				return fmValue{}, "a list mixes items and other lines"
			}
			s, err := scalar(strings.TrimSpace(strings.TrimPrefix(t, "-")))
			if err != "" {
				return fmValue{}, err
			}
			items = append(items, s)
		}
		return fmValue{list: items, isList: true}, ""
	case v == "":
		// A nested mapping (e.g. Agent Skills' metadata:) is accepted and not read; otherwise a folded scalar.
		if k, _, ok := strings.Cut(strings.TrimSpace(cont[0]), ":"); ok && !strings.ContainsAny(k, " \t") {
			return fmValue{}, ""
		}
		return fmValue{str: fold(cont)}, ""
	case strings.TrimRight(v, "+-") == "|" || strings.TrimRight(v, "+-") == ">":
		return fmValue{str: block(cont, v[0] == '|')}, ""
	case strings.HasPrefix(v, "["):
		full := strings.TrimSpace(v + " " + fold(cont))
		// Not one well-formed [a, b] list (e.g. the common argument-hint "[pr] [priority]"): plain text.
		if !strings.HasSuffix(full, "]") || strings.Count(full, "[") != 1 || strings.Count(full, "]") != 1 {
			return fmValue{str: full}, ""
		}
		var items []string
		for _, it := range strings.Split(full[1:len(full)-1], ",") {
			if it = strings.TrimSpace(it); it == "" {
				continue
			}
			s, err := scalar(it)
			if err != "" {
				return fmValue{}, err
			}
			items = append(items, s)
		}
		return fmValue{str: full, list: items, isList: true}, ""
	case v[0] == '"' || v[0] == '\'':
		full := v
		if len(cont) > 0 {
			full = v + " " + fold(cont)
		}
		s, err := scalar(full)
		return fmValue{str: s}, err
	default:
		s, err := scalar(v)
		if err == "" && len(cont) > 0 {
			s += " " + fold(cont)
		}
		return fmValue{str: s}, err
	}
}

func isListBlock(cont []string) bool {
	for _, c := range cont {
		if t := strings.TrimSpace(c); t != "" {
			return t == "-" || strings.HasPrefix(t, "- ")
		}
	}
	return false
}

// fold joins continuation lines as YAML folds a plain scalar: one space between lines, a newline for an empty one.
func fold(cont []string) string {
	var b strings.Builder
	blank := false
	for _, c := range cont {
		t := strings.TrimSpace(c)
		if t == "" {
			blank = true
			continue
		}
		if b.Len() > 0 {
			if blank {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		blank = false
		b.WriteString(t)
	}
	return b.String()
}

// block reads a "|" (literal) or ">" (folded) block scalar: the lines less their common indentation.
func block(cont []string, literal bool) string {
	if !literal {
		return fold(cont)
	}
	indent := -1
	for _, c := range cont {
		if strings.TrimSpace(c) == "" {
			continue
		}
		if w := len(c) - len(strings.TrimLeft(c, " \t")); indent < 0 || w < indent {
			indent = w
		}
	}
	out := make([]string, len(cont))
	for i, c := range cont {
		if len(c) >= indent && indent > 0 {
			c = c[indent:]
		}
		out[i] = strings.TrimRight(c, " \t")
	}
	return strings.Join(out, "\n")
}

// scalar reads one value: double-quoted (with \" \\ \n \t escapes), single-quoted (a doubled single quote is one) or plain
// (a " #" starts a comment). Text after a closing quote other than a comment is an error.
func scalar(v string) (string, string) {
	if v == "" {
		return "", ""
	}
	switch v[0] {
	case '"':
		var b strings.Builder
		for i := 1; i < len(v); i++ {
			c := v[i]
			switch {
			case c == '\\' && i+1 < len(v):
				i++
				switch v[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				default:
					b.WriteByte(v[i])
				}
			case c == '"':
				return b.String(), afterQuote(v[i+1:])
			default:
				b.WriteByte(c)
			}
		}
		return "", "unterminated quote"
	case '\'':
		var b strings.Builder
		for i := 1; i < len(v); i++ {
			if v[i] == '\'' {
				if i+1 < len(v) && v[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				return b.String(), afterQuote(v[i+1:])
			}
			b.WriteByte(v[i])
		}
		return "", "unterminated quote"
	}
	if c, _, ok := strings.Cut(v, " #"); ok {
		v = c
	}
	return strings.TrimSpace(v), ""
}

func afterQuote(rest string) string {
	rest = strings.TrimSpace(rest)
	if rest == "" || strings.HasPrefix(rest, "#") {
		return ""
	}
	return "text after the closing quote"
}
