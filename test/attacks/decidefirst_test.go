package attacks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Decide before any I/O: for a request the policy denies (or whose content-free question the user refuses),
// nothing observable — the result, the questions asked, the audit records — depends on what the target holds,
// whether it exists, or what kind of file it is; and the target is never opened. Each case runs in six worlds
// that differ only in the target, and compares what a hostile front end sees, byte for byte.

// world is one state of a request's target.
type world struct {
	name string
	make func(t *testing.T, path string)
}

var worlds = []world{
	{"the right guess", func(t *testing.T, p string) { brokertest.MustWrite(t, p, "token=SECRET-1234\n") }},
	{"another text", func(t *testing.T, p string) { brokertest.MustWrite(t, p, "token=OTHER-98765432\n") }},
	{"missing", func(t *testing.T, p string) {}},
	{"a folder", func(t *testing.T, p string) { mustMkdir(t, p) }},
	{"a FIFO", func(t *testing.T, p string) {
		mustMkdir(t, filepath.Dir(p))
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}},
	{"a symlink", func(t *testing.T, p string) {
		mustMkdir(t, filepath.Dir(p))
		if err := os.Symlink("/etc/hostname", p); err != nil {
			t.Fatal(err)
		}
	}},
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

// denial is a way a request is refused: a mode, settings, the target, and how questions are answered.
type denial struct {
	name     string
	plan     bool
	settings string                                // $GARUDA_HOME/settings.json
	target   func(e *brokertest.Env) string        // the path the worlds differ in
	answer   execv1.Choice                         // the answer to any question
	ops      map[string]func(string) *execv1.Start // by Start.op field; the argument is the target
}

// fileOps are the operations that take the target's path or a pattern that reaches it.
func fileOps() map[string]func(string) *execv1.Start {
	return map[string]func(string) *execv1.Start{
		"read_file":  func(p string) *execv1.Start { return brokertest.Read(p) },
		"write_file": func(p string) *execv1.Start { return brokertest.Write(p, "token=SECRET-1234\n") },
		"edit_file":  func(p string) *execv1.Start { return brokertest.EditOp(p, "SECRET-1234", "guessed", false) },
		"glob": func(p string) *execv1.Start {
			return &execv1.Start{Op: &execv1.Start_Glob{Glob: &execv1.Glob{Pattern: "**/" + filepath.Base(p), Path: filepath.Dir(p)}}}
		},
		"grep": func(p string) *execv1.Start {
			return &execv1.Start{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "SECRET-1234", Path: filepath.Dir(p), OutputMode: "count"}}}
		},
		"attach_mention": func(p string) *execv1.Start {
			return &execv1.Start{Op: &execv1.Start_AttachMention{AttachMention: &execv1.AttachMention{Path: p}}}
		},
	}
}

