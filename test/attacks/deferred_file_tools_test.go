package attacks

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// plantedByFileTools is a bare repository written through write_file alone, in an order where no file looks like a
// git folder's until the last is written: its config first (core.fsmonitor in shell form: write_file makes no
// program executable), then HEAD, objects/ and refs/.
var plantedByFileTools = [][2]string{
	{"planted/config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = touch PWNED; false\n"},
	{"planted/HEAD", "ref: refs/heads/main\n"},
	{"planted/sub/a.txt", "a\n"},
	{"planted/objects/.keep", ""},
	{"planted/refs/.keep", ""},
}

// TestDeferredByTheFileTools: what the file tools write, under a rule that allows every write without a question,
// is checked like what a command leaves: a repository they assemble file by file runs nothing on the user's git
// status. Control: the same files written by a command outside the sandbox (no guard) make git run the program.
func TestDeferredByTheFileTools(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	var cmd []string
	for _, f := range plantedByFileTools {
		cmd = append(cmd, "mkdir -p "+filepath.Dir(f[0])+" && printf '%s' '"+f[1]+"' > "+f[0])
	}
	ctl := brokertest.New(t)
	cc := ctl.Client()
	unsandboxedSh(t, cc, ctl.Open(cc), strings.Join(cmd, " && "))
	asUser(t, filepath.Join(ctl.Root, "planted/sub"), "status")
	if !brokertest.Exists(filepath.Join(ctl.Root, "planted/PWNED")) {
		t.Fatal("control: git did not run the planted repository's fsmonitor")
	}

	e := brokertest.New(t)
	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), `{"permissions":{"allow":["write_file(**)"]}}`)
	c := e.Client()
	sid := e.Open(c)
	brokertest.Sh(t, c, sid, "true") // the session's first command: the guard has walked the root
	var said []string
	for _, f := range plantedByFileTools {
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write(f[0], f[1])),
			execv1.Choice_CHOICE_ONCE)
		if err != nil {
			t.Fatal(err)
		}
		said = append(said, res.GetContent())
		t.Logf("%s: %d questions, %s", f[0], len(qs), res.GetContent())
	}
	asUser(t, filepath.Join(e.Root, "planted/sub"), "status")
	if brokertest.Exists(filepath.Join(e.Root, "planted/PWNED")) {
		t.Errorf("git ran a repository the file tools assembled:\n%s", strings.Join(said, "\n"))
	}
	// What the user was asked about and allowed stays as written: a protected file, in a folder the write made.
	const tasks = `{"tasks":[{"label":"x","command":"make"}]}`
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write(".vscode/tasks.json", tasks)),
		execv1.Choice_CHOICE_ONCE)
	if err != nil || len(qs) == 0 || brokertest.FileText(filepath.Join(e.Root, ".vscode/tasks.json")) != tasks ||
		strings.Contains(res.GetContent(), "Undone") {
		t.Errorf("an allowed write of .vscode/tasks.json: %v, %d questions, %s", err, len(qs), res.GetContent())
	}
}
