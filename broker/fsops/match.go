package fsops

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
)

// matcher is a compiled grep pattern: lit is a literal every match contains (found with bytes.Index, which is
// vectorised, before the regexp runs), line matches one line, multi scans a whole buffer. Without either, lines
// are matched one by one.
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
	m := &matcher{line: line}
	if re, err := syntax.Parse(flags+pattern, syntax.Perl); err == nil {
		if l := requiredLiteral(re.Simplify()); len(l) > 0 {
			m.lit = []byte(l)
		}
		// A pattern that can match a line break ([^x]+, \s, (?s).) would make each search over the buffer run on past
		// its line, to the end of the file, once per matching line: quadratic. Such patterns go line by line.
		if m.lit == nil && !consumesNewline(re.Simplify()) && !anchorsEnd(re) {
			m.multi, _ = regexp.Compile("(?m)" + flags + pattern)
		}
	}
	return m, nil
}

// anchorsEnd reports whether re has a "$" (or \z): on a CRLF line it matches before the "\r", which the multi-line
// scan, whose "$" is only before a "\n", would miss.
func anchorsEnd(re *syntax.Regexp) bool {
	if re.Op == syntax.OpEndLine || re.Op == syntax.OpEndText {
		return true
	}
	return slices.ContainsFunc(re.Sub, anchorsEnd)
}

// consumesNewline reports whether some instruction of re's program can read a '\n' (true when unsure).
func consumesNewline(re *syntax.Regexp) bool {
	prog, err := syntax.Compile(re)
	if err != nil {
		return true
	}
	for _, in := range prog.Inst {
		switch in.Op {
		case syntax.InstRuneAny:
			return true
		case syntax.InstRune, syntax.InstRune1:
			if in.MatchRune('\n') {
				return true
			}
		}
	}
	return false
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

// scanWindow is how much of a file one regexp scan covers before the call's end is checked again.
const scanWindow = 64 << 10

// matchLines calls fn with the start and end offsets of every line of buf that matches; fn returns false to stop.
// It stops early when ctx ends: defends against one huge file keeping a cancelled grep (and the broker's shutdown)
// busy, as ctx is checked after every scanWindow bytes or 1024 lines, whichever comes first.
func (m *matcher) matchLines(ctx context.Context, buf []byte, fn func(ls, le int) bool) {
	pos, checked := 0, 0
	for step := 0; pos <= len(buf); step++ {
		if step%1024 == 0 || pos-checked >= scanWindow {
			if ctx.Err() != nil {
				return
			}
			checked = pos
		}
		at := pos // line by line
		switch {
		case m.lit != nil:
			i := bytes.Index(buf[pos:], m.lit)
			if i < 0 {
				return
			}
			at = pos + i
		case m.multi != nil:
			// A window ends at a line's end, and a match of multi never spans lines (else it would go line by line),
			// so no match is lost; a candidate is checked against its whole line below.
			end := min(pos+scanWindow, len(buf))
			if i := bytes.IndexByte(buf[end:], '\n'); i >= 0 {
				end += i + 1
			} else {
				end = len(buf)
			}
			loc := m.multi.FindIndex(buf[pos:end])
			if loc == nil {
				if end == len(buf) {
					return
				}
				pos = end
				continue
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
		// A CRLF line matches without its "\r" too (read_file shows it so: "x$" finds the line that ends in x).
		if line := buf[ls:le]; m.line.Match(line) || bytes.HasSuffix(line, []byte("\r")) && m.line.Match(line[:len(line)-1]) {
			if !fn(ls, le) {
				return
			}
		}
		pos = le + 1
	}
}
