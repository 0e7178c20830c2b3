package fsops

import (
	"bytes"
	"fmt"
	"regexp"
	"regexp/syntax"
)

// matcher is a compiled grep pattern: lit is a literal every match contains (found with bytes.Index, which is
// vectorised, before the regexp runs), line matches one line, multi scans a whole buffer.
type matcher struct {
	lit   []byte
	line  *regexp.Regexp
	multi *regexp.Regexp
}

func compileMatcher(pattern string, fold bool) (*matcher, error) {
	flags := ""
	if fold {
		flags = "(?i)"
	}
	line, err := regexp.Compile(flags + pattern)
	if err != nil {
		return nil, fmt.Errorf("grep pattern %q: %w: %w", pattern, ErrBadPattern, err)
	}
	multi := regexp.MustCompile("(?m)" + flags + pattern)
	m := &matcher{line: line, multi: multi}
	if re, err := syntax.Parse(flags+pattern, syntax.Perl); err == nil {
		if l := requiredLiteral(re.Simplify()); len(l) > 0 {
			m.lit = []byte(l)
		}
	}
	return m, nil
}

// requiredLiteral returns the longest case-sensitive literal that every match of re contains ("" if none known).
func requiredLiteral(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return ""
		}
		return string(re.Rune)
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best, run := "", ""
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpLiteral && sub.Flags&syntax.FoldCase == 0 {
				run += string(sub.Rune)
				continue
			}
			if len(run) > len(best) {
				best = run
			}
			run = ""
			if l := requiredLiteral(sub); len(l) > len(best) {
				best = l
			}
		}
		if len(run) > len(best) {
			best = run
		}
		return best
	}
	return ""
}

// matchLines calls fn with the start and end offsets of every line of buf that matches; fn returns false to stop.
func (m *matcher) matchLines(buf []byte, fn func(ls, le int) bool) {
	pos := 0
	for pos <= len(buf) {
		var at int
		if m.lit != nil {
			i := bytes.Index(buf[pos:], m.lit)
			if i < 0 {
				return
			}
			at = pos + i
		} else {
			loc := m.multi.FindIndex(buf[pos:])
			if loc == nil {
				return
			}
			at = pos + loc[0]
		}
		ls := bytes.LastIndexByte(buf[pos:at], '\n') + 1 + pos
		le := bytes.IndexByte(buf[at:], '\n')
		if le < 0 {
			le = len(buf)
		} else {
			le += at
		}
		if ls == len(buf) && ls > 0 {
			return // nothing after the last newline
		}
		if m.line.Match(buf[ls:le]) {
			if !fn(ls, le) {
				return
			}
		}
		pos = le + 1
	}
}
