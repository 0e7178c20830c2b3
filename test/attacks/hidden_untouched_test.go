package attacks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Found by red team (class 1 pass). TestNothingOpensAHiddenFolder: across a session that uses every operation
// (its start, the command list, reads, searches, an allowed write before the first command, a command, a
// background process, hooks, MCP, commands, skills, agents, mentions, undo, garuda trust, its end), nothing opens
// or lists a folder a read rule hides, or a file in it: what the broker does, and so how long it takes, cannot
// depend on what the folder holds. One rule names the folder at any depth (the policy's walk), one from the root
// (the sandbox's hidden list); the project is opened by its own name and through a symbolic link. Control: the
// same session without the rules opens them.
func TestNothingOpensAHiddenFolder(t *testing.T) {
	for _, hidden := range []bool{true, false} {
		for _, linked := range []bool{false, true} {
			t.Run(fmt.Sprintf("hidden=%v,linked=%v", hidden, linked), func(t *testing.T) { nothingOpensAHiddenFolder(t, hidden, linked) })
		}
	}
}

func nothingOpensAHiddenFolder(t *testing.T, hidden, linked bool) {
	dir := t.TempDir()
	root := filepath.Join(dir, "project")
	if linked {
		os.MkdirAll(filepath.Join(dir, "real"), 0o755)
		if err := os.Symlink(filepath.Join(dir, "real"), root); err != nil {
			t.Fatal(err)
		}
	}
	e := brokertest.NewIn(t, dir, root, filepath.Join(dir, "home"))
	for _, d := range []string{"secret", "vault"} {
		for _, f := range []string{"a.txt", "inner/b.txt", ".gitignore", "AGENTS.md", ".mcp.json", "inner/.git/config"} {
			brokertest.MustWrite(t, filepath.Join(e.Root, d, f), "x\n")
		}
		brokertest.MustWrite(t, filepath.Join(e.Root, d, ".garuda", "skills", "s", "SKILL.md"), "---\nname: s\n---\nbody\n")
	}
	brokertest.MustWrite(t, filepath.Join(e.Root, ".garuda", "commands", "hello.md"), "hello $ARGUMENTS\n")
	deny := `[]`
	if hidden {
		deny = `["Read(secret)", "Read(/vault)"]`
	}
	e.Settings(t, fmt.Sprintf(`{"permissions": {"deny": %s, "allow": ["Write(tools/**)"]}, %s}`, deny,
		strings.TrimSuffix(strings.TrimPrefix(brokertest.HooksJSON("UserPromptSubmit", "", "true", ""), "{"), "}")))
	watch := watchTrees(t, filepath.Join(e.Root, "secret"), filepath.Join(e.Root, "secret", "inner"),
		filepath.Join(e.Root, "vault"), filepath.Join(e.Root, "vault", "inner"))
	c := e.Client()
	sid := e.Open(c)
	if _, err := c.ListCommands(brokertest.Ctx(t), &execv1.ListCommandsRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	for _, op := range []*execv1.Start{
		brokertest.Write("tools/x", "x\n"),
		brokertest.Read("secret/a.txt"), brokertest.Read("vault/a.txt"),
		brokertest.GlobOp("**/*"), brokertest.GrepOp("x", "count"),
		{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "x", Path: "secret"}}},
		brokertest.EditOp("vault/a.txt", "x", "y", false),
		{Op: &execv1.Start_AttachMention{AttachMention: &execv1.AttachMention{Path: "secret/a.txt"}}},
		brokertest.Bash("true"),
		{Op: &execv1.Start_ProcessManager{ProcessManager: &execv1.ProcessManager{
			Action: execv1.ProcessAction_PROCESS_ACTION_START, Command: "true"}}},
		brokertest.HookEvent("UserPromptSubmit", "hi", ""),
		{Op: &execv1.Start_McpStart{McpStart: &execv1.McpStart{}}},
		{Op: &execv1.Start_ResolveCommand{ResolveCommand: &execv1.ResolveCommand{Text: "/hello you"}}},
		{Op: &execv1.Start_LoadSkill{LoadSkill: &execv1.LoadSkill{Name: "s"}}},
		{Op: &execv1.Start_LoadAgent{LoadAgent: &execv1.LoadAgent{}}},
	} {
		if _, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op), execv1.Choice_CHOICE_DENY); err != nil {
			t.Fatalf("%v: %v", op, err)
		}
	}
	c.Undo(brokertest.Ctx(t), &execv1.UndoRequest{SessionId: sid})
	c.InspectTrust(brokertest.Ctx(t), &execv1.InspectTrustRequest{Dir: e.Root})
	if _, err := c.CloseSession(brokertest.Ctx(t), &execv1.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	got := watch()
	switch {
	case hidden && len(got) > 0:
		t.Errorf("hidden folders were opened or read: %v", got)
	case !hidden && len(got) == 0:
		t.Error("control: without the rules, the session should open the folders (a search, a command's walk)")
	}
}

