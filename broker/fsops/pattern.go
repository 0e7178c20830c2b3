package fsops

import (
	"fmt"
	"path"
	"strings"
)

// segPattern is a slash-separated glob whose segments are matched with path.Match; a "**" segment matches zero or
// more path segments.
type segPattern []string

func compileSeg(p string) (segPattern, error) {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	out := segs[:0]
	for _, s := range segs {
		if s == "" {
			continue
		}
		if s != "**" {
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("pattern %q: %w", p, ErrBadPattern)
			}
		}
		if s == "**" && len(out) > 0 && out[len(out)-1] == "**" {
			continue
		}
		out = append(out, s)
	}
	return segPattern(out), nil
}

// match reports whether the path segments name match the whole pattern. It fills one row per pattern segment
// (row[j]: the rest of the pattern matches name[j:]), so it costs len(p)*len(name) steps: defends against
// **/*/**/*/... backtracking exponentially over a deep path.
func (p segPattern) match(name []string) bool {
	next := make([]bool, len(name)+1) // the empty rest of the pattern matches only the empty rest of the name
	next[len(name)] = true
	cur := make([]bool, len(name)+1)
	for i := len(p) - 1; i >= 0; i-- {
		for j := len(name); j >= 0; j-- {
			switch {
			case p[i] == "**":
				cur[j] = next[j] || j < len(name) && cur[j+1]
			case j == len(name):
				cur[j] = false
			default:
				ok := next[j+1]
				if ok {
					ok, _ = path.Match(p[i], name[j])
				}
				cur[j] = ok
			}
		}
		next, cur = cur, next
	}
	return next[0]
}

// prefix reports whether some path below the folder dir (given as segments) could match the pattern; the walk skips
// folders for which it is false.
func (p segPattern) prefix(dir []string) bool {
	if len(dir) == 0 {
		return len(p) > 0
	}
	if len(p) == 0 {
		return false
	}
	if p[0] == "**" {
		return true
	}
	if ok, _ := path.Match(p[0], dir[0]); !ok {
		return false
	}
	return p[1:].prefix(dir[1:])
}

// Bounds of a glob pattern: defend against a short pattern such as {a,b}{a,b}... expanding to 2^n patterns, and a
// long one costing its length at every file. No path is longer than maxPatternLen.
const (
	maxAlternatives = 256
	maxPatternLen   = 4096
)

// expandBraces turns "a/*.{go,s}" into "a/*.go" and "a/*.s" (nested braces included); false when that makes more
// than maxAlternatives patterns.
func expandBraces(p string) ([]string, bool) {
	open := -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth != 0 {
				continue
			}
			var alts []string
			start, d := open+1, 0
			for j := open + 1; j < i; j++ {
				switch p[j] {
				case '\\':
					j++
				case '{':
					d++
				case '}':
					d--
				case ',':
					if d == 0 {
						alts = append(alts, p[start:j])
						start = j + 1
					}
				}
			}
			alts = append(alts, p[start:i])
			var out []string
			for _, a := range alts {
				sub, ok := expandBraces(p[:open] + a + p[i+1:])
				if !ok || len(out)+len(sub) > maxAlternatives {
					return nil, false
				}
				out = append(out, sub...)
			}
			return out, true
		}
	}
	return []string{p}, true
}

// globSet is a set of alternatives (after brace expansion). baseOnly alternatives (no "/" in the pattern, as in
// grep's glob filter) match the base name at any depth.
type globSet struct {
	pats     []segPattern
	baseOnly bool
}

func compileGlob(p string, baseOnlyWhenNoSlash bool) (*globSet, error) {
	if len(p) > maxPatternLen {
		return nil, fmt.Errorf("pattern of %d bytes, more than %d: %w", len(p), maxPatternLen, ErrBadPattern)
	}
	alts, ok := expandBraces(p)
	if !ok {
		return nil, fmt.Errorf("pattern %q: more than %d alternatives in braces: %w", p, maxAlternatives, ErrBadPattern)
	}
	g := &globSet{baseOnly: baseOnlyWhenNoSlash && !strings.Contains(p, "/")}
	for _, alt := range alts {
		sp, err := compileSeg(alt)
		if err != nil {
			return nil, err
		}
		g.pats = append(g.pats, sp)
	}
	return g, nil
}

// matchFile reports whether the file at rel (slash-separated, relative to the search folder) matches.
func (g *globSet) matchFile(rel string) bool {
	segs := strings.Split(rel, "/")
	if g.baseOnly {
		segs = segs[len(segs)-1:]
	}
	for _, p := range g.pats {
		if p.match(segs) {
			return true
		}
	}
	return false
}

// mayContain reports whether a file below the folder rel could match.
func (g *globSet) mayContain(rel string) bool {
	if g.baseOnly || rel == "" {
		return true
	}
	segs := strings.Split(rel, "/")
	for _, p := range g.pats {
		if p.prefix(segs) {
			return true
		}
	}
	return false
}
