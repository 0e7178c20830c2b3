package acpagent

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/test/editor"
)

func TestPromptContentBlocks(t *testing.T) {
	e := newEnv(t)
	e.write("src/a.go", "package a // ATTACHED\n")
	sid := e.newSession()
	e.fake.Push(model.TextStep("ok"))
	_, err := e.prompt(sid,
		acp.TextBlock("see"),
		acp.ResourceLinkBlock("a.go", "file://"+filepath.Join(e.root, "src/a.go")),
		acp.ResourceLinkBlock("hosts", "file:///etc/hosts"),
		acp.ResourceBlock(acp.EmbeddedResourceResource{
			TextResourceContents: &acp.TextResourceContents{Uri: "file:///x/sel.go", Text: "SELECTION"},
		}))
	if err != nil {
		t.Fatal(err)
	}
	heard := e.fake.Requests()[0].LastUserText()
	for _, want := range []string{"see @src/a.go", "ATTACHED", "hosts (file:///etc/hosts)", "```file:///x/sel.go\nSELECTION\n```"} {
		if !strings.Contains(heard, want) {
			t.Errorf("the model's prompt lacks %q:\n%s", want, heard)
		}
	}
}

func TestDeniedMentionIsNotAttached(t *testing.T) {
	e := newEnv(t)
	e.write("secret.txt", "THE-SECRET\n")
	e.write("open.txt", "OPEN-TEXT\n")
	// The user's policy denies reading secret.txt.
	e.writeHome("policy.json", `{"permissions":{"deny":["read_file(secret.txt)"]}}`)
	sid := e.newSession()
	e.fake.Push(model.TextStep("ok"))
	_, err := e.prompt(sid, acp.TextBlock("see"), acp.ResourceLinkBlock("secret", "file://"+filepath.Join(e.root, "secret.txt")),
		acp.ResourceLinkBlock("missing", "file://"+filepath.Join(e.root, "nope.txt")),
		acp.ResourceLinkBlock("open", "file://"+filepath.Join(e.root, "open.txt")))
	if err != nil {
		t.Fatal(err)
	}
	heard := e.fake.Requests()[0].LastUserText()
	if strings.Contains(heard, "THE-SECRET") {
		t.Errorf("a denied file was attached: %s", heard)
	}
	// Negative control: the file the policy allows is attached.
	if !strings.Contains(heard, "OPEN-TEXT") {
		t.Errorf("an allowed file was not attached: %s", heard)
	}
	ups, _ := e.ed.Snapshot()
	if m := editor.Messages(ups); !strings.Contains(m, "Garuda:") || !strings.Contains(m, "secret.txt") || !strings.Contains(m, "nope.txt") {
		t.Errorf("no notice for the files not attached: %q", m)
	}
}

func TestBuiltinCommandDoesNotReachTheModel(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	e.promptEndsTurn(sid, "/diff")
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("/diff reached the model (%d requests)", n)
	}
	ups, _ := e.ed.Snapshot()
	if m := editor.Messages(ups); !strings.Contains(m, "Garuda:") {
		t.Errorf("no answer to /diff: %q", m)
	}
}

// A prompt that starts with "/" but names no command is a question for the model; a close match is named after
// the answer, never instead of it. Control: a built-in still answers without the model.
func TestSlashTextReachesTheModel(t *testing.T) {
	e := newEnv(t)
	e.write(".garuda/commands/review.md", "Please review $ARGUMENTS.\n")
	sid := e.newSession()
	for _, c := range []struct{ text, notice string }{
		{"/usr is almost full, what can I delete?", ""},
		{"/reveiw main.go", "Garuda: /reveiw is not a command, so it went to the model as text. Did you mean /review?"},
	} {
		ups, _ := e.ed.Snapshot()
		seen := len(ups)
		before := len(e.fake.Requests())
		e.fake.Push(model.TextStep("the answer"))
		e.promptEndsTurn(sid, c.text)
		reqs := e.fake.Requests()
		if len(reqs) != before+1 || reqs[len(reqs)-1].LastUserText() != c.text {
			t.Errorf("%q did not reach the model as typed: %+v", c.text, reqs[before:])
		}
		ups, _ = e.ed.Snapshot()
		text := editor.Messages(ups[seen:])
		answer := strings.Index(text, "the answer")
		switch {
		case answer < 0:
			t.Errorf("%q: no answer in %q", c.text, text)
		case c.notice == "" && strings.Contains(text, "Garuda:"):
			t.Errorf("%q: a notice in %q", c.text, text)
		case c.notice != "" && strings.Index(text, c.notice) < answer:
			t.Errorf("%q: the notice %q is not after the answer in %q", c.text, c.notice, text)
		}
	}
	before := len(e.fake.Requests())
	e.promptOK(sid, "/undo")
	if n := len(e.fake.Requests()); n != before {
		t.Errorf("the built-in /undo reached the model")
	}
}