var denials = []denial{
	{
		name:   "Garuda's credentials",
		target: func(e *brokertest.Env) string { return filepath.Join(e.Home, "credentials") },
		answer: execv1.Choice_CHOICE_ONCE,
		ops:    fileOps(),
	},
	{
		name:     "plan mode and a read deny rule",
		plan:     true,
		settings: `{"permissions": {"deny": ["read_file(.env)", "bash(cat *)"]}}`,
		target:   func(e *brokertest.Env) string { return filepath.Join(e.Root, ".env") },
		answer:   execv1.Choice_CHOICE_ONCE,
		ops: merge(fileOps(), map[string]func(string) *execv1.Start{
			"bash": func(p string) *execv1.Start { return brokertest.Bash("cat " + p) },
			// A background process's start is decided as bash is: the same deny rule refuses it.
			"process_manager": func(p string) *execv1.Start {
				return &execv1.Start{Op: &execv1.Start_ProcessManager{ProcessManager: &execv1.ProcessManager{
					Action: execv1.ProcessAction_PROCESS_ACTION_START, Command: "cat " + p}}}
			},
		}),
	},
	{
		name:     "a read deny rule in build mode, the question refused",
		settings: `{"permissions": {"deny": ["read_file(.env)"]}}`,
		target:   func(e *brokertest.Env) string { return filepath.Join(e.Root, ".env") },
		answer:   execv1.Choice_CHOICE_DENY,
		ops:      fileOps(),
	},
	{
		name:     "a symlink in the project to a file a read rule hides",
		settings: `{"permissions": {"deny": ["read_file(.env)"]}}`,
		target:   func(e *brokertest.Env) string { return filepath.Join(e.Root, ".env") },
		answer:   execv1.Choice_CHOICE_DENY,
		ops: map[string]func(string) *execv1.Start{
			"read_file":      throughLink(fileOps()["read_file"]),
			"attach_mention": throughLink(fileOps()["attach_mention"]),
			"grep": throughLink(func(p string) *execv1.Start {
				return &execv1.Start{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "SECRET-1234", Path: p, OutputMode: "count"}}}
			}),
			"glob": throughLink(func(p string) *execv1.Start {
				return &execv1.Start{Op: &execv1.Start_Glob{Glob: &execv1.Glob{Pattern: "*", Path: p}}}
			}),
		},
	},
	{
		name:   "outside the project, the question refused",
		target: func(e *brokertest.Env) string { return filepath.Join(filepath.Dir(e.Root), "outside", "secret.txt") },
		answer: execv1.Choice_CHOICE_DENY,
		ops: map[string]func(string) *execv1.Start{
			"read_file":  fileOps()["read_file"],
			"write_file": fileOps()["write_file"],
			"edit_file":  fileOps()["edit_file"],
			"glob":       fileOps()["glob"],
			"grep":       fileOps()["grep"],
		},
	},
	{
		// Found by red team (class 1, outside the root). The user (or a compromised front end) allows a path outside
		// the project whose folder is a symbolic link into Garuda's own folder: the link's text is the allowed path's
		// own, but what lies behind it was never decided, so neither its existence nor its kind may show.
		name:   "outside the project, a link into Garuda's folder, the question allowed",
		target: func(e *brokertest.Env) string { return filepath.Join(e.Home, "sub") },
		answer: execv1.Choice_CHOICE_ONCE,
		ops: map[string]func(string) *execv1.Start{
			"read_file":  throughOutsideLink(fileOps()["read_file"]),
			"write_file": throughOutsideLink(fileOps()["write_file"]),
			"edit_file":  throughOutsideLink(fileOps()["edit_file"]),
		},
	},
	{
		// A hook event names no target; its hook runs as a command, from which the sandbox hides what a rule denies.
		name: "a hook event beside a file a rule hides, its hook trying to read it",
		settings: `{"permissions": {"deny": ["read_file(secret.txt)"]}, "hooks": {"UserPromptSubmit": [{"hooks": ` +
			`[{"type": "command", "command": "cat secret.txt 2>/dev/null | head -c 100; echo done"}]}]}}`,
		target: func(e *brokertest.Env) string { return filepath.Join(e.Root, "secret.txt") },
		answer: execv1.Choice_CHOICE_ONCE,
		ops: map[string]func(string) *execv1.Start{
			"hook_event": func(string) *execv1.Start {
				return &execv1.Start{Op: &execv1.Start_HookEvent{HookEvent: &execv1.HookEvent{Event: "UserPromptSubmit", Prompt: "hi"}}}
			},
		},
	},
	{
		// The network operations touch no file: the worlds differ only where they never look. What they must not do
		// before the decision (look the host up, connect) is TestWebFetchDeniedHostIsNeverDialled's.
		name:     "a denied host, and a denied web search",
		settings: `{"permissions": {"deny": ["web_fetch(domain:denied.example)", "web_search"]}}`,
		target:   func(e *brokertest.Env) string { return filepath.Join(e.Root, "page.html") },
		answer:   execv1.Choice_CHOICE_ONCE,
		ops: map[string]func(string) *execv1.Start{
			"web_fetch": func(p string) *execv1.Start { return brokertest.FetchOp("http://denied.example/" + filepath.Base(p)) },
			"web_search_consent": func(string) *execv1.Start {
				return &execv1.Start{Op: &execv1.Start_WebSearchConsent{WebSearchConsent: &execv1.WebSearchConsent{}}}
			},
		},
	},
	{
		name:     "a project command and a skill in a folder a rule hides",
		settings: `{"permissions": {"deny": ["read_file(.garuda/**)"]}}`,
		target:   func(e *brokertest.Env) string { return filepath.Join(e.Root, ".garuda", "skills", "s", "SKILL.md") },
		answer:   execv1.Choice_CHOICE_ONCE,
		ops: map[string]func(string) *execv1.Start{
			"load_skill": func(string) *execv1.Start {
				return &execv1.Start{Op: &execv1.Start_LoadSkill{LoadSkill: &execv1.LoadSkill{Name: "s"}}}
			},
			"resolve_command": func(string) *execv1.Start {
				return &execv1.Start{Op: &execv1.Start_ResolveCommand{ResolveCommand: &execv1.ResolveCommand{Text: "/s please"}}}
			},
		},
	},
	{
		name:     "a project agent in a folder a rule hides",
		settings: `{"permissions": {"deny": ["read_file(.garuda/**)"]}}`,
		target:   func(e *brokertest.Env) string { return filepath.Join(e.Root, ".garuda", "agents", "s.md") },
		answer:   execv1.Choice_CHOICE_ONCE,
		ops: map[string]func(string) *execv1.Start{
			"load_agent": func(string) *execv1.Start {
				return &execv1.Start{Op: &execv1.Start_LoadAgent{LoadAgent: &execv1.LoadAgent{Name: "s"}}}
			},
		},
	},
	{
		name:     "a project's MCP servers in a file a rule hides, and a server a rule denies",
		settings: `{"permissions": {"deny": ["read_file(.mcp.json)", "mcp__x"]}}`,
		target:   func(e *brokertest.Env) string { return filepath.Join(e.Root, ".mcp.json") },
		answer:   execv1.Choice_CHOICE_ONCE,
		ops: map[string]func(string) *execv1.Start{
			"mcp_start": func(string) *execv1.Start {
				return &execv1.Start{Op: &execv1.Start_McpStart{McpStart: &execv1.McpStart{}}}
			},
			"mcp_call": func(string) *execv1.Start {
				return &execv1.Start{Op: &execv1.Start_McpCall{McpCall: &execv1.McpCall{Server: "x", Tool: "y", ArgumentsJson: "{}"}}}
			},
			"mcp_resource": func(string) *execv1.Start {
				return &execv1.Start{Op: &execv1.Start_McpResource{McpResource: &execv1.McpResource{Server: "x", Uri: "mem://y"}}}
			},
		},
	},
}

