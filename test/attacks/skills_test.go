package attacks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Found by red team (first pass over the boundary).
// FOUND AND FIXED (denial of service). A sandboxed command plants a FIFO as a skill's SKILL.md (.claude/skills/NAME or
// .agents/skills/NAME; it gets a "created protected paths" warning, nothing more). Every later OpenSession of the
// project then blocks for ever opening it: the editor's session/new hangs, and a broker goroutine is stuck. FIFOs
// in the other places read at OpenSession (AGENTS.md, CLAUDE.md, commands, settings) are skipped. Control: the same
// skill as a regular file opens.
func TestRedTeamFIFOsPlantedForTheNextSession(t *testing.T) {
	openWithin := func(c execv1.ExecServiceClient, root string, d time.Duration) error {
		cx, cancel := context.WithTimeout(brokertest.Ctx(t), d)
		defer cancel()
		r, err := c.OpenSession(cx, &execv1.OpenSessionRequest{Root: root, Mode: execv1.Mode_MODE_BUILD})
		if err == nil {
			_, err = c.ListCommands(cx, &execv1.ListCommandsRequest{SessionId: r.SessionId})
		}
		return err
	}
	// Control: FIFOs as instructions and commands do not block, and a regular skill file is read.
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	brokertest.Sh(t, c, sid,
		"mkdir -p .claude/commands .claude/skills/s sub && mkfifo AGENTS.md CLAUDE.md sub/AGENTS.md .claude/commands/x.md && "+
			"printf -- '---\\nname: s\\ndescription: d\\n---\\nbody\\n' > .claude/skills/s/SKILL.md")

	if err := openWithin(c, e.Root, 5*time.Second); err != nil {
		t.Fatalf("control: %v", err)
	}
	// The attack: the skill file is a FIFO.
	e = brokertest.New(t)
	c = e.Client()
	sid = e.Open(c)
	res := brokertest.Sh(t, c, sid, "mkdir -p .claude/skills/s && mkfifo .claude/skills/s/SKILL.md")
	if res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("plant: %v", res)
	}
	if err := openWithin(c, e.Root, 3*time.Second); status.Code(err) == codes.DeadlineExceeded {
		t.Errorf("OpenSession hangs on a FIFO a command planted as .claude/skills/s/SKILL.md: %v", err)
	}
}

// Found by red team (second pass, as a compromised front end).
// HELD. Command and skill names with traversal reach no file outside the project's command folders: names are
// looked up in the list the broker made, never joined to a path; a symlinked command file is skipped. Control:
// the project's own command resolves (after its consent).
func TestRedTeamCommandAndSkillNames(t *testing.T) {
	e := brokertest.New(t)
	outside := filepath.Join(filepath.Dir(e.Root), "outside")
	brokertest.MustWrite(t, filepath.Join(outside, "x.md"), "OUTSIDE-PROMPT\n")
	brokertest.MustWrite(t, filepath.Join(outside, "s", "SKILL.md"), "---\nname: s\ndescription: d\n---\nOUTSIDE-SKILL\n")
	brokertest.MustWrite(t, filepath.Join(e.Home, "credentials"), `{"anthropic":"sk-ant-cmd-0006"}`)
	brokertest.MustWrite(t, filepath.Join(e.Root, ".garuda", "commands", "ok.md"), "OK-PROMPT\n")
	os.Symlink(filepath.Join(outside, "x.md"), filepath.Join(e.Root, ".garuda", "commands", "link.md"))
	os.Symlink(filepath.Join(outside, "s"), filepath.Join(e.Root, ".garuda", "skills", "s"))
	c := e.Client()
	sid := e.Open(c)
	resolve := func(text string) *execv1.Start {
		return &execv1.Start{Op: &execv1.Start_ResolveCommand{ResolveCommand: &execv1.ResolveCommand{Text: text}}}
	}
	skill := func(name string) *execv1.Start {
		return &execv1.Start{Op: &execv1.Start_LoadSkill{LoadSkill: &execv1.LoadSkill{Name: name}}}
	}
	for _, op := range []*execv1.Start{
		resolve("/../../outside/x"), resolve("/../outside/x"), resolve("/a/../../x"), resolve("/link"), resolve("/..:..:outside:x"),
		resolve("/../credentials"), resolve("/" + outside + "/x"),
		skill("../../outside/s"), skill("../outside/s"), skill("s"), skill("/" + outside + "/s"), skill("../credentials"),
	} {
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		if leaked(res, "OUTSIDE-") || leaked(res, "sk-ant-cmd") || strings.Contains(res.GetResolved().GetPrompt(), "OUTSIDE-") {
			t.Errorf("%v reached a file outside: %v", op, res)
		}
	}
	res, qs, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, resolve("/ok")), execv1.Choice_CHOICE_ONCE)
	if res.GetResolved().GetPrompt() != "OK-PROMPT\n" && !strings.Contains(res.GetResolved().GetPrompt(), "OK-PROMPT") || len(qs) != 1 {
		t.Fatalf("control: %v (%d questions)", res, len(qs))
	}
}
