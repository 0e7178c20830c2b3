package attacks

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Every spelling of a path outside the root is either asked about (and denied here) or refused; none is written
// silently, and nothing lands outside.
func TestWriteOutsideRootEverySpelling(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	outside := filepath.Join(filepath.Dir(e.Root), "outside")
	os.MkdirAll(outside, 0o755)
	os.Symlink(outside, filepath.Join(e.Root, "link"))
	spellings := []string{
		"../outside/a.txt",
		outside + "/b.txt",
		"./sub/../../outside/c.txt",
		"link/d.txt",
		"/proc/self/root" + outside + "/e.txt",
		e.Root + "/../outside/f.txt",
		"link/../link/g.txt",
	}
	for _, p := range spellings {
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write(p, "x")), execv1.Choice_CHOICE_DENY)
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
	res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("inside.txt", "x")),
		execv1.Choice_CHOICE_ONCE)
	if res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("control: %v", res)
	}
}

// Reads through a symlink that leaves the root are refused even when a read outside would have been allowed.
func TestReadThroughSymlinkOut(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	os.WriteFile(filepath.Join(e.Home, "credentials"), []byte(`{"anthropic":"sk-secret"}`), 0o600)
	os.Symlink(e.Home, filepath.Join(e.Root, "h"))
	for _, p := range []string{"h/credentials", e.Home + "/credentials", "../home/credentials"} {
		res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Read(p)), execv1.Choice_CHOICE_ONCE)
		if strings.Contains(res.GetContent(), "sk-secret") {
			t.Errorf("%s: read Garuda's credentials: %s", p, res.Content)
		}
	}
	// Negative control: a plain open through the link reads them.
	if data, err := os.ReadFile(filepath.Join(e.Root, "h", "credentials")); err != nil || !strings.Contains(string(data), "sk-secret") {
		t.Fatalf("control: %v", err)
	}
}

// A folder outside the root that is a symlink to Garuda's home cannot carry a read there, even when the user
// would answer yes: outside the root no symlink is followed (nor resolved: what is behind it was not decided).
func TestReadThroughOutsideFolderLink(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	os.WriteFile(filepath.Join(e.Home, "credentials"), []byte(`{"anthropic":"sk-secret"}`), 0o600)
	link := filepath.Join(t.TempDir(), "innocent")
	os.Symlink(e.Home, link)
	res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Read(link+"/credentials")),
		execv1.Choice_CHOICE_ONCE)
	if strings.Contains(res.GetContent(), "sk-secret") || res.GetStatus() != execv1.Status_STATUS_FAILED ||
		!strings.Contains(res.GetContent(), link+" is a symlink to "+e.Home) {
		t.Fatalf("read Garuda's credentials through a linked folder: %v", res)
	}
	// Negative control: a file in an ordinary folder outside the root is read once the user allows it.
	plain := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(plain, []byte("hello"), 0o644)
	res, qs, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Read(plain)), execv1.Choice_CHOICE_ONCE)
	if !strings.Contains(res.GetContent(), "hello") || len(qs) != 1 {
		t.Fatalf("control: %v (%d questions)", res, len(qs))
	}
}

// Found by red team (first pass over the boundary).
// HELD. After "allow for this session" (every write in the root), no spelling of a protected path is written
// without a question: "//", "./", "..", a trailing slash, case and ignorable-character look-alikes. Control: an
// ordinary file is written without a question.
func TestRedTeamProtectedSpellingsAfterSessionAllow(t *testing.T) {
	e := brokertest.New(t)
	brokertest.MustWrite(t, filepath.Join(e.Root, ".git", "config"), "[core]\n")
	os.MkdirAll(filepath.Join(e.Root, ".git", "hooks"), 0o755)
	os.MkdirAll(filepath.Join(e.Root, "sub"), 0o755)
	c := e.Client()
	sid := e.Open(c)
	if res, qs, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("a.txt", "x")),
		execv1.Choice_CHOICE_SESSION); res.GetStatus() != execv1.Status_STATUS_COMPLETED || len(qs) != 1 {
		t.Fatalf("allow for the session: %v (%d questions)", res, len(qs))
	}
	if res, qs, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("b.txt", "x")),
		execv1.Choice_CHOICE_DENY); res.GetStatus() != execv1.Status_STATUS_COMPLETED || len(qs) != 0 {
		t.Fatalf("control: the session rule does not apply: %v (%d questions)", res, len(qs))
	}
	for _, p := range []string{
		".git//hooks/pre-commit", "./.git/hooks/pre-commit", "sub/../.git/hooks/pre-commit", ".git/./config",
		".git/hooks/../config", e.Root + "//.git/hooks/post-checkout", ".GIT/hooks/pre-push", ".g\u200cit/hooks/x",
		".VSCode/settings.json", "sub/.envrc", "sub/.git", ".git/hooks/", ".git/config/",
	} {
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write(p, "#!/bin/sh\necho pwned\n")),
			execv1.Choice_CHOICE_DENY)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		if res.GetStatus() == execv1.Status_STATUS_COMPLETED {
			t.Errorf("%q written without a question (%d questions): %s", p, len(qs), res.GetContent())
		}
	}
	if got := brokertest.FileText(filepath.Join(e.Root, ".git", "config")); got != "[core]\n" {
		t.Errorf(".git/config changed: %q", got)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.Root, ".git", "hooks")); len(ents) != 0 {
		t.Errorf("hooks written: %v", ents)
	}
}

