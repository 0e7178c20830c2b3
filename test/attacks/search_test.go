package attacks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Found by red team (first pass over the boundary).
// HELD. A glob or grep pattern or folder that leads out of the root never lists outside files without a question.
func TestRedTeamGlobGrepPatternsStayInTheRoot(t *testing.T) {
	e := brokertest.New(t)
	outside := filepath.Join(filepath.Dir(e.Root), "outside")
	brokertest.MustWrite(t, filepath.Join(outside, "leak-outside.txt"), "needle\n")
	brokertest.MustWrite(t, filepath.Join(e.Root, "inside.txt"), "needle\n")
	c := e.Client()
	sid := e.Open(c)
	globOp := func(pattern, path string) *execv1.Start {
		return &execv1.Start{Op: &execv1.Start_Glob{Glob: &execv1.Glob{Pattern: pattern, Path: path}}}
	}
	grepOp := func(glob, path string) *execv1.Start {
		return &execv1.Start{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "needle", Glob: glob, Path: path, OutputMode: "files"}}}
	}
	for _, op := range []*execv1.Start{
		globOp("../outside/*", ""), globOp("../**", ""), globOp("**/../../outside/*", ""), globOp(outside+"/*", ""),
		globOp("*", "sub/../../outside"), globOp("*", "/proc/self/root"+outside),
		grepOp("../**", ""), grepOp(outside+"/*", ""), grepOp("", "../outside"), grepOp("", "//"+outside[1:]),
	} {
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op), execv1.Choice_CHOICE_DENY)
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		if strings.Contains(res.GetContent(), "leak-outside") {
			t.Errorf("%v listed a file outside the root (%d questions):\n%s", op, len(qs), res.GetContent())
		}
	}
	// Negative control: the same searches inside the root list the file.
	for _, op := range []*execv1.Start{globOp("*.txt", ""), grepOp("", "")} {
		res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op), execv1.Choice_CHOICE_DENY)
		if !strings.Contains(res.GetContent(), "inside.txt") {
			t.Fatalf("control %v: %v", op, res)
		}
	}
}

// Found by red team (second pass, as a compromised front end).
// FOUND AND FIXED (denial of service). Brace alternatives of a glob pattern were expanded without a bound: a
// 100-byte pattern of twenty {a,b} is a million patterns (1 GB allocated, then a million matches per file), and
// 26 of them exhaust the broker's memory. Also grep's glob filter. Control: a pattern with a few alternatives works.
func TestRedTeamGlobBraceExplosion(t *testing.T) {
	e := brokertest.New(t)
	brokertest.MustWrite(t, filepath.Join(e.Root, "ab.go"), "package x\n")
	brokertest.MustWrite(t, filepath.Join(e.Root, "sub", "b.txt"), "x\n")
	c := e.Client()
	sid := e.Open(c)
	bomb := strings.Repeat("{a,b}", 20)
	for _, op := range []*execv1.Start{
		brokertest.GlobOp(bomb),
		{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "x", Glob: bomb}}},
	} {
		res, err := within(t, c, sid, op, execv1.Choice_CHOICE_ONCE, 3*time.Second)
		if err == nil && res.GetStatus() == execv1.Status_STATUS_COMPLETED {
			t.Errorf("a pattern of 2^20 alternatives was taken: %.200s", res.GetContent())
		}
	}
	res, _ := within(t, c, sid, brokertest.GlobOp("{a,b}*.{go,txt}"), execv1.Choice_CHOICE_ONCE, 3*time.Second)
	if !strings.Contains(res.GetContent(), "ab.go") {
		t.Fatalf("control: %v", res)
	}
}

// Found by red team (second pass, as a compromised front end).
// FOUND AND FIXED (denial of service). "**" segments were matched by plain recursion: a pattern **/*/**/*/.../x
// against one path thirty folders deep takes seconds per file and grows exponentially with the pattern, in
// glob's pattern, grep's glob filter and in a hostile repository's .gitignore (every search of the project
// hangs). A cancel does not stop a match in progress. Control: the same tree is searched at once with a plain
// pattern.
func TestRedTeamStarStarBacktracking(t *testing.T) {
	e := brokertest.New(t)
	deep := filepath.Join(e.Root, strings.Repeat("d/", 30))
	brokertest.MustWrite(t, filepath.Join(deep, "f.txt"), "needle\n")
	bomb := strings.Repeat("**/*/", 12) + "nomatch"
	c := e.Client()
	sid := e.Open(c)
	for _, op := range []*execv1.Start{
		brokertest.GlobOp(bomb),
		{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "needle", Glob: bomb}}},
	} {
		within(t, c, sid, op, execv1.Choice_CHOICE_ONCE, 5*time.Second)
	}
	// The same from a .gitignore the repository ships.
	brokertest.MustWrite(t, filepath.Join(e.Root, ".gitignore"), "/"+bomb+"\n")
	res, _ := within(t, c, sid, brokertest.GrepOp("needle", "files"), execv1.Choice_CHOICE_ONCE, 5*time.Second)
	if !strings.Contains(res.GetContent(), "f.txt") {
		t.Errorf("grep with the .gitignore: %v", res)
	}
	os.Remove(filepath.Join(e.Root, ".gitignore"))
	res, _ = within(t, c, sid, brokertest.GlobOp("**/f.txt"), execv1.Choice_CHOICE_ONCE, 5*time.Second)
	if !strings.Contains(res.GetContent(), "f.txt") {
		t.Fatalf("control: %v", res)
	}
}

// Found by red team (second pass, as a compromised front end).
// FOUND AND FIXED (denial of service). A grep pattern with no literal that can match a line break ([^z]+, \s,
// (?s).) was searched over the whole file from each match on: every matching line rescans the rest of the file,
// quadratic in the file's size (a 300 KB file takes minutes), and a cancel does not stop it. Also for an honest
// model. Control: a pattern with a literal on the same file is instant.
func TestRedTeamGrepQuadraticPattern(t *testing.T) {
	// 600 KB: quadratic, a pattern takes many minutes; linear, well under a second (seconds under the race detector on
	// a loaded machine, hence the bound of a minute: a 5 s bound failed in a cold CI run, the control included).
	const lines, bound = 200_000, time.Minute
	e := brokertest.New(t)
	brokertest.MustWrite(t, filepath.Join(e.Root, "many.txt"), strings.Repeat("ab\n", lines))
	c := e.Client()
	sid := e.Open(c)
	want := fmt.Sprintf("many.txt:%d", lines)
	for _, p := range []string{`[^z]+`, `\s*[ab]`, `(?s)[ab].`} {
		res, err := within(t, c, sid, brokertest.GrepOp(p, "count"), execv1.Choice_CHOICE_ONCE, bound)
		if err == nil && !strings.Contains(res.GetContent(), want) {
			t.Errorf("grep %q: %v", p, res)
		}
	}
	res, _ := within(t, c, sid, brokertest.GrepOp("ab", "count"), execv1.Choice_CHOICE_ONCE, bound)
	if !strings.Contains(res.GetContent(), want) {
		t.Fatalf("control: %v", res)
	}
}
