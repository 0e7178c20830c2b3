package attacks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Every spelling of a path outside the root is either asked about (and denied here) or refused; none is written
// silently, and nothing lands outside.
func TestWriteOutsideRootEverySpelling(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	outside := filepath.Join(filepath.Dir(e.root), "outside")
	os.MkdirAll(outside, 0o755)
	os.Symlink(outside, filepath.Join(e.root, "link"))
	spellings := []string{
		"../outside/a.txt",
		outside + "/b.txt",
		"./sub/../../outside/c.txt",
		"link/d.txt",
		"/proc/self/root" + outside + "/e.txt",
		e.root + "/../outside/f.txt",
		"link/../link/g.txt",
	}
	for _, p := range spellings {
		res, qs, err := run(t, start(t, c, ctx(t), sid, write(p, "x")), execv1.Choice_CHOICE_DENY)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if res.GetStatus() == execv1.Status_STATUS_COMPLETED {
			t.Errorf("%s: written (%d questions): %s", p, len(qs), res.Content)
		}
		if len(qs) == 1 && !strings.Contains(qs[0].Warning+qs[0].Preview, "outside") {
			t.Errorf("%s: the question does not warn that the path is outside the root: %+v", p, qs[0])
		}
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 0 {
		t.Fatalf("files landed outside the root: %v", ents)
	}
	// Negative control: the same write inside the root, allowed once, lands.
	res, _, _ := run(t, start(t, c, ctx(t), sid, write("inside.txt", "x")), execv1.Choice_CHOICE_ONCE)
	if res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("control: %v", res)
	}
}

// Reads through a symlink that leaves the root are refused even when a read outside would have been allowed.
func TestReadThroughSymlinkOut(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	os.WriteFile(filepath.Join(e.home, "credentials"), []byte(`{"anthropic":"sk-secret"}`), 0o600)
	os.Symlink(e.home, filepath.Join(e.root, "h"))
	for _, p := range []string{"h/credentials", e.home + "/credentials", "../home/credentials"} {
		res, _, _ := run(t, start(t, c, ctx(t), sid, read(p)), execv1.Choice_CHOICE_ONCE)
		if strings.Contains(res.GetContent(), "sk-secret") {
			t.Errorf("%s: read Garuda's credentials: %s", p, res.Content)
		}
	}
	// Negative control: a plain open through the link reads them.
	if data, err := os.ReadFile(filepath.Join(e.root, "h", "credentials")); err != nil || !strings.Contains(string(data), "sk-secret") {
		t.Fatalf("control: %v", err)
	}
}

// A folder outside the root that is a symlink to Garuda's home cannot carry a read there, even when the user
// would answer yes: the broker decides the path as the kernel resolves it.
func TestReadThroughOutsideFolderLink(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	os.WriteFile(filepath.Join(e.home, "credentials"), []byte(`{"anthropic":"sk-secret"}`), 0o600)
	link := filepath.Join(t.TempDir(), "innocent")
	os.Symlink(e.home, link)
	res, _, _ := run(t, start(t, c, ctx(t), sid, read(link+"/credentials")), execv1.Choice_CHOICE_ONCE)
	if strings.Contains(res.GetContent(), "sk-secret") || res.GetStatus() != execv1.Status_STATUS_DENIED {
		t.Fatalf("read Garuda's credentials through a linked folder: %v", res)
	}
	// Negative control: a file in an ordinary folder outside the root is read once the user allows it.
	plain := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(plain, []byte("hello"), 0o644)
	res, qs, _ := run(t, start(t, c, ctx(t), sid, read(plain)), execv1.Choice_CHOICE_ONCE)
	if !strings.Contains(res.GetContent(), "hello") || len(qs) != 1 {
		t.Fatalf("control: %v (%d questions)", res, len(qs))
	}
}
