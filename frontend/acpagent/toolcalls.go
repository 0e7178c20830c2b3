package acpagent

import (
	"encoding/json"
	"path/filepath"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/agent"
	"github.com/garuda-dev/garuda/frontend/tools"
	"github.com/garuda-dev/garuda/frontend/visible"
)

// toolTitle returns the spec's title and kind of a tool call (from the tool table); the title is one visible line.
func toolTitle(name string, raw json.RawMessage) (string, acp.ToolKind) {
	title, kind := tools.Describe(name, raw)
	return visible.OneLine(title), acp.ToolKind(kind)
}

// toolLocations returns the absolute path (and the line, when the input has one) of a path tool.
func toolLocations(name string, raw json.RawMessage, root string) []acp.ToolCallLocation {
	l, ok := tools.Path(name, raw)
	if !ok {
		return nil
	}
	loc := acp.ToolCallLocation{Path: absPath(l.Path, root)}
	if l.Line > 0 {
		loc.Line = acp.Ptr(l.Line)
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