// throughLink makes a symlink "link" beside the target that points at it, and asks op about the link: the link is
// the model's to make (a command can plant one), the target is hidden.
func throughLink(op func(string) *execv1.Start) func(string) *execv1.Start {
	return func(p string) *execv1.Start {
		link := filepath.Join(filepath.Dir(p), "link")
		os.Symlink(filepath.Base(p), link)
		return op(link)
	}
}

// throughOutsideLink makes a symlink "outside/link", beside the project, to the folder of the target, and asks op
// about a file below the target through it: the link is a prefix of the path asked, the target behind it hidden.
func throughOutsideLink(op func(string) *execv1.Start) func(string) *execv1.Start {
	return func(p string) *execv1.Start {
		outside := filepath.Join(filepath.Dir(filepath.Dir(p)), "outside")
		os.MkdirAll(outside, 0o755)
		os.Symlink(filepath.Dir(p), filepath.Join(outside, "link"))
		return op(filepath.Join(outside, "link", filepath.Base(p), "x"))
	}
}

func merge(a, b map[string]func(string) *execv1.Start) map[string]func(string) *execv1.Start {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// observe runs op once in a new broker whose target is in world w, and returns everything a front end and the
// audit log see of it, with the temp folders' names replaced, and whether the broker opened the target.
func observe(t *testing.T, d denial, w world, op func(string) *execv1.Start) (seen string, opened bool) {
	t.Helper()
	dir := t.TempDir()
	e := brokertest.NewIn(t, dir, filepath.Join(dir, "project"), filepath.Join(dir, "home"))
	if d.settings != "" {
		brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), d.settings)
	}
	target := d.target(e)
	if strings.HasSuffix(target, "SKILL.md") || strings.HasSuffix(target, "agents/s.md") {
		// The skill is well formed in the worlds where it is a file.
		w = skillWorld(w)
	}
	w.make(t, target)
	c := e.Client()
	mode := execv1.Mode_MODE_BUILD
	if d.plan {
		mode = execv1.Mode_MODE_PLAN
	}
	r, err := c.OpenSession(context.Background(), &execv1.OpenSessionRequest{Root: e.Root, Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	watch := watchOpens(t, filepath.Dir(target))
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), r.SessionId, op(target)), d.answer)
	opened = watch(filepath.Base(target))
	var b strings.Builder
	fmt.Fprintf(&b, "error: %v\nresult: %s\n", err, prototext.Format(res))
	for _, q := range qs {
		q.QuestionId = ""
		fmt.Fprintf(&b, "question: %s\n", prototext.Format(q))
	}
	for _, rec := range brokertest.AuditRecords(t, e.Home) {
		fmt.Fprintf(&b, "audit: %s %s %q %s %q %q %s %s\n", rec.Event, rec.Op, rec.Input, rec.Verdict, rec.Rule, rec.Reason,
			rec.Status, rec.AnsweredBy)
	}
	seen = strings.ReplaceAll(b.String(), r.SessionId, "$SESSION")
	return strings.ReplaceAll(seen, dir, "$DIR"), opened
}

