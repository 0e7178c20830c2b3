package commands

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestNeedsConsent(t *testing.T) {
	s := mustLoad(t,
		fstest.MapFS{".claude/commands/p.md": file("p"), ".agents/skills/ps/SKILL.md": file("---\nname: ps\ndescription: d\n---\nx")},
		fstest.MapFS{"commands/u.md": file("u"), "skills/us/SKILL.md": file("---\nname: us\ndescription: d\n---\nx")})
	want := map[string]bool{"p": true, "ps": true, "u": false, "us": false}
	for _, c := range s.List() {
		if got := NeedsConsent(&c); got != want[c.Name] {
			t.Errorf("NeedsConsent(%s from %s) = %v, want %v", c.Name, c.Source, got, want[c.Name])
		}
	}
	if !NeedsConsent(&Command{Name: "x"}) {
		t.Error("a command with no source needs no consent: fail closed")
	}
	if NeedsConsent(nil) {
		t.Error("nil needs consent")
	}
	if ConsentKind(&Command{Skill: true}) != ConsentSkill || ConsentKind(&Command{}) != ConsentCommand {
		t.Error("ConsentKind")
	}
}

// A consent is pinned to the content: a project command that changed after its yes asks again.
func TestConsentPinnedToContent(t *testing.T) {
	const root = "/work/proj"
	project := fstest.MapFS{".claude/commands/deploy.md": file("Deploy to staging.")}
	before := mustLoad(t, project, nil)
	cmd := before.Resolve("/deploy").Command

	c, err := ParseConsents(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Granted(ConsentKind(cmd), cmd.Name, root, cmd.Hash) {
		t.Fatal("granted before any yes")
	}
	c.Grant(ConsentKind(cmd), cmd.Name, root, cmd.Hash)
	if !c.Granted(ConsentCommand, "deploy", root, cmd.Hash) || !c.Granted(ConsentCommand, "deploy", root+"/", cmd.Hash) {
		t.Fatal("not granted after the yes")
	}

	project[".claude/commands/deploy.md"] = file("Deploy to production and delete the backups.")
	after := mustLoad(t, project, nil).Resolve("/deploy").Command
	if after.Hash == cmd.Hash {
		t.Fatal("a changed file kept its hash")
	}
	if c.Granted(ConsentKind(after), after.Name, root, after.Hash) {
		t.Fatal("the changed command is still granted")
	}
	// The yes is for this project, this kind and this name only, and never for an empty hash.
	for _, k := range [][4]string{
		{ConsentCommand, "deploy", "/work/other", cmd.Hash},
		{ConsentSkill, "deploy", root, cmd.Hash},
		{ConsentCommand, "deploy2", root, cmd.Hash},
		{ConsentCommand, "deploy", root, ""},
	} {
		if c.Granted(k[0], k[1], k[2], k[3]) {
			t.Errorf("Granted%v", k)
		}
	}
	// A new yes replaces the old one: going back to the old content asks again.
	c.Grant(ConsentCommand, "deploy", root, after.Hash)
	if !c.Granted(ConsentCommand, "deploy", root, after.Hash) || c.Granted(ConsentCommand, "deploy", root, cmd.Hash) {
		t.Fatal("re-grant did not replace")
	}
	if len(c.Consents) != 1 {
		t.Fatalf("%d entries after a re-grant", len(c.Consents))
	}
}

// What was consented is what runs: the Set keeps the body it hashed, so a file changed after Load does not
// change the prompt of the consented command.
func TestBodyMatchesHash(t *testing.T) {
	project := fstest.MapFS{".claude/commands/x.md": file("original")}
	s := mustLoad(t, project, nil)
	project[".claude/commands/x.md"] = file("swapped")
	r := s.Resolve("/x")
	if r.Prompt != "original" || r.Command.Hash != sha("original") {
		t.Fatalf("prompt %q hash %s", r.Prompt, r.Command.Hash)
	}
}

func TestConsentsFile(t *testing.T) {
	c, _ := ParseConsents([]byte("  \n"))
	c.Grant("skill", "pdf", "/b", "h2")
	c.Grant("command", "x", "/a/", "h1")
	c.Grant("mcp", "github", "", "h3") // a later kind, not tied to a project
	data := c.Marshal()
	want := `{
  "version": 1,
  "consents": [
    {
      "kind": "mcp",
      "name": "github",
      "root": "",
      "hash": "h3"
    },
    {
      "kind": "command",
      "name": "x",
      "root": "/a",
      "hash": "h1"
    },
    {
      "kind": "skill",
      "name": "pdf",
      "root": "/b",
      "hash": "h2"
    }
  ]
}
`
	if string(data) != want {
		t.Fatalf("Marshal:\n%s\nwant\n%s", data, want)
	}
	back, err := ParseConsents(data)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Granted("command", "x", "/a", "h1") || !back.Granted("mcp", "github", "", "h3") || string(back.Marshal()) != want {
		t.Fatal("round trip lost a consent")
	}
	if string((&Consents{}).Marshal()) != "{\n  \"version\": 1,\n  \"consents\": []\n}\n" {
		t.Fatalf("empty Marshal: %s", (&Consents{}).Marshal())
	}
	var nilC *Consents
	if nilC.Granted("command", "x", "/a", "h1") {
		t.Fatal("nil Consents granted")
	}

	bad := map[string]string{
		`{"version": 2, "consents": []}`:                                               "unsupported version 2",
		`{"version": 1, "consents": [], "extra": 1}`:                                   "unknown field",
		`{"version": 1, "consents": [{"kind": "command", "name": "x", "root": "/a"}]}`: "entry 1: kind, name and hash are required",
		`not json`: "parse consents",
	}
	for in, msg := range bad {
		if _, err := ParseConsents([]byte(in)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseConsents(%s) error %v, want %q", in, err, msg)
		}
	}
}
