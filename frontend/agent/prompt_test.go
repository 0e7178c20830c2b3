package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/frontend/model"
)

func TestToolSpecs(t *testing.T) {
	want := map[string][]string{
		ToolReadFile:  {"path", "offset", "limit"},
		ToolWriteFile: {"path", "content"},
		ToolEditFile:  {"path", "old_string", "new_string", "replace_all"},
		ToolGlob:      {"pattern", "path"},
		ToolGrep:      {"pattern", "path", "glob", "case_insensitive", "context", "output_mode"},
		ToolBash:      {"command", "timeout_ms", "description", "sandbox"},
		ToolSkill:     {"name"},
	}
	specs := ToolSpecs()
	if len(specs) != len(want) {
		t.Fatalf("%d tools, want %d", len(specs), len(want))
	}
	for _, sp := range specs {
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(sp.InputSchema, &schema); err != nil {
			t.Errorf("%s: schema is not JSON: %v", sp.Name, err)
			continue
		}
		props, ok := want[sp.Name]
		if !ok || schema.Type != "object" || len(sp.Description) < 40 {
			t.Errorf("%s: unexpected tool, type %q or short description", sp.Name, schema.Type)
		}
		if len(schema.Properties) != len(props) {
			t.Errorf("%s: properties %v, want %v", sp.Name, schema.Properties, props)
		}
		for _, p := range props {
			var prop struct {
				Description string `json:"description"`
			}
			if err := json.Unmarshal(schema.Properties[p], &prop); err != nil || prop.Description == "" {
				t.Errorf("%s.%s: missing, or without a description", sp.Name, p)
			}
		}
		for _, r := range schema.Required {
			if _, ok := schema.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", sp.Name, r)
			}
		}
	}
	var bash struct {
		Properties struct {
			Sandbox struct {
				Default *bool `json:"default"`
			} `json:"sandbox"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(specs[5].InputSchema, &bash)
	// The model must opt out of the sandbox explicitly; an absent field means sandboxed.
	if bash.Properties.Sandbox.Default == nil || !*bash.Properties.Sandbox.Default || strings.Contains(strings.Join(bash.Required, ","), "sandbox") {
		t.Errorf("bash.sandbox must default to true and be optional")
	}
	// Each call returns its own slice: a caller cannot change another's specs.
	specs[0].Name = "changed"
	if ToolSpecs()[0].Name != ToolReadFile {
		t.Errorf("ToolSpecs shares its slice")
	}
}

func TestSystemPrompt(t *testing.T) {
	info := PromptInfo{
		Root: "/home/dev/proj", Mode: ModeBuild, Date: "2026-12-02", Tools: ToolSpecs(),
		Instructions: "Run `make check` before you finish.\n", InstructionsFile: "AGENTS.md",
		Skills: []SkillInfo{{Name: "release", Description: "Cut a release.\nLong details."}},
	}
	build := SystemPrompt(info)
	for _, want := range []string{"Garuda", "/home/dev/proj", "2026-12-02", "Build mode", "From AGENTS.md", "Run `make check` before you finish.",
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
	if !strings.Contains(plan, "Plan mode") || !strings.Contains(plan, "write_file and edit_file are denied") || !strings.Contains(plan, "read-only") || strings.Contains(plan, "Build mode") {
		t.Errorf("plan prompt:\n%s", plan)
	}
	// An unknown mode is read as the stricter one.
	info.Mode = "yolo"
	if !strings.Contains(SystemPrompt(info), "Plan mode") {
		t.Errorf("an unknown mode is not plan")
	}

	// Only offered tools get rules; no instructions, no instructions section; no skill tool, no skills.
	bare := SystemPrompt(PromptInfo{Root: "/r", Mode: ModeBuild, Tools: []model.ToolSpec{ToolSpecs()[0], {Name: "mcp__db__query", Description: "Query the DB.\nMore."}},
		Skills: []SkillInfo{{Name: "release"}}})
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