// skillWorld makes a file world's content a skill, so that a skill that could be read would load.
func skillWorld(w world) world {
	switch w.name {
	case "the right guess", "another text":
		text := w.name
		return world{w.name, func(t *testing.T, p string) {
			brokertest.MustWrite(t, p, "---\nname: s\ndescription: "+text+"\n---\nbody of "+text+"\n")
		}}
	}
	return w
}

// watchOpens watches dir for opens and reads of its entries; the function it returns says whether name was
// opened or read since.
func watchOpens(t *testing.T, dir string) func(name string) bool {
	t.Helper()
	mustMkdir(t, dir)
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_OPEN|unix.IN_ACCESS); err != nil {
		t.Fatal(err)
	}
	return func(name string) bool {
		defer unix.Close(fd)
		buf := make([]byte, 64<<10)
		seen := false
		for {
			n, err := unix.Read(fd, buf)
			if n <= 0 || err != nil {
				return seen
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				if strings.TrimRight(string(nameBytes), "\x00") == name {
					seen = true
				}
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}

func TestDeniedRequestsAnswerTheSameWhateverTheTargetIs(t *testing.T) {
	for _, d := range denials {
		for field, op := range d.ops {
			t.Run(d.name+"/"+field, func(t *testing.T) {
				var first string
				for i, w := range worlds {
					seen, opened := observe(t, d, w, op)
					if opened {
						t.Errorf("in the world where the target is %s, the broker opened it", w.name)
					}
					if i == 0 {
						first = seen
						// resolve_command, skill, load_agent and mcp_start decide nothing here: the hidden file is simply not
						// found; a hook event decides nothing of its own.
						if field != "resolve_command" && field != "load_skill" && field != "load_agent" && field != "hook_event" &&
							field != "mcp_start" && !strings.Contains(seen, "audit: decision") {
							t.Fatalf("no decision was audited:\n%s", seen)
						}
						continue
					}
					if seen != first {
						t.Errorf("the answer depends on the target: where it is %s\n%s\nwhere it is %s\n%s", worlds[0].name, first, w.name, seen)
					}
				}
			})
		}
	}
}

// denialNamed is the case of denials with that name.
func denialNamed(t *testing.T, name string) denial {
	t.Helper()
	for _, d := range denials {
		if d.name == name {
			return d
		}
	}
	t.Fatalf("no denial case %q", name)
	return denial{}
}

// The control: the same comparison, for requests whose target the policy lets the model read, sees the worlds
// differ (an edit's "found 0 times", a read's content, a grep's count, a skill's body). So the test above would
// catch an operation that opened its target first.
func TestDecideFirstControlSeesReadableTargets(t *testing.T) {
	readable := denial{
		name:   "a readable file in the project",
		target: func(e *brokertest.Env) string { return filepath.Join(e.Root, "notes.txt") },
		answer: execv1.Choice_CHOICE_DENY,
		ops:    fileOps(),
	}
	skills := denialNamed(t, "a project command and a skill in a folder a rule hides")
	skills.settings = ""
	// The same hook, with no rule hiding the file: its output tells the worlds apart.
	hook := denialNamed(t, "a hook event beside a file a rule hides, its hook trying to read it")
	hook.settings = strings.Replace(hook.settings, `"deny": ["read_file(secret.txt)"]`, `"deny": []`, 1)
	agents := denialNamed(t, "a project agent in a folder a rule hides")
	agents.settings = ""
	// mcp_start reads a .mcp.json the rules do not hide: its worlds differ (a malformed file's notice, none).
	servers := denialNamed(t, "a project's MCP servers in a file a rule hides, and a server a rule denies")
	servers.settings = ""
	servers.ops = map[string]func(string) *execv1.Start{"mcp_start": servers.ops["mcp_start"]}
	for _, d := range []denial{readable, skills, hook, agents, servers} {
		for field, op := range d.ops {
			t.Run(field, func(t *testing.T) {
				a, _ := observe(t, d, worlds[0], op)
				b, _ := observe(t, d, worlds[1], op)
				c, _ := observe(t, d, worlds[2], op)
				if a == b && b == c {
					t.Errorf("three worlds of a readable target look the same to %s:\n%s", field, a)
				}
			})
		}
	}
}

// Guard: every operation of the broker API is in the table of TestDeniedRequestsAnswerTheSameWhateverTheTargetIs,
// so an operation added later cannot skip it.
func TestEveryOperationIsCheckedForDecideFirst(t *testing.T) {
	covered := map[string]bool{}
	for _, d := range denials {
		for field := range d.ops {
			covered[field] = true
		}
	}
	fields := (&execv1.Start{}).ProtoReflect().Descriptor().Oneofs().ByName("op").Fields()
	for i := range fields.Len() {
		name := string(fields.Get(i).Name())
		if !covered[name] {
			t.Errorf("operation %s has no case in the decide-first test: add one to denials", name)
		}
	}
}

// Found by red team (class 1). A write the rules allow before the session's first command is decided again after
// the guard's first walk of the project (what nested repositories point git at). That walk must enter no folder a
// read rule hides: a repository there whose core.hooksPath names a folder of the project would turn an allowed
// write into a question, so the answer would say what the hidden folder holds. Control: with no rule hiding it,
// the same repository makes the write a question.
//
// The same walk before a command, in a root opened through a symbolic link: the paths the sandbox hides are spelled
// under the root's given name, the walk's under its real one; it entered the hidden folder all the same.
func TestRedTeamWriteDecisionWalksNoHiddenFolder(t *testing.T) {
	for _, how := range []string{"before any command", "after a command, the root through a symlink"} {
		t.Run(how, func(t *testing.T) { writeDecisionWalksNoHiddenFolder(t, how != "before any command") })
	}
}

func writeDecisionWalksNoHiddenFolder(t *testing.T, linked bool) {
	observe := func(t *testing.T, deny string, planted bool) string {
		dir := t.TempDir()
		root := filepath.Join(dir, "project")
		if linked {
			mustMkdir(t, filepath.Join(dir, "real"))
			if err := os.Symlink(filepath.Join(dir, "real"), root); err != nil {
				t.Fatal(err)
			}
		}
		e := brokertest.NewIn(t, dir, root, filepath.Join(dir, "home"))
		e.Settings(t, `{"permissions": {"deny": [`+deny+`], "allow": ["Write(tools/**)"]}}`)
		if planted {
			brokertest.MustWrite(t, filepath.Join(e.Root, "secret", ".git", "HEAD"), "ref: refs/heads/main\n")
			brokertest.MustWrite(t, filepath.Join(e.Root, "secret", ".git", "config"), "[core]\n\thooksPath = ../tools\n")
		} else {
			mustMkdir(t, filepath.Join(e.Root, "secret"))
		}
		c := e.Client()
		sid := e.Open(c)
		if linked {
			brokertest.Sh(t, c, sid, "true")
		}
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("tools/pre-commit", "x\n")),
			execv1.Choice_CHOICE_DENY)
		return strings.ReplaceAll(fmt.Sprintf("%v %v %q %d questions", err, res.GetStatus(), res.GetContent(), len(qs)), dir, "$DIR")
	}
	// A name at any depth (a "**" rule: the walk asks the policy) and a root-relative path (the sandbox's hidden list).
	for _, hidden := range []string{`"Read(secret)"`, `"Read(/secret)"`} {
		if a, b := observe(t, hidden, true), observe(t, hidden, false); a != b {
			t.Errorf("with %s, the write's answer depends on a folder it hides:\nplanted: %s\nempty:   %s", hidden, a, b)
		}
	}
	if a, b := observe(t, "", true), observe(t, "", false); a == b {
		t.Errorf("control: with no rule hiding it, the planted repository should make the write a question: %s", a)
	}
}

