package pathglob

import (
	"strings"
	"testing"
)

func TestMatchAndCovers(t *testing.T) {
	cases := []struct {
		pat, path     string
		match, covers bool
	}{
		{"*.go", "a.go", true, true},
		{"*.go", "d/a.go", false, false},
		{"**/*.go", "a.go", true, true},
		{"**/*.go", "d/e/a.go", true, true},
		{"src/**", "src", true, true},
		{"src/**", "src/a/b", true, true},
		{"src", "src/a/b", false, true}, // a rule on a folder covers what it holds; a glob names the folder only
		{"src/*", "src/a/b", false, true},
		{"a/**/b", "a/b", true, true},
		{"a/**/b", "a/x/y/b", true, true},
		{"a/**/b", "a/x/y/c", false, false},
		{"a/**/**/b", "a/b", true, true},
		{"?.txt", "ab.txt", false, false},
		{"[ab].txt", "b.txt", true, true},
		{"", "", true, true},
		{"x", "", false, false},
	}
	for _, c := range cases {
		p, err := Compile(c.pat)
		if err != nil {
			t.Fatalf("%q: %v", c.pat, err)
		}
		names := Split(c.path)
		if got := p.Match(names); got != c.match {
			t.Errorf("%q Match %q = %v, want %v", c.pat, c.path, got, c.match)
		}
		if got := p.Covers(names); got != c.covers {
			t.Errorf("%q Covers %q = %v, want %v", c.pat, c.path, got, c.covers)
		}
	}
}

func TestMayHold(t *testing.T) {
	cases := []struct {
		pat, dir string
		want     bool
	}{
		{"src/*.go", "src", true},
		{"src/*.go", "doc", false},
		{"src/*.go", "src/x", false},
		{"**/*.go", "any/depth", true},
		{"a/*/c/**", "a/b", true},
		{"a/*/c/**", "a/b/d", false},
		{"x", "", true},
	}
	for _, c := range cases {
		p, _ := Compile(c.pat)
		if got := p.MayHold(Split(c.dir)); got != c.want {
			t.Errorf("%q MayHold %q = %v, want %v", c.pat, c.dir, got, c.want)
		}
	}
}

func TestCompileRefusesBadNames(t *testing.T) {
	if _, err := Compile("a/[b"); err != ErrBadPattern {
		t.Errorf("a/[b: %v", err)
	}
}

// Many "**" over a deep path stay linear (the old backtracking matchers took exponential time on such input).
func TestManyDoubleStarsAreLinear(t *testing.T) {
	p, _ := Compile(strings.Repeat("**/a*/", 200) + "b")
	deep := Split(strings.Repeat("ab/", 2000) + "c")
	if p.Match(deep) || p.Covers(deep) {
		t.Error("matched")
	}
}

func TestWithin(t *testing.T) {
	cases := []struct {
		base, p string
		rel     string
		in      bool
	}{
		{"/a", "/a", "", true},
		{"/a", "/a/b", "b", true},
		{"/a", "/a/b/c", "b/c", true},
		{"/a", "/ab", "", false}, // a sibling whose name starts like the folder's
		{"/a", "/ab/c", "", false},
		{"/a/b", "/a", "", false}, // the folder above
		{"/a", "/", "", false},
		{"/", "/", "", true},
		{"/", "/x", "x", true},
		{"/", "/x/y", "x/y", true},
		{"/", "x", "", false}, // a relative path is in no absolute folder
		{"a", "a/b", "b", true},
		{"a", "a", "", true},
		{"a", "ab", "", false},
		{"", "/a", "", false}, // no folder holds nothing
		{"", "", "", false},
	}
	for _, c := range cases {
		rel, in := Within(c.base, c.p)
		if rel != c.rel || in != c.in {
			t.Errorf("Within(%q, %q) = %q, %v; want %q, %v", c.base, c.p, rel, in, c.rel, c.in)
		}
	}
}
