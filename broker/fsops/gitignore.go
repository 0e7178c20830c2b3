package fsops

import (
	"bytes"
	"strings"

	"github.com/garuda-dev/garuda/internal/pathglob"
)

// ignoreRule is one line of a .gitignore file.
type ignoreRule struct {
	pat     pathglob.Pattern
	negate  bool
	dirOnly bool
}

// ignoreNode holds the rules of one folder's .gitignore; rules of deeper folders win over those of their parents.
type ignoreNode struct {
	parent *ignoreNode
	dir    string // folder of the .gitignore, relative to the walk's root ("" for the root)
	rules  []ignoreRule
}

// parseGitignore reads the basic gitignore syntax: comments, negation (!), folder-only (trailing /), anchored
// patterns (a / at the start or in the middle), ** and escapes of #, ! and trailing spaces.
func parseGitignore(data []byte) []ignoreRule {
	var rules []ignoreRule
	for _, line := range bytes.Split(data, []byte("\n")) {
		s := strings.TrimSuffix(string(line), "\r")
		// Trailing spaces are ignored unless escaped with a backslash.
		for strings.HasSuffix(s, " ") && !strings.HasSuffix(s, "\\ ") {
			s = s[:len(s)-1]
		}
		if s == "" || s[0] == '#' || len(s) > maxPatternLen {
			continue
		}
		var r ignoreRule
		if s[0] == '!' {
			r.negate = true
			s = s[1:]
		} else if strings.HasPrefix(s, `\!`) || strings.HasPrefix(s, `\#`) {
			s = s[1:]
		}
		if strings.HasSuffix(s, "/") {
			r.dirOnly = true
			s = strings.TrimRight(s, "/")
		}
		if s == "" {
			continue
		}
		anchored := strings.Contains(s, "/")
		s = strings.TrimPrefix(s, "/")
		s = strings.ReplaceAll(s, "[!", "[^")
		if !anchored {
			s = "**/" + s
		}
		pat, err := compileSeg(s)
		if err != nil {
			continue // git ignores lines it cannot parse, so do we
		}
		r.pat = pat
		rules = append(rules, r)
	}
	return rules
}

// ignored reports whether rel (relative to the walk's root) is ignored by this node or its ancestors.
func (n *ignoreNode) ignored(rel string, isDir bool) bool {
	for ; n != nil; n = n.parent {
		sub := rel
		if n.dir != "" {
			var below bool
			if sub, below = pathglob.Within(n.dir, rel); !below || sub == "" {
				continue
			}
		}
		segs := strings.Split(sub, "/")
		for i := len(n.rules) - 1; i >= 0; i-- {
			r := n.rules[i]
			if r.dirOnly && !isDir {
				continue
			}
			if r.pat.Match(segs) {
				return !r.negate
			}
		}
	}
	return false
}
