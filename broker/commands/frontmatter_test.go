package commands

import (
	"strings"
	"testing"
	"testing/fstest"
)

// The tolerant frontmatter reader: what users' files from other agents look like.
func TestFrontmatterValues(t *testing.T) {
	cases := []struct {
		name, src                         string
		desc, hint, model, tools, warning string
	}{
		{name: "plain", src: "---\ndescription: Run the tests\n---\nb", desc: "Run the tests"},
		{name: "colon in plain", src: "---\ndescription: Deploy: staging, then prod\n---\nb", desc: "Deploy: staging, then prod"},
		{name: "comment", src: "---\n# a comment\ndescription: x # trailing\n---\nb", desc: "x"},
		{name: "double quoted", src: "---\ndescription: \"say \\\"hi\\\" # not a comment\"\n---\nb", desc: `say "hi" # not a comment`},
		{name: "single quoted", src: "---\ndescription: 'it''s here'\n---\nb", desc: "it's here"},
		{name: "hint brackets", src: "---\nargument-hint: [pr-number] [priority]\n---\nb", hint: "[pr-number] [priority]", warning: ""},
		{name: "tools string", src: "---\nallowed-tools: Bash(git add:*), Bash(git status:*)\n---\nb",
			tools: "Bash(git add:*), Bash(git status:*)"},
		{name: "tools list", src: "---\nallowed-tools:\n  - Read\n  - \"Bash(go test:*)\"\n---\nb", tools: "Read, Bash(go test:*)"},
		{name: "tools flow", src: "---\nallowed-tools: [Read, 'Grep']\n---\nb", tools: "Read, Grep"},
		{name: "folded block", src: "---\ndescription: >\n  one\n  two\n\n  three\nmodel: m\n---\nb", desc: "one two three", model: "m"},
		{name: "literal block", src: "---\ndescription: |\n  one\n  two\n---\nb", desc: "one two"},
		{name: "multi-line plain", src: "---\ndescription: starts here\n  and goes on\n---\nb", desc: "starts here and goes on"},
		{name: "crlf and bom", src: "\uFEFF---\r\ndescription: win\r\n---\r\nb\r\n", desc: "win"},
		{name: "nested metadata ignored", src: "---\nmetadata:\n  author: x\n  version: \"1\"\ndescription: d\n---\nb", desc: "d"},
		{name: "unknown keys ignored", src: "---\nlicense: MIT\ndisable-model-invocation: true\ndescription: d\n---\nb", desc: "d"},
		{name: "dots close", src: "---\ndescription: d\n...\nb", desc: "d"},
		{name: "no frontmatter", src: "Just a body\n---\nnot a header", desc: ""},
		{name: "duplicate", src: "---\ndescription: first\ndescription: second\n---\nb", desc: "first",
			warning: "line 3: description given twice; the first is used"},
		{name: "text after quote", src: "---\ndescription: \"a\" b\n---\nb", warning: "line 2: description: text after the closing quote"},
		{name: "stray indent", src: "---\n  lost: x\ndescription: d\n---\nb", desc: "d", warning: "line 2: indented line without a key"},
		{name: "hint one bracket", src: "---\nargument-hint: [message]\n---\nb", hint: "[message]"},
		{name: "unterminated flow", src: "---\nallowed-tools: [a, b\n---\nb", tools: "[a, b"},
		{name: "mixed list", src: "---\nallowed-tools:\n  - a\n  b: c\n---\nb", warning: "line 2: allowed-tools: a list mixes items"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mustLoad(t, fstest.MapFS{".claude/commands/x.md": file(c.src)}, nil)
			got := find(t, s, "x")
			if got.Description != c.desc || got.ArgumentHint != c.hint || got.Model != c.model || got.AllowedTools != c.tools {
				t.Errorf("got desc %q hint %q model %q tools %q\nwant     %q      %q       %q       %q",
					got.Description, got.ArgumentHint, got.Model, got.AllowedTools, c.desc, c.hint, c.model, c.tools)
			}
			if c.warning == "" && got.Warning != "" {
				t.Errorf("unexpected warning %q", got.Warning)
			}
			if !strings.Contains(got.Warning, c.warning) {
				t.Errorf("warning %q, want it to contain %q", got.Warning, c.warning)
			}
		})
	}
}

func TestFrontmatterBody(t *testing.T) {
	s := mustLoad(t, fstest.MapFS{
		".claude/commands/x.md": file("---\ndescription: d\n---\n\nFirst line\n\n---\nafter a rule\n\n"),
		".claude/commands/y.md": file("  no header\n"),
	}, nil)
	if b := find(t, s, "x").Body; b != "First line\n\n---\nafter a rule" {
		t.Fatalf("body %q", b)
	}
	if b := find(t, s, "y").Body; b != "no header" {
		t.Fatalf("body %q", b)
	}
}
