package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// A project opened through a symlink (~/code -> /data/code) and a file named by its real name, which is what the
// model reads in what commands print (they run there: pwd, compilers, find): read_file, grep and glob answer without
// a question, and edit_file asks as any edit does. Before, a read by the real name asked as if outside the project
// (denied wherever no one answers), and grep and glob of the real folder failed ("leads outside the project root").
// What a read rule hides stays hidden by either name; the real folder's sibling is outside (the controls).
func TestFileToolsByTheRealNameOfASymlinkedRoot(t *testing.T) {
	dir := t.TempDir()
	real, link, home := filepath.Join(dir, "data", "code"), filepath.Join(dir, "code"), filepath.Join(dir, "home")
	brokertest.MustWrite(t, filepath.Join(real, "a.txt"), "hello\n")
	brokertest.MustWrite(t, filepath.Join(real, "secret", "k.txt"), "hello key\n")
	brokertest.MustWrite(t, filepath.Join(dir, "data", "other", "b.txt"), "hello other\n")
	brokertest.MustWrite(t, filepath.Join(home, "settings.json"), `{"permissions":{"deny":["Read(./secret/**)"]}}`)
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	e := brokertest.NewIn(t, dir, link, home)
	c := e.Client()
	sid := e.Open(c)
	call := func(op *execv1.Start) (*execv1.Result, int) {
		t.Helper()
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
		if err != nil {
			t.Fatal(err)
		}
		return res, len(qs)
	}
	grep := &execv1.Start{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "hello", Path: real, OutputMode: "files"}}}
	glob := &execv1.Start{Op: &execv1.Start_Glob{Glob: &execv1.Glob{Pattern: "*.txt", Path: real}}}
	for _, c := range []struct {
		name      string
		op        *execv1.Start
		questions int
		want      string
	}{
		{"read", brokertest.Read(filepath.Join(real, "a.txt")), 0, "hello"},
		{"grep", grep, 0, "a.txt"},
		{"glob", glob, 0, "a.txt"},
		{"edit", brokertest.EditOp(filepath.Join(real, "a.txt"), "hello", "HELLO", false), 1, "Edited"},
		{"other", brokertest.Read(filepath.Join(dir, "data", "other", "b.txt")), 1, "hello other"},
	} {
		res, qs := call(c.op)
		if res.GetStatus() != execv1.Status_STATUS_COMPLETED || qs != c.questions || !strings.Contains(res.GetContent(), c.want) {
			t.Errorf("%s: %d questions, want %d: %v", c.name, qs, c.questions, res)
		}
		if strings.Contains(res.GetContent(), "key") {
			t.Errorf("%s shows the hidden file: %v", c.name, res)
		}
	}
	if res, _ := call(brokertest.Read(filepath.Join(real, "secret", "k.txt"))); res.GetStatus() != execv1.Status_STATUS_DENIED {
		t.Errorf("a hidden file by the real name: %v", res)
	}
	if got := brokertest.FileText(filepath.Join(real, "a.txt")); got != "HELLO\n" {
		t.Errorf("after the edit: %q", got)
	}
}
