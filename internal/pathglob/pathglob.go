// Package pathglob matches slash-separated paths against glob patterns whose names are matched with path.Match and
// whose "**" stands for any number of names (none included): the one matcher of the permission rules and of the
// glob, grep and gitignore patterns of the file operations, and the one test of a path lying within a folder.
package pathglob

import (
	"errors"
	"path"
	"strings"
)

// ErrBadPattern is a name of a pattern that path.Match refuses.
var ErrBadPattern = errors.New("bad pattern")

// Pattern is a compiled pattern: its names, "**" runs collapsed into one.
type Pattern []string

// Compile splits p at "/" (empty names dropped) and checks every name's syntax.
func Compile(p string) (Pattern, error) {
	var out Pattern
	for _, s := range strings.Split(p, "/") {
		switch {
		case s == "":
		case s == "**":
			if len(out) == 0 || out[len(out)-1] != "**" {
				out = append(out, s)
			}
		default:
			if _, err := path.Match(s, ""); err != nil {
				return nil, ErrBadPattern
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// Split is a slash-separated relative path as the names Match takes ("" is no name at all).
func Split(rel string) []string {
	if rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}

// Match reports whether the names of a path match the whole pattern.
func (p Pattern) Match(names []string) bool {
	row := p.rows(names)
	return row != nil && row[len(names)]
}

// Covers reports whether the pattern matches the path or a folder above it (a rule on a folder covers what it
// holds).
func (p Pattern) Covers(names []string) bool {
	for _, ok := range p.rows(names) {
		if ok {
			return true
		}
	}
	return false
}

// rows runs the pattern over the names, one row per pattern name, and returns the last row: row[j] says whether
// the pattern matches names[:j]; nil when no prefix of the names matches a prefix of the pattern. It costs
// len(p)*len(names) steps: defends against patterns such as **/*/**/*/… backtracking exponentially over a deep
// path.
func (p Pattern) rows(names []string) []bool {
	cur := make([]bool, len(names)+1)
	cur[0] = true
	next := make([]bool, len(names)+1)
	for _, pn := range p {
		alive := false
		for j := range next {
			switch {
			case pn == "**":
				next[j] = cur[j] || (j > 0 && next[j-1])
			case j == 0:
				next[j] = false
			default:
				next[j] = cur[j-1]
				if next[j] {
					next[j], _ = path.Match(pn, names[j-1])
				}
			}
			alive = alive || next[j]
		}
		if !alive {
			return nil
		}
		cur, next = next, cur
	}
	return cur
}

// MayHold reports whether some path below the folder dir (its names) could match the pattern: a walk skips the
// folders for which it is false.
func (p Pattern) MayHold(dir []string) bool {
	for i, d := range dir {
		if i == len(p) {
			return false
		}
		if p[i] == "**" {
			return true
		}
		if ok, _ := path.Match(p[i], d); !ok {
			return false
		}
	}
	return len(p) > len(dir)
}

// Within returns p relative to base ("" when p is base itself) and true when p is base or lies below it; otherwise
// "" and false. Both are slash-separated and clean (filepath.Clean), both absolute or both relative; base "/" holds
// every absolute path, and an empty base holds nothing. A name that merely starts like base ("/ab" for "/a") is not
// within it.
func Within(base, p string) (string, bool) {
	switch {
	case base == "":
		return "", false
	case p == base:
		return "", true
	case base == "/":
		if rest, ok := strings.CutPrefix(p, "/"); ok {
			return rest, true
		}
		return "", false
	}
	if rest, ok := strings.CutPrefix(p, base+"/"); ok {
		return rest, true
	}
	return "", false
}
