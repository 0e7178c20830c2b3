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

// match reports whether the path segments name match the whole pattern.
func (p segPattern) match(name []string) bool {
	if len(p) == 0 {
		return len(name) == 0
	}
	if p[0] == "**" {
		rest := p[1:]
		if len(rest) == 0 {
			return true
		}
		for i := 0; i <= len(name); i++ {
			if rest.match(name[i:]) {
				return true
			}
		}
		return false
	}
	if len(name) == 0 {
		return false
	}
	if ok, _ := path.Match(p[0], name[0]); !ok {
		return false
	}
	return p[1:].match(name[1:])
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

// expandBraces turns "a/*.{go,s}" into "a/*.go" and "a/*.s" (nested braces included).
func expandBraces(p string) []string {
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
				out = append(out, expandBraces(p[:open]+a+p[i+1:])...)
			}
			return out
		}
	}
	return []string{p}
}

// globSet is a set of alternatives (after brace expansion). baseOnly alternatives (no "/" in the pattern, as in
// grep's glob filter) match the base name at any depth.
type globSet struct {
	pats     []segPattern
	baseOnly bool
}

func compileGlob(p string, baseOnlyWhenNoSlash bool) (*globSet, error) {
	g := &globSet{baseOnly: baseOnlyWhenNoSlash && !strings.Contains(p, "/")}
	for _, alt := range expandBraces(p) {
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