// Found by red team (class 1). write_file of a file a read rule hides asks first with no content, as it should; but
// once that question was allowed (by the user, or by a compromised front end, which answers every question), the
// review question showed the file's old content as a diff, and the answer said whether it existed ("Created") and
// where it first differed. Now the review shows the new bytes only: in the worlds where the file can be written the
// answers are the same, and in those where it cannot (a folder, a FIFO, a symlink) they fail alike. Control: with
// no rule hiding it, the review shows what the file held.
func TestRedTeamBlindWriteShowsNothingOfTheHiddenFile(t *testing.T) {
	d := denial{
		name:     "a write of a file a read rule hides, every question allowed",
		settings: `{"permissions": {"deny": ["read_file(.env)"]}}`,
		target:   func(e *brokertest.Env) string { return filepath.Join(e.Root, ".env") },
		answer:   execv1.Choice_CHOICE_ONCE,
	}
	write := func(p string) *execv1.Start { return brokertest.Write(p, "token=NEW\n") }
	for _, group := range [][]world{worlds[:3], worlds[3:]} {
		first, _ := observe(t, d, group[0], write)
		for _, w := range group[1:] {
			if seen, _ := observe(t, d, w, write); seen != first {
				t.Errorf("the write's answers depend on the hidden file: where it is %s\n%s\nwhere it is %s\n%s", group[0].name, first,
					w.name, seen)
			}
		}
	}
	d.settings = ""
	held, _ := observe(t, d, worlds[0], write)
	missing, _ := observe(t, d, worlds[2], write)
	if !strings.Contains(held, "SECRET-1234") || held == missing {
		t.Errorf("control: with no rule, the review should show the file's old content:\n%s\n%s", held, missing)
	}
}