// watchTrees watches folders for opens and reads of themselves and their entries; the function it returns lists
// what was opened or read since (folder: name), once.
func watchTrees(t *testing.T, dirs ...string) func() []string {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	names := map[int32]string{}
	for _, d := range dirs {
		wd, err := unix.InotifyAddWatch(fd, d, unix.IN_OPEN|unix.IN_ACCESS)
		if err != nil {
			t.Fatal(err)
		}
		names[int32(wd)] = d
	}
	return func() []string {
		defer unix.Close(fd)
		seen := map[string]bool{}
		var out []string
		buf := make([]byte, 64<<10)
		for {
			n, err := unix.Read(fd, buf)
			if n <= 0 || err != nil {
				return out
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
				if k := names[ev.Wd] + ": " + name; !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}

// Found by red team (where the class-1 and class-2 passes meet). A file tool's write is checked by the command guard
// (its scan before and after); a write the user was asked about, before the session's first command, took that scan
// with the options the session started with, which know no read rule: it walked into the folders they hide (its
// time, and what its result says it made listable, then depended on what they hold). Control: with no rule, the
// same write's scan opens the folder.
func TestRedTeamAskedWriteWalksNoHiddenFolder(t *testing.T) {
	for _, hidden := range []bool{true, false} {
		t.Run(fmt.Sprintf("hidden=%v", hidden), func(t *testing.T) {
			e := brokertest.New(t)
			brokertest.MustWrite(t, filepath.Join(e.Root, "secret", "inner", "a.txt"), "x\n")
			brokertest.MustWrite(t, filepath.Join(e.Root, "vault", "inner", "a.txt"), "x\n")
			if hidden {
				e.Settings(t, `{"permissions": {"deny": ["Read(secret)", "Read(/vault)"]}}`)
			}
			watch := watchTrees(t, filepath.Join(e.Root, "secret"), filepath.Join(e.Root, "secret", "inner"),
				filepath.Join(e.Root, "vault"), filepath.Join(e.Root, "vault", "inner"))
			c := e.Client()
			sid := e.Open(c)
			res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("tools/x", "x\n")),
				execv1.Choice_CHOICE_ONCE)
			if err != nil || len(qs) == 0 || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
				t.Fatalf("the asked write: %v, %d questions, %v %s", err, len(qs), res.GetStatus(), res.GetContent())
			}
			got := watch()
			switch {
			case hidden && len(got) > 0:
				t.Errorf("an asked write opened hidden folders: %v", got)
			case !hidden && len(got) == 0:
				t.Error("control: without the rules, the write's scan should open the folders")
			}
		})
	}
}

// Found by red team (where the class-1 and class-2 passes meet). A protected folder a read rule hides (".idea",
// ".claude") is covered whole by the sandbox, yet the guard's fingerprint of protected paths listed it, every file
// in it, at each scan before and after a command: how long a command took grew with what it held. Now a hidden one
// is fingerprinted by itself alone. Control: with no rule, it is listed.
func TestRedTeamGuardListsNoHiddenProtectedFolder(t *testing.T) {
	for i, rule := range []string{`"Read(.idea)"`, `"Read(/.idea)"`, ``} {
		hidden := rule != ""
		t.Run([]string{"any depth", "from the root", "no rule"}[i], func(t *testing.T) {
			e := brokertest.New(t)
			brokertest.MustWrite(t, filepath.Join(e.Root, ".idea", "inner", "workspace.xml"), "x\n")
			e.Settings(t, `{"permissions": {"deny": [`+rule+`]}}`)
			watch := watchTrees(t, filepath.Join(e.Root, ".idea"), filepath.Join(e.Root, ".idea", "inner"))
			c := e.Client()
			sid := e.Open(c)
			brokertest.Sh(t, c, sid, "true")
			got := watch()
			switch {
			case hidden && len(got) > 0:
				t.Errorf("a hidden protected folder was opened: %v", got)
			case !hidden && len(got) == 0:
				t.Error("control: without the rule, the guard's fingerprint should list the folder")
			}
		})
	}
}