// Found by red team (first pass over the boundary).
// HELD. Odd write targets fail cleanly: a folder (with or without a trailing slash), the root, an empty path, an
// edit whose old_string is empty. ("w.txt/" is cleaned to w.txt and asked about as such: what is shown is done.)
// Control: an edit of the whole file's text works.
func TestRedTeamOddWriteTargets(t *testing.T) {
	e := brokertest.New(t)
	os.MkdirAll(filepath.Join(e.Root, "dir", "inner"), 0o755)
	brokertest.MustWrite(t, filepath.Join(e.Root, "w.txt"), "whole\n")
	c := e.Client()
	sid := e.Open(c)
	for _, op := range []*execv1.Start{
		brokertest.Write("dir", "x"), brokertest.Write("dir/", "x"), brokertest.Write(".", "x"), brokertest.Write("", "x"),
		{Op: &execv1.Start_EditFile{EditFile: &execv1.EditFile{Path: "w.txt", OldString: "", NewString: "x"}}},
		{Op: &execv1.Start_EditFile{EditFile: &execv1.EditFile{Path: "dir", OldString: "", NewString: "x"}}},
	} {
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
		if err == nil && res.GetStatus() == execv1.Status_STATUS_COMPLETED {
			t.Errorf("%v completed: %s", op, res.GetContent())
		}
	}
	if fi, err := os.Stat(filepath.Join(e.Root, "dir", "inner")); err != nil || !fi.IsDir() {
		t.Errorf("the folder was replaced: %v", err)
	}
	if got := brokertest.FileText(filepath.Join(e.Root, "w.txt")); got != "whole\n" {
		t.Errorf("w.txt changed: %q", got)
	}
	edit := &execv1.Start{Op: &execv1.Start_EditFile{EditFile: &execv1.EditFile{Path: "w.txt", OldString: "whole\n", NewString: "new\n"}}}
	if res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, edit),
		execv1.Choice_CHOICE_ONCE); res.GetStatus() != execv1.Status_STATUS_COMPLETED ||
		brokertest.FileText(filepath.Join(e.Root, "w.txt")) != "new\n" {
		t.Fatalf("control: %v", res)
	}
}

// Found by red team (second pass, as a compromised front end).
// FOUND AND FIXED (crash). edit_file prepares the new bytes before it asks, with no bound on their size:
// replace_all of a one-byte old_string in a 16 MiB file by a 3 MiB new_string asks bytes.ReplaceAll for 50 TB, and
// the Go runtime ends the broker ("out of memory", not a recoverable panic). The model can do it, no question
// needed. Control: a replace_all that stays under the limit is prepared and asked about.
func TestRedTeamEditReplaceAllExplodes(t *testing.T) {
	e := brokertest.New(t)
	brokertest.MustWrite(t, filepath.Join(e.Root, "big.txt"), strings.Repeat("a", 16<<20))
	brokertest.MustWrite(t, filepath.Join(e.Root, "small.txt"), "a a a\n")
	c := e.Client()
	sid := e.Open(c)
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid,
		brokertest.EditOp("big.txt", "a", strings.Repeat("b", 3<<20), true)), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_FAILED || len(qs) != 0 {
		t.Errorf("an edit of 50 TB: %v %v (%d questions)", res, err, len(qs))
	}
	// Ambiguous without replace_all: refused before any question.
	if res, qs, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.EditOp("small.txt", "a", "b", false)),
		execv1.Choice_CHOICE_ONCE); res.GetStatus() != execv1.Status_STATUS_FAILED || len(qs) != 0 {
		t.Errorf("an ambiguous edit: %v (%d questions)", res, len(qs))
	}
	res, qs, err = brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.EditOp("small.txt", "a", "bb", true)),
		execv1.Choice_CHOICE_ONCE)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED || len(qs) != 1 ||
		brokertest.FileText(filepath.Join(e.Root, "small.txt")) != "bb bb bb\n" {
		t.Fatalf("control: %v %v (%d questions)", res, err, len(qs))
	}
}

