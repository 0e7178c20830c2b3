package policy

import "github.com/garuda-dev/garuda/internal/pathglob"

// The operations the broker decides, by name: the op of their audit records and, for the model's tools, the tool
// names of the settings grammar. This is the one list; the broker's operation table uses these names.
const (
	OpReadFile       = "read_file"
	OpWriteFile      = "write_file"
	OpEditFile       = "edit_file"
	OpGlob           = "glob"
	OpGrep           = "grep"
	OpBash           = "bash"
	OpAttachMention  = "attach_mention"
	OpResolveCommand = "resolve_command"
	OpSkill          = "skill"
	OpUndo           = "undo"
	OpWebFetch       = "web_fetch" // fetch one URL for the model (broker/ops_web.go)
	OpNetwork        = "network"   // a sandboxed command's connection through the broker's proxy; network(...) rules cover both
	OpHook           = "hook"      // a point of a turn at which hooks run, and each hook's run
	// OpProcessManager acts on background processes; its start is decided as bash (tool bash, kind command).
	OpProcessManager = "process_manager"
	// OpLoadAgent loads a custom agent for a subagent; a project's own agent is a consent, like a skill.
	OpLoadAgent   = "load_agent"
	OpMCPStart    = "mcp_start"    // starts the session's MCP servers, each after its consent
	OpMCPCall     = "mcp_call"     // a call of an MCP tool; its rules are mcp__server__tool (see ParseRule)
	OpWebSearch   = "web_search"   // the consent to offer the provider's server-side web search, once per session
	OpMCPResource = "mcp_resource" // a resource the user mentioned (@server:uri), covered by its server's consent
)

// Previewable reports whether the target of req, a write or edit that Decide answered with ask, may be opened and
// read to build its question: only where a read_file of that path needs no question, inside the project folder and
// not a protected path. Reading a target to show it counts as reading it: defends against a question (its diff,
// or a "found 0 times" instead of a question) that tells the model what a file it may not read holds.
func Previewable(req Request, st *State) bool {
	if st == nil || req.Kind != KindWrite && req.Kind != KindEdit {
		return false
	}
	if !inRoot(req.Path, st) || protectedAbs(req.Path, st) {
		return false
	}
	return Decide(Request{Kind: KindRead, Tool: OpReadFile, Path: req.Path}, st).Verdict == Allow
}

// Outside reports whether req names a path that is not below the project folder (under either of its names).
func Outside(req Request, st *State) bool {
	return req.Path != "" && st != nil && !inRoot(req.Path, st) && !(req.Path == st.Root || req.Path == st.RealRoot)
}

// ProtectedTarget reports whether req writes or edits a protected path (Protected, what the root's repositories
// point git at, a home's dot entries): what git, an editor or another tool runs later.
func ProtectedTarget(req Request, st *State) bool {
	return (req.Kind == KindWrite || req.Kind == KindEdit) && req.Path != "" && st != nil && protectedAbs(req.Path, st)
}

// inRoot reports whether p is below the project folder under either of its names (not the folder itself).
func inRoot(p string, st *State) bool {
	for _, root := range []string{st.Root, st.RealRoot} {
		if rel, in := pathglob.Within(root, p); in && rel != "" {
			return true
		}
	}
	return false
}
