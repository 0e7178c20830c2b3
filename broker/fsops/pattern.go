package fsops

import (
	"fmt"
	"strings"

	"github.com/garuda-dev/garuda/internal/pathglob"
)

// compileSeg compiles one alternative of a glob: "**" matches zero or more path names.
func compileSeg(p string) (pathglob.Pattern, error) {
	pat, err := pathglob.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", p, ErrBadPattern)
	}
	return pat, nil
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
	pats     []pathglob.Pattern
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
		if p.Match(segs) {
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
		if p.MayHold(segs) {
			return true
		}
	}
	return false
}
