package commands

import (
	"strings"
	"testing"
	"testing/fstest"
)

func testSet(t *testing.T) *Set {
	t.Helper()
	return mustLoad(t, fstest.MapFS{
		".claude/commands/hello.md":     file("---\ndescription: Say hello\nargument-hint: <who>\n---\nSay hello to $ARGUMENTS."),
		".claude/commands/a/b.md":       file("Namespaced: $1 then $2"),
		".claude/commands/fix-issue.md": file("Fix issue $1 with priority $2; all: $ARGUMENTS"),
		".claude/commands/plain.md":     file("Do the plain thing."),
		".claude/skills/pdf/SKILL.md":   file("---\nname: pdf\ndescription: Work with PDFs\n---\nUse pdftotext."),
	}, fstest.MapFS{"commands/mine.md": file("---\ndescription: Mine\n---\nMine: $ARGUMENTS")})
}

func TestResolveWhatIsACommand(t *testing.T) {
	s := testSet(t)
	cases := []struct {
		text string
		kind Kind
	}{
		{"/etc/hosts is wrong", KindNotCommand},
		{"/usr/bin/env", KindNotCommand},
		{"/a:b/c", KindNotCommand},
		{"hello", KindNotCommand},
		{" /hello", KindNotCommand},
		{"/", KindNotCommand},
		{"/ hello", KindNotCommand},
		{"/.hidden", KindNotCommand},
		{"/-x", KindNotCommand},
		{"/hello, world", KindNotCommand},
		{"//hello", KindNotCommand},
		{"please run /hello", KindNotCommand},
		{"/hello", KindPrompt},
		{"/hello world", KindPrompt},
		{"/hello\nsecond line", KindPrompt},
		{"/a:b x y", KindPrompt},
		{"/pdf", KindPrompt},
		{"/mine", KindPrompt},
		{"/undo", KindMessage},
		{"/help", KindMessage},
		// A name that is no command is text for the model.
		{"/nosuch", KindNotCommand},
		{"/tmp is full", KindNotCommand},
		{"/usr is almost full, what can I delete?", KindNotCommand},
		{"/helo", KindNotCommand},
	}
	for _, c := range cases {
		r := s.Resolve(c.text)
		if r.Kind != c.kind {
			t.Errorf("Resolve(%q).Kind = %v, want %v (%+v)", c.text, r.Kind, c.kind, r)
		}
		if r.Kind == KindPrompt && (r.Command == nil || r.Prompt == "") {
			t.Errorf("Resolve(%q): a prompt without its command: %+v", c.text, r)
		}
		if r.Kind != KindPrompt && (r.Command != nil || r.Prompt != "") {
			t.Errorf("Resolve(%q): %+v has a prompt", c.text, r)
		}
	}
}

// $ARGUMENTS is all of the arguments, $1…$9 the words, shell-like; nothing is expanded twice.
func TestResolveArguments(t *testing.T) {
	s := testSet(t)
	cases := []struct{ text, prompt string }{
		{"/hello", "Say hello to ."},
		{"/hello Ada Lovelace", "Say hello to Ada Lovelace."},
		{"/hello   spaced  ", "Say hello to spaced."},
		{"/a:b one two three", "Namespaced: one then two"},
		{"/a:b one", "Namespaced: one then "},
		{`/a:b "two words" 'it''s'`, "Namespaced: two words then its"},
		{`/a:b "say \"hi\"" back\ slash`, `Namespaced: say "hi" then back slash`},
		{`/a:b '$HOME' "$PATH"`, "Namespaced: $HOME then $PATH"},
		{"/a:b $2 $1", "Namespaced: $2 then $1"},
		{"/fix-issue 123 high", "Fix issue 123 with priority high; all: 123 high"},
		{"/fix-issue $ARGUMENTS", "Fix issue $ARGUMENTS with priority ; all: $ARGUMENTS"},
		{"/plain", "Do the plain thing."},
		{"/plain with args", "Do the plain thing.\n\nARGUMENTS: with args"},
		{"/a:b \"unclosed quote", "Namespaced: unclosed quote then "},
	}
	for _, c := range cases {
		if r := s.Resolve(c.text); r.Prompt != c.prompt {
			t.Errorf("Resolve(%q).Prompt = %q, want %q", c.text, r.Prompt, c.prompt)
		}
	}
	nine := &Command{Body: "$1$2$3$4$5$6$7$8$9 $10 $0 $ $ARGUMENT"}
	if got := expand(nine, "a b c d e f g h i j"); got != "abcdefghi a0 $0 $ $ARGUMENT" {
		t.Errorf("expand = %q", got)
	}
}