// Found by red team (second pass, as a compromised front end).
// HELD. Path spellings of the file tools: NUL bytes, an over-long path or name, "~", /proc/self/root, /proc/self/cwd
// and /dev/fd links to $GARUDA_HOME (outside the root, allowed by the front end), a trailing slash on a file.
// Control: a plain open of the same /proc spelling reads the key.
func TestRedTeamPathSpellings(t *testing.T) {
	e := brokertest.New(t)
	brokertest.MustWrite(t, filepath.Join(e.Home, "credentials"), `{"anthropic":"sk-ant-spell-0005"}`)
	brokertest.MustWrite(t, filepath.Join(e.Root, "ok.txt"), "ok\n")
	c := e.Client()
	sid := e.Open(c)
	cred := filepath.Join(e.Home, "credentials")
	fd, err := syscall.Open(e.Home, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	for _, p := range []string{
		"ok.txt\x00/../../" + cred, cred + "\x00", strings.Repeat("a/", 3000) + "x", strings.Repeat("n", 300),
		"~/../" + cred, "/proc/self/root" + cred, "/proc/self/cwd/../../../../../../../../.." + cred,
		fmt.Sprintf("/proc/%d/fd/%d/credentials", os.Getpid(), fd), fmt.Sprintf("/dev/fd/%d/credentials", fd),
		"/proc/thread-self/root" + cred, cred + "/",
	} {
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Read(p)), execv1.Choice_CHOICE_ONCE)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		if leaked(res, "sk-ant-spell") {
			t.Errorf("read_file %q read the key", p)
		}
		// Writes are allowed by the front end; the only place one may land is inside the root ("~/.." is root/).
		res, _, _ = brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write(p, "pwned")), execv1.Choice_CHOICE_ONCE)
		if res.GetStatus() == execv1.Status_STATUS_COMPLETED && !strings.Contains(res.GetContent(), e.Root+"/") {
			t.Errorf("write_file %q completed outside the root: %s", p, res.GetContent())
		}
	}
	if !strings.Contains(brokertest.FileText(cred), "sk-ant-spell") {
		t.Error("the key was changed")
	}
	ents, _ := os.ReadDir(e.Home)
	for _, ent := range ents {
		if n := ent.Name(); n != "credentials" && n != "audit" && n != "undo" {
			t.Errorf("a write reached $GARUDA_HOME: %s", n)
		}
	}
	if !strings.Contains(brokertest.FileText(fmt.Sprintf("/proc/self/fd/%d/credentials", fd)), "sk-ant-spell") {
		t.Fatal("control: a plain open of the /proc spelling does not read the key")
	}
}

// Found by red team (second pass, as a compromised front end).
// HELD. Special files in the root: a FIFO with no writer, a unix socket, links to /dev/zero and /dev/stdin, a
// 5 GB sparse file; read_file, edit_file and grep answer at once and do not fill the broker's memory. Control: a
// regular file next to them is read and grepped.
func TestRedTeamSpecialFiles(t *testing.T) {
	e := brokertest.New(t)
	brokertest.MustWrite(t, filepath.Join(e.Root, "plain.txt"), "needle\n")
	if err := syscall.Mkfifo(filepath.Join(e.Root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(e.Root, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Symlink("/dev/zero", filepath.Join(e.Root, "zero"))
	os.Symlink("/dev/stdin", filepath.Join(e.Root, "stdin"))
	f, err := os.Create(filepath.Join(e.Root, "sparse.log"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("needle at the start\n")
	f.Truncate(5 << 30)
	f.Close()
	c := e.Client()
	sid := e.Open(c)
	for _, p := range []string{"fifo", "sock", "zero", "stdin", "sparse.log"} {
		for _, op := range []*execv1.Start{brokertest.Read(p), brokertest.EditOp(p, "needle", "x", false), brokertest.Write(p, "x"),
			{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "needle", Path: p, OutputMode: "content"}}}} {
			res, _ := within(t, c, sid, op, execv1.Choice_CHOICE_ONCE, 5*time.Second)
			if res.GetStatus() == execv1.Status_STATUS_COMPLETED && op.GetGrep() == nil {
				t.Errorf("%v completed: %.100s", op, res.GetContent())
			}
		}
	}
	if fi, err := os.Stat(filepath.Join(e.Root, "sparse.log")); err != nil || fi.Size() != 5<<30 {
		t.Errorf("sparse.log changed: %v", err)
	}
	res, _ := within(t, c, sid, brokertest.GrepOp("needle", "files"), execv1.Choice_CHOICE_ONCE, 10*time.Second)
	if !strings.Contains(res.GetContent(), "plain.txt") {
		t.Fatalf("control: %v", res)
	}
}
