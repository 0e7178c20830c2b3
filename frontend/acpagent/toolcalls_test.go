package acpagent

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/test/editor"
)

func TestToolCallTitleKindLocation(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "alpha\n")
	sid := e.newSession()
	e.fake.Push(tool("toolu_r", "read_file", `{"path":"a.txt"}`), model.TextStep("done"))
	e.promptEndsTurn(sid, "read a.txt")
	ups, _ := e.ed.Snapshot()
	tc, st, texts := editor.ToolCall(ups, "toolu_r")
	if tc == nil {
		t.Fatalf("no tool_call; updates:\n%s", e.ed.Dump())
	}
	if tc.Title != "Read a.txt" || tc.Kind != acp.ToolKindRead || tc.Status != acp.ToolCallStatusPending ||
		len(tc.Locations) != 1 || tc.Locations[0].Path != filepath.Join(e.root, "a.txt") || tc.RawInput == nil {
		t.Errorf("tool_call %+v", tc)
	}
	if st != acp.ToolCallStatusCompleted || !strings.Contains(strings.Join(texts, "\n"), "alpha") {
		t.Errorf("status %q, content %q", st, texts)
	}
}

func TestToolTitlesAndKinds(t *testing.T) {
	cases := []struct {
		name, input, title string
		kind               acp.ToolKind
	}{
		{"read_file", `{"path":"src/a.go"}`, "Read src/a.go", acp.ToolKindRead},
		{"glob", `{"pattern":"**/*.go"}`, "Search **/*.go", acp.ToolKindSearch},
		{"grep", `{"pattern":"func main"}`, "Search func main", acp.ToolKindSearch},
		{"write_file", `{"path":"a.txt","content":"x"}`, "Write a.txt", acp.ToolKindEdit},
		{"edit_file", `{"path":"a.txt"}`, "Edit a.txt", acp.ToolKindEdit},
		{"bash", `{"command":"sleep 60"}`, "$ sleep 60", acp.ToolKindExecute},
		{"bash", `{"command":"echo a\nrm -rf x"}`, "$ echo a ⏎ rm -rf x", acp.ToolKindExecute},
		{"bash", `{"command":"ls \u202e fdp"}`, `$ ls \u202e fdp`, acp.ToolKindExecute},
		{"mcp__github__create_issue", `{}`, "github/create_issue", acp.ToolKindOther},
		{"mystery", `{}`, "mystery", acp.ToolKindOther},
	}
	for _, c := range cases {
		title, kind := toolTitle(c.name, json.RawMessage(c.input))
		if title != c.title || kind != c.kind {
			t.Errorf("%s %s: got %q %q, want %q %q", c.name, c.input, title, kind, c.title, c.kind)
		}
	}
}

func TestToolLocationsAreAbsolute(t *testing.T) {
	locs := toolLocations("read_file", json.RawMessage(`{"path":"src/a.go","offset":12}`), "/proj")
	if len(locs) != 1 || locs[0].Path != "/proj/src/a.go" || locs[0].Line == nil || *locs[0].Line != 12 {
		t.Errorf("locations %+v", locs)
	}
	locs = toolLocations("edit_file", json.RawMessage(`{"path":"/abs/b.go"}`), "/proj")
	if len(locs) != 1 || locs[0].Path != "/abs/b.go" || locs[0].Line != nil {
		t.Errorf("locations %+v", locs)
	}
	if locs := toolLocations("bash", json.RawMessage(`{"command":"ls","path":"x"}`), "/proj"); locs != nil {
		t.Errorf("bash has locations %+v", locs)
	}
}