func TestResolveSkill(t *testing.T) {
	s := testSet(t)
	r := s.Resolve("/pdf extract page 2 of report.pdf")
	want := "Use the skill \"pdf\" (.claude/skills/pdf/SKILL.md). Its instructions:\n\nUse pdftotext.\n\nThe user's " +
		"request: extract page 2 of report.pdf"
	if r.Kind != KindPrompt || r.Prompt != want || !r.Command.Skill {
		t.Fatalf("Resolve(/pdf …) = %+v\nwant prompt %q", r, want)
	}
	if r := s.Resolve("/pdf"); strings.Contains(r.Prompt, "request") {
		t.Fatalf("a skill without arguments has a request: %q", r.Prompt)
	}
}

// The built-in chat commands answer without a prompt, naming the CLI command where there is one.
func TestResolveBuiltins(t *testing.T) {
	s := testSet(t)
	cases := map[string]string{
		"/undo":        "/undo is not available over ACP in this version; run `garuda undo` in a terminal.",
		"/model gpt":   "/model is not available over ACP in this version; run `garuda setup` in a terminal.",
		"/setup":       "/setup is not available over ACP in this version; run `garuda setup` in a terminal.",
		"/status":      "/status is not available over ACP in this version; run `garuda doctor` in a terminal.",
		"/doctor":      "/doctor is not available over ACP in this version; run `garuda doctor` in a terminal.",
		"/permissions": "/permissions is not available over ACP in this version; run `garuda trust` in a terminal.",
		"/trust":       "/trust is not available over ACP in this version; run `garuda trust` in a terminal.",
		"/diff":        "/diff is not available over ACP in this version.",
		"/compact":     "/compact is not available over ACP in this version.",
		"/clear":       "/clear is not available over ACP in this version.",
		"/quit":        "/quit is not available over ACP in this version.",
		"/plan":        "/plan is not a command over ACP; choose the Plan mode in the editor's mode selector.",
	}
	for text, want := range cases {
		r := s.Resolve(text)
		if r.Kind != KindMessage || r.Message != want || r.Prompt != "" || r.Command != nil {
			t.Errorf("Resolve(%q) = %+v, want message %q", text, r, want)
		}
	}
	for _, name := range []string{"diff", "compact", "help", "clear", "cost", "init", "review", "mcp", "exit", "config",
		"memory", "resume", "sessions"} {
		if r := s.Resolve("/" + name); r.Kind != KindMessage || r.Prompt != "" {
			t.Errorf("/%s = %+v, want a message", name, r)
		}
	}
}

func TestResolveHelp(t *testing.T) {
	r := testSet(t).Resolve("/help")
	if r.Kind != KindMessage {
		t.Fatalf("/help = %+v", r)
	}
	for _, want := range []string{"Custom commands:", "/hello <who> — Say hello (.claude/commands/hello.md)", "/a:b",
		"/mine — Mine ($GARUDA_HOME/commands/mine.md)", "Skills:", "/pdf — Work with PDFs", "not available over ACP in this version"} {
		if !strings.Contains(r.Message, want) {
			t.Errorf("/help lacks %q:\n%s", want, r.Message)
		}
	}
	empty := mustLoad(t, nil, nil).Resolve("/help")
	if !strings.Contains(empty.Message, "No custom commands or skills") {
		t.Errorf("/help with nothing: %q", empty.Message)
	}
}

// A name that is no command goes to the model; its close matches (edit distance up to 2, or a prefix) are named
// in a message to show beside the answer, and a name with none gets no message.
func TestResolveUnknown(t *testing.T) {
	s := testSet(t)
	cases := map[string]string{
		"/helo":      "/helo is not a command, so it went to the model as text. Did you mean /hello or /help?",
		"/hellow":    "/hellow is not a command, so it went to the model as text. Did you mean /hello?",
		"/HELLO":     "/HELLO is not a command, so it went to the model as text. Did you mean /hello?",
		"/he":        "/he is not a command, so it went to the model as text. Did you mean /hello or /help?",
		"/fix":       "/fix is not a command, so it went to the model as text. Did you mean /fix-issue?",
		"/pfd":       "/pfd is not a command, so it went to the model as text. Did you mean /pdf?",
		"/a:c":       "/a:c is not a command, so it went to the model as text. Did you mean /a:b?",
		"/undoo":     "/undoo is not a command, so it went to the model as text. Did you mean /undo?",
		"/zzzzzzzzz": "",
		"/usr is almost full, what can I delete?": "",
	}
	for text, want := range cases {
		if r := s.Resolve(text); r.Kind != KindNotCommand || r.Message != want || r.Prompt != "" {
			t.Errorf("Resolve(%q) = %+v, want text for the model and message %q", text, r, want)
		}
	}
	long := "/" + strings.Repeat("x", 100000)
	if r := s.Resolve(long); r.Kind != KindNotCommand || r.Message != "" {
		t.Errorf("long name: %+v", r.Kind)
	}
}
