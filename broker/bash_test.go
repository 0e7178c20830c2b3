package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// A read-deny rule reaches commands: the sandbox hides what read_file may not read, at any depth for "**" rules.
func TestReadDenyRuleHidesFromCommands(t *testing.T) {
	e := brokertest.New(t)
	os.WriteFile(filepath.Join(e.Home, "settings.json"), []byte(`{"permissions":{"deny":["Read(**/.env)","read_file(./private/**)"]}}`), 0o600)
	os.MkdirAll(filepath.Join(e.Root, "app", "deep"), 0o755)
	os.MkdirAll(filepath.Join(e.Root, "private"), 0o755)
	os.WriteFile(filepath.Join(e.Root, "app", "deep", ".env"), []byte("TOKEN=deep-secret"), 0o644)
	os.WriteFile(filepath.Join(e.Root, ".env"), []byte("TOKEN=top-secret"), 0o644)
	os.WriteFile(filepath.Join(e.Root, "private", "key.pem"), []byte("private-secret"), 0o644)
	os.WriteFile(filepath.Join(e.Root, "app", "main.go"), []byte("package main // visible"), 0o644)
	c := e.Client()
	sid := e.Open(c)
	res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid,
		brokertest.Bash("cat .env app/deep/.env private/key.pem app/main.go 2>&1; true")),
		execv1.Choice_CHOICE_ONCE)

	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"deep-secret", "top-secret", "private-secret"} {
		if strings.Contains(res.GetContent(), secret) {
			t.Errorf("a command read %s:\n%s", secret, res.GetContent())
		}
	}
	// Negative control: what the rules allow is read.
	if !strings.Contains(res.GetContent(), "package main // visible") {
		t.Fatalf("the allowed file was not read:\n%s", res.GetContent())
	}
}

// A long output is cut in the result, saved whole in the session's output folder, and read_file reads it there
// without a question, while the rest of Garuda's home stays closed.
func TestFullOutputIsReadable(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Bash("seq 1 20000")), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("%v %v", res, err)
	}
	i := strings.Index(res.Content, e.Home)
	if i < 0 || strings.Contains(res.Content, "\n10000\n") {
		t.Fatalf("the result is not cut with a note naming the saved output:\n%.300s", res.Content)
	}
	path := res.Content[i:]
	path = path[:strings.IndexAny(path, " \n]")]
	op := &execv1.Start{Op: &execv1.Start_ReadFile{ReadFile: &execv1.ReadFile{Path: path, Offset: 10000, Limit: 1}}}
	out, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op), execv1.Choice_CHOICE_DENY)
	if err != nil || len(qs) != 0 || out.GetStatus() != execv1.Status_STATUS_COMPLETED || !strings.Contains(out.Content, "\t10000") {
		t.Fatalf("read of the saved output %s: %.300v %v (%d questions)", path, out, err, len(qs))
	}
	// Negative control: another file of Garuda's home is denied.
	os.WriteFile(filepath.Join(e.Home, "credentials"), []byte("{}"), 0o600)
	out, _, _ = brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Read(filepath.Join(e.Home, "credentials"))),
		execv1.Choice_CHOICE_ONCE)
	if out.GetStatus() != execv1.Status_STATUS_DENIED {
		t.Fatalf("credentials: %v", out)
	}
}

// A "dir/**" read-deny rule outside the project hides the folder whole from commands: a command sees neither its
// files nor their names, and the broker does not list it to find them (work that would grow with what it holds).
// Control: a folder beside it is listed by the command.
func TestReadDenyRuleOutsideHidesTheFolderWhole(t *testing.T) {
	e := brokertest.New(t)
	base := t.TempDir()
	hidden, beside := filepath.Join(base, "hidden"), filepath.Join(base, "beside")
	for _, f := range []string{filepath.Join(hidden, "key-name-1.pem"), filepath.Join(hidden, "sub", "x"), filepath.Join(beside, "seen.txt")} {
		brokertest.MustWrite(t, f, "outside-secret\n")
	}
	e.Settings(t, `{"permissions":{"deny":["Read(/`+hidden+`/**)"]}}`)
	c := e.Client()
	sid := e.Open(c)
	opens := watchFolderOpens(t, base)
	res := brokertest.Sh(t, c, sid, "ls -R "+hidden+" "+beside+" 2>&1; cat "+hidden+"/* 2>&1; true")
	for _, leak := range []string{"key-name-1", "outside-secret"} {
		if strings.Contains(res.GetContent(), leak) {
			t.Errorf("the command saw %s:\n%s", leak, res.GetContent())
		}
	}
	if got := opens.take(t); got["hidden"] != 0 || got["hidden/sub"] != 0 {
		t.Errorf("the hidden folder was listed: %v", got)
	}
	if !strings.Contains(res.GetContent(), "seen.txt") {
		t.Fatalf("control: the folder beside it is not listed:\n%s", res.GetContent())
	}
}
