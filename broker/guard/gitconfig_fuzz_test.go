package guard

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/internal/testenv"
)

// FuzzNeutralizeConfig cuts the program-running keys out of a fuzzed git config and checks the result as git
// itself reads it: git finds none of those keys in it, the parser reads the input as git does wherever both read
// it, and the cut is stable (cutting again removes nothing).
func FuzzNeutralizeConfig(f *testing.F) {
	testenv.NeedCommand(f, "git", "git") // the oracle
	for _, c := range trickyConfigs {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, removed := neutralizeConfig(data)
		if len(removed) == 0 && !bytes.Equal(out, data) {
			t.Fatalf("nothing removed, but the file changed: %q -> %q", data, out)
		}
		if again, more := neutralizeConfig(out); len(more) > 0 || !bytes.Equal(again, out) {
			t.Fatalf("cutting %q again removes %q", out, more)
		}
		entries, err := parseConfig(out)
		if err != nil {
			t.Fatalf("the cut file %q does not parse: %v", out, err)
		}
		for _, e := range entries {
			if runs(e) {
				t.Fatalf("the cut file %q still has %s", out, e.name())
			}
		}
		// git's own reading of the cut file: no key that runs a program.
		if lines, ok := gitList(t, string(out)); ok {
			for _, l := range lines {
				name, value, _ := strings.Cut(l, "=")
				i := strings.LastIndexByte(name, '.')
				if e := (entry{base: name[:max(i, 0)], key: name[i+1:], value: value}); i > 0 && runs(e) {
					t.Fatalf("git reads %s in the cut file %q (from %q)", l, out, data)
				}
			}
		}
		// Where git and the parser both read the input, they read the same keys and values. (A NUL byte the parser
		// refuses on purpose: the file is then replaced whole.)
		if bytes.IndexByte(data, 0) >= 0 {
			return
		}
		want, gitOK := gitList(t, string(data))
		got, ok := mine(string(data))
		if gitOK && !ok {
			t.Fatalf("%q: git reads %q, the parser refuses it", data, want)
		}
		if gitOK && !slices.Equal(got, want) {
			t.Fatalf("%q:\n git reads %q\n the parser %q", data, want, got)
		}
	})
}
