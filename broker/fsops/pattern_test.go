package fsops

import (
	"context"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pat, path string
		base      bool // grep's glob filter: no slash means base name at any depth
		want      bool
	}{
		{"**/*.go", "a.go", false, true},
		{"**/*.go", "x/y/a.go", false, true},
		{"**/*.go", "x/y/a.txt", false, false},
		{"*.go", "a.go", false, true},
		{"*.go", "x/a.go", false, false},
		{"*.go", "x/a.go", true, true},
		{"src/**/test/*.js", "src/test/a.js", false, true},
		{"src/**/test/*.js", "src/a/b/test/a.js", false, true},
		{"src/**/test/*.js", "lib/test/a.js", false, false},
		{"**/*.{ts,tsx}", "a/b.tsx", false, true},
		{"**/*.{ts,tsx}", "a/b.js", false, false},
		{"a/**", "a/b/c", false, true},
		{"[ab]?.txt", "bx.txt", false, true},
	}
	for _, c := range cases {
		g, err := compileGlob(c.pat, c.base)
		if err != nil {
			t.Fatalf("compile %q: %v", c.pat, err)
		}
		if got := g.matchFile(c.path); got != c.want {
			t.Errorf("glob %q on %q = %v, want %v", c.pat, c.path, got, c.want)
		}
	}
	if _, err := compileGlob("[", false); err == nil {
		t.Error("glob \"[\": no error, want ErrBadPattern")
	}
}

func TestGlobPrunesFolders(t *testing.T) {
	g, _ := compileGlob("src/*.go", false)
	if g.mayContain("vendor") {
		t.Error("src/*.go may not contain files below vendor/")
	}
	if !g.mayContain("src") {
		t.Error("src/*.go must descend into src/")
	}
	if g.mayContain("src/deep") {
		t.Error("src/*.go may not contain files below src/deep/")
	}
}

func TestExpandBraces(t *testing.T) {
	got, ok := expandBraces("a.{x,{y,z}}")
	want := []string{"a.x", "a.y", "a.z"}
	if !ok || !slices.Equal(got, want) {
		t.Errorf("expandBraces = %q %v, want %q", got, ok, want)
	}
	// 2^9 alternatives are more than a pattern may have.
	if got, ok := expandBraces(strings.Repeat("{a,b}", 9)); ok {
		t.Errorf("expandBraces of 2^9 alternatives = %d patterns", len(got))
	}
}

func TestGitignoreRules(t *testing.T) {
	root := &ignoreNode{rules: parseGitignore([]byte(
		"# comment\n*.log\n!keep.log\nbuild/\n/top.txt\ndocs/*.tmp\n\\#hash\ntrailing   \n**/gen/**\n"))}
	sub := &ignoreNode{parent: root, dir: "pkg", rules: parseGitignore([]byte("secret*\n!secret-ok.txt\n/only-here\n*.log\n!x.log\n"))}
	cases := []struct {
		n     *ignoreNode
		path  string
		isDir bool
		want  bool
	}{
		{root, "a.log", false, true},
		{root, "deep/a.log", false, true},
		{root, "keep.log", false, false},  // negation
		{root, "build", true, true},       // folder-only
		{root, "build", false, false},     // folder-only does not match a file
		{root, "x/build", true, true},     // no slash inside: any depth
		{root, "top.txt", false, true},    // anchored
		{root, "x/top.txt", false, false}, // anchored: not deeper
		{root, "docs/a.tmp", false, true},
		{root, "x/docs/a.tmp", false, false}, // a slash in the middle anchors too
		{root, "#hash", false, true},
		{root, "trailing", false, true},
		{root, "a/gen/b/c.go", false, true},
		{root, "comment", false, false},
		{sub, "pkg/secret.txt", false, true},
		{sub, "pkg/secret-ok.txt", false, false},
		{sub, "pkg/only-here", false, true},
		{sub, "pkg/x/only-here", false, false},
		{sub, "pkg/x.log", false, false}, // the deeper file's negation wins over the root's *.log
		{sub, "pkg/y.log", false, true},
		{sub, "secret.txt", false, false}, // pkg's rules do not apply outside pkg (rel is not below it)
	}
	for _, c := range cases {
		if got := c.n.ignored(c.path, c.isDir); got != c.want {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", c.path, c.isDir, got, c.want)
		}
	}
}

func TestRequiredLiteral(t *testing.T) {
	cases := map[string]string{
		`ErrUnexpectedEOF`:           "ErrUnexpectedEOF",
		`func \(\w+ \*\w+\) Close\(`: ") Close(",
		`[A-Z][a-z]+Error\b`:         "Error",
		`(?i)error`:                  "",
		`foo|bar`:                    "",
		`a*b?`:                       "",
		`(hello)+ world`:             " world",
		`x{2,}yz`:                    "yz",
	}
	for pat, want := range cases {
		re, err := syntax.Parse(pat, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if got := requiredLiteral(re.Simplify()); got != want {
			t.Errorf("requiredLiteral(%q) = %q, want %q", pat, got, want)
		}
	}
}

func TestMatchLines(t *testing.T) {
	buf := []byte("alpha beta\na\nb\nGamma\n\nlast line without newline")
	cases := map[string][]string{
		`beta`:        {"alpha beta"},
		`Gamma\s`:     nil, // a match across lines is not a line match
		`(?i)gamma`:   {"Gamma"},
		`^$`:          {""},
		`^a$|^b$`:     {"a", "b"},
		`newline$`:    {"last line without newline"},
		`[A-Z]\w+`:    {"Gamma"},
		`line\b.*out`: {"last line without newline"},
	}
	for pat, want := range cases {
		m, err := compileMatcher(pat, false)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		m.matchLines(context.Background(), buf, func(ls, le int) bool { got = append(got, string(buf[ls:le])); return true })
		if !slices.Equal(got, want) {
			t.Errorf("%q matched %q, want %q", pat, got, want)
		}
	}
}
