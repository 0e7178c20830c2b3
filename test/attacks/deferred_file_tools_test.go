package attacks

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// fileToolsAsk writes each path with write_file in a session whose settings allow every write: each of plain is
// written without a question (the control), and each of asked is asked about once, with no "for the session"
// choice, and is not written when the answer is deny.
func fileToolsAsk(t *testing.T, c execv1.ExecServiceClient, sid, root string, plain []string, asked ...string) {
	t.Helper()
	for _, p := range plain {
		if res, qs, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write(p, "x")),
			execv1.Choice_CHOICE_DENY); len(qs) != 0 || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			t.Fatalf("control: a write of %s: %v, %d questions", p, res.GetStatus(), len(qs))
		}
	}
	for _, p := range asked {
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write(p, "x")), execv1.Choice_CHOICE_DENY)
		if err != nil {
			t.Fatal(err)
		}
		if len(qs) != 1 || res.GetStatus() != execv1.Status_STATUS_DENIED || brokertest.Exists(filepath.Join(root, p)) {
			t.Errorf("%s: %d questions, %v", p, len(qs), res.GetStatus())
			continue
		}
		for _, ch := range qs[0].Choices {
			if ch == execv1.Choice_CHOICE_SESSION {
				t.Errorf("%s offered %v", p, qs[0].Choices)
			}
		}
	}
}

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
	// What the user was asked about and allowed stays as written: a protected file, in a folder the write made, and
	// again in that folder, there now; neither answer warns of a change to the protected folder the write was in.
	const tasks = `{"tasks":[{"label":"x","command":"make"}]}`
	for _, p := range []string{".vscode/tasks.json", ".vscode/launch.json"} {
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write(p, tasks)),
			execv1.Choice_CHOICE_ONCE)
		if err != nil || len(qs) == 0 || brokertest.FileText(filepath.Join(e.Root, p)) != tasks ||
			strings.Contains(res.GetContent(), "Undone") || strings.Contains(res.GetContent(), "Warning") {
			t.Errorf("an allowed write of %s: %v, %d questions, %s", p, err, len(qs), res.GetContent())
		}
	}
}

// Found by red team (where the class-1 and class-2 passes meet: undo decided as an edit, the file tools checked by
// the guard). Undo restores a file as it was before a write, and was not checked by the guard: one session writes
// a config that names a program, then a harmless one, in a folder that is no repository yet; another session's
// writes make the folder a repository (its config harmless then); undo of the first session's last write puts the
// program back, in a repository now, and git ran it. Now a restore is checked like a write. Controls: before the
// undo, git runs nothing; the same files written with no guard run (TestDeferredByTheFileTools).
func TestRedTeamUndoRestoresNoProgramForGit(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	e := brokertest.New(t)
	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), `{"permissions":{"allow":["write_file(**)"]}}`)
	c := e.Client()
	write := func(sid, p, content string) {
		t.Helper()
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write(p, content)), execv1.Choice_CHOICE_ONCE)
		if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			t.Fatalf("write %s: %v %s", p, err, res.GetContent())
		}
	}
	a, b := e.Open(c), e.Open(c)
	write(a, "planted/config", plantedByFileTools[0][1])
	write(a, "planted/config", "[core]\n\tbare = false\n\tworktree = .\n")
	for _, f := range plantedByFileTools[1:] {
		write(b, f[0], f[1])
	}
	asUser(t, filepath.Join(e.Root, "planted/sub"), "status")
	if brokertest.Exists(filepath.Join(e.Root, "planted/PWNED")) {
		t.Fatal("control: before the undo, git should run nothing")
	}
	res, err := c.Undo(brokertest.Ctx(t), &execv1.UndoRequest{SessionId: a})
	t.Logf("undo: %v %v", res, err)
	asUser(t, filepath.Join(e.Root, "planted/sub"), "status")
	if brokertest.Exists(filepath.Join(e.Root, "planted/PWNED")) {
		t.Errorf("git ran the program an undo put back in a repository:\n%s", brokertest.FileText(filepath.Join(e.Root, "planted/config")))
	}
}