func TestPromptText(t *testing.T) {
	blocks := []acp.ContentBlock{
		acp.TextBlock("look at"),
		acp.ResourceLinkBlock("a.go", "file:///proj/src/a%20b.go"),
		acp.TextBlock(" and"),
		acp.ResourceLinkBlock("passwd", "file:///etc/passwd"),
		acp.ResourceLinkBlock("root", "file:///proj"),
		acp.ResourceLinkBlock("evil", "file:///proj/../etc/shadow"),
		acp.ResourceLinkBlock("web", "https://example.org/x"),
		acp.ResourceBlock(acp.EmbeddedResourceResource{
			TextResourceContents: &acp.TextResourceContents{Uri: "file:///proj/sel.go#L3", Text: "x := \"```\"\n"},
		}),
	}
	text, mentions := promptText(blocks, "/proj")
	want := "look at @src/a b.go and passwd (file:///etc/passwd) root (file:///proj) " +
		"evil (file:///proj/../etc/shadow) web (https://example.org/x)\n" +
		"````file:///proj/sel.go#L3\nx := \"```\"\n````\n"
	if text != want {
		t.Errorf("text:\n%q\nwant\n%q", text, want)
	}
	if len(mentions) != 1 || mentions[0].rel != "src/a b.go" {
		t.Errorf("mentions %+v", mentions)
	}
}

func TestCommandName(t *testing.T) {
	for in, want := range map[string]string{"/diff": "diff", "/review please": "review", "/a/b": "", "/": "", "hi /x": "", "/x\nmore": "x"} {
		got, ok := commandName(in)
		if got != want || ok != (want != "") {
			t.Errorf("commandName(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
}

func TestTextMentions(t *testing.T) {
	for text, want := range map[string][]string{
		"look at @src/main.go please":            {"src/main.go"},
		"@README.md, then @docs/a.md.":           {"README.md", "docs/a.md"},
		"mail me@example.com about @Override":    nil,
		"(@./x.txt) and @x.txt and @./x.txt":     {"./x.txt", "x.txt"},
		"@/etc/hosts is outside":                 {"/etc/hosts"},
		"no mentions here, just an @ sign":       nil,
		"read @docs/Übersicht.md and @笔记/计划.txt": {"docs/Übersicht.md", "笔记/计划.txt"},
		"@cafe\u0301/notes.md, decomposed":       {"cafe\u0301/notes.md"},
	} {
		if got := textMentions(text); !slices.Equal(got, want) {
			t.Errorf("textMentions(%q) = %q, want %q", text, got, want)
		}
	}
}

// Found by the conformance pass (what an editor relies on where the first tests did not look): it failed
// before its fix.
// An empty prompt is the editor's mistake, not an internal error: invalid params that say so, and nothing recorded
// or sent to the model.
func TestEmptyPromptIsInvalidParams(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	for name, blocks := range map[string][]acp.ContentBlock{
		"no blocks":  {},
		"empty text": {acp.TextBlock("")},
		"whitespace": {acp.TextBlock("  \n\t ")},
	} {
		_, err := e.prompt(sid, blocks...)
		if err == nil {
			t.Errorf("%s: the prompt succeeded", name)
			continue
		}
		if re := editor.RequestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, "the prompt is empty") {
			t.Errorf("%s: error %d %q, want -32602 saying the prompt is empty", name, re.Code, re.Message)
		}
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("an empty prompt reached the model (%d requests)", n)
	}
	e.fake.Push(model.TextStep("ok"))
	e.promptEndsTurn(sid, "hi") // the next prompt works
}

// Found by driving garuda acp as editors do: it failed before its fix.
// A text block right after a file link was glued to it, so the model read another path: [link a.go, "/help"] was
// "@a.go/help", [link a.go, "explain"] "@a.goexplain". Punctuation and the user's own space stay as they were.
func TestTextAfterALinkIsApartFromIt(t *testing.T) {
	link := acp.ResourceLinkBlock("a.go", "file:///proj/a.go")
	for _, c := range []struct {
		blocks []acp.ContentBlock
		want   string
	}{
		{[]acp.ContentBlock{link, acp.TextBlock("/help")}, "@a.go /help"},
		{[]acp.ContentBlock{link, acp.TextBlock("explain it")}, "@a.go explain it"},
		{[]acp.ContentBlock{acp.ImageBlock("AAAA", "image/png"), acp.TextBlock("what is this")},
			"(an image, not included: images are not supported in this version) what is this"},
		{[]acp.ContentBlock{link, acp.TextBlock(" and")}, "@a.go and"},
		{[]acp.ContentBlock{link, acp.TextBlock(", then")}, "@a.go, then"},
		{[]acp.ContentBlock{link, acp.TextBlock("\nnext")}, "@a.go\nnext"},
		{[]acp.ContentBlock{acp.TextBlock("see"), acp.TextBlock("-more")}, "see-more"}, // texts are the user's own
	} {
		if got, _ := promptText(c.blocks, "/proj"); got != c.want {
			t.Errorf("promptText = %q, want %q", got, c.want)
		}
	}
}
