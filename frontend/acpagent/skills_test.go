package acpagent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/frontend/model"
)

// The skills the broker finds reach the model's system prompt, across the boundary (broker → OpenSession → front
// end → provider); a skill in a folder that a rule hides from reads does not (it would tell the model what the
// hidden file holds).
func TestSkillsReachTheSystemPrompt(t *testing.T) {
	e := newEnv(t)
	skill := func(dir, name, desc string) {
		p := filepath.Join(dir, name, "SKILL.md")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("---\nname: "+name+"\ndescription: "+desc+"\n---\nThe steps.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	skill(filepath.Join(e.home, "skills"), "release", "Cut a release of the project.")
	skill(filepath.Join(e.root, ".claude", "skills"), "review", "Review a change.")
	skill(filepath.Join(e.root, ".garuda", "skills"), "hidden", "SECRET-SKILL-TEXT")
	e.writeHome("settings.json", `{"permissions": {"deny": ["read_file(.garuda/**)"]}}`)
	sid := e.newSession()
	e.fake.Push(model.TextStep("ok"))
	e.promptOK(sid, "hello")
	sys := e.fake.Requests()[0].System
	for _, want := range []string{"# Skills", "- release: Cut a release of the project.", "- review: Review a change.",
		"- skill: load one of the skills"} {
		if !strings.Contains(sys, want) {
			t.Errorf("the system prompt lacks %q:\n%s", want, sys)
		}
	}
	if strings.Contains(sys, "SECRET-SKILL-TEXT") || strings.Contains(sys, "hidden") {
		t.Errorf("a skill from a folder a rule hides reached the model:\n%s", sys)
	}
}
