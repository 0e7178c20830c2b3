package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/frontend/model"
)

// specs are three tools as the table would offer them, with schemas of the real ones' size (about 1,700 tokens in
// all: the compaction tests count on it), and their rules.
var specs = []model.ToolSpec{
	{Name: "read_file", Description: "Read a file.\nMore about reading.", InputSchema: schemaOfSize(2300)},
	{Name: "edit_file", Description: "Edit a file.", InputSchema: schemaOfSize(2300)},
	{Name: "bash", Description: "Run a command.", InputSchema: schemaOfSize(2300)},
}

func schemaOfSize(n int) json.RawMessage {
	return json.RawMessage(`{"type":"object","description":"` + strings.Repeat("x", n-40) + `"}`)
}

var rules = []string{"read_file: read a file, numbered lines.", "edit_file: replace exact text.",
	"bash: run a command; sandbox: false asks the user."}

func TestSystemPrompt(t *testing.T) {
	info := PromptInfo{
		Root: "/home/dev/proj", Mode: ModeBuild, Date: "2026-12-02", Tools: specs, ToolRules: rules,
		Instructions: "Run `make check` before you finish.\n", InstructionsFile: "AGENTS.md",
		Skills: []SkillInfo{{Name: "release", Description: "Cut a release.\nLong details."}},
	}
	build := SystemPrompt(info)
	for _, want := range []string{"Garuda", "/home/dev/proj", "2026-12-02", "Build mode", "From AGENTS.md",
		"Run `make check` before you finish.",
		"- release: Cut a release.\n", "edit_file:", "sandbox: false", "denied"} {
		if !strings.Contains(build, want) {
			t.Errorf("build prompt lacks %q", want)
		}
	}
	if strings.Contains(build, "Plan mode") || strings.Contains(build, "Long details") {
		t.Errorf("build prompt says plan mode, or a skill's whole description")
	}

	info.Mode = ModePlan
	plan := SystemPrompt(info)
	if !strings.Contains(plan, "Plan mode") || !strings.Contains(plan, "write_file and edit_file are denied") ||
		!strings.Contains(plan, "read-only") || strings.Contains(plan, "Build mode") {
		t.Errorf("plan prompt:\n%s", plan)
	}
	// An unknown mode is read as the stricter one.
	info.Mode = "yolo"
	if !strings.Contains(SystemPrompt(info), "Plan mode") {
		t.Errorf("an unknown mode is not plan")
	}

	// Only offered tools get rules, a tool without one its description's first line; no instructions, no
	// instructions section; no skills, no skills section.
	bare := SystemPrompt(PromptInfo{Root: "/r", Mode: ModeBuild, Tools: []model.ToolSpec{specs[0],
		{Name: "mcp__db__query", Description: "Query the DB.\nMore."}},
		ToolRules: rules[:1]})
	for _, absent := range []string{"- bash:", "- edit_file:", "Project instructions", "# Skills", "More."} {
		if strings.Contains(bare, absent) {
			t.Errorf("bare prompt has %q", absent)
		}
	}
	for _, want := range []string{"- read_file:", "- mcp__db__query: Query the DB.\n"} {
		if !strings.Contains(bare, want) {
			t.Errorf("bare prompt lacks %q", want)
		}
	}
}
