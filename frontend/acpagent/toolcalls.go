package acpagent

import (
	"encoding/json"
	"path/filepath"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/agent"
	"github.com/garuda-dev/garuda/frontend/visible"
)

// toolInput is the union of the inputs the titles and locations need.
type toolInput struct {
	Path    string `json:"path"`
	Pattern string `json:"pattern"`
	Command string `json:"command"`
	Name    string `json:"name"`
	URL     string `json:"url"`
	Query   string `json:"query"`
	Offset  int    `json:"offset"`
	Line    int    `json:"line"`
}

// toolTitle returns the spec's title and kind of a tool call; the title is one visible line.
func toolTitle(name string, raw json.RawMessage) (string, acp.ToolKind) {
	var in toolInput
	_ = json.Unmarshal(raw, &in) // a bad input still gets a title: the tool's name
	title, kind := name, acp.ToolKindOther
	switch name {
	case agent.ToolReadFile:
		title, kind = "Read "+in.Path, acp.ToolKindRead
	case agent.ToolGlob, agent.ToolGrep:
		title, kind = "Search "+in.Pattern, acp.ToolKindSearch
	case agent.ToolWriteFile:
		title, kind = "Write "+in.Path, acp.ToolKindEdit
	case agent.ToolEditFile:
		title, kind = "Edit "+in.Path, acp.ToolKindEdit
	case agent.ToolBash, "process_manager":
		title, kind = "$ "+in.Command, acp.ToolKindExecute
	case "web_fetch":
		title, kind = "Fetch "+in.URL, acp.ToolKindFetch
	case "web_search":
		title, kind = "Search the web: "+in.Query, acp.ToolKindFetch
	case "todo":
		title, kind = "Update the plan", acp.ToolKindThink
	case agent.ToolSkill:
		title = "Skill: " + in.Name
	default:
		// MCP tools arrive as mcp__server__tool: shown as server/tool.
		if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
			if server, tool, ok := strings.Cut(rest, "__"); ok {
				title = server + "/" + tool
			}
		}
	}
	return visible.OneLine(title), kind
}

// toolLocations returns the absolute path (and the line, when the input has one) of a path tool.
func toolLocations(name string, raw json.RawMessage, root string) []acp.ToolCallLocation {
	var in toolInput
	if json.Unmarshal(raw, &in) != nil || in.Path == "" {
		return nil
	}
	switch name {
	case agent.ToolReadFile, agent.ToolWriteFile, agent.ToolEditFile, agent.ToolGlob, agent.ToolGrep:
	default:
		return nil
	}
	loc := acp.ToolCallLocation{Path: absPath(in.Path, root)}
	if line := max(in.Line, in.Offset); line > 0 {
		loc.Line = acp.Ptr(line)
	}
	return []acp.ToolCallLocation{loc}
}

// resultLocations turns the broker's locations into the editor's, absolute.
func resultLocations(locs []agent.Location, root string) []acp.ToolCallLocation {
	var out []acp.ToolCallLocation
	for _, l := range locs {
		loc := acp.ToolCallLocation{Path: absPath(l.Path, root)}
		if l.Line > 0 {
			loc.Line = acp.Ptr(l.Line)
		}
		out = append(out, loc)
	}
	return out
}

func absPath(p, root string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(root, p)
}
