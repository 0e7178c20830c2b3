package agent

import (
	"encoding/json"

	"github.com/garuda-dev/garuda/frontend/model"
)

// Names of Garuda's built-in tools.
const (
	ToolReadFile  = "read_file"
	ToolWriteFile = "write_file"
	ToolEditFile  = "edit_file"
	ToolGlob      = "glob"
	ToolGrep      = "grep"
	ToolBash      = "bash"
	ToolSkill     = "skill"
)

// ToolSpecs returns the model-facing schemas of the built-in tools, in a fixed order. Each call returns a new slice.
func ToolSpecs() []model.ToolSpec {
	return []model.ToolSpec{
		{
			Name: ToolReadFile,
			Description: "Read a text file. The result shows its lines numbered like `cat -n`, from line `offset` " +
				"(1-based, default 1), at most `limit` lines (default 2000); very long lines are cut, and a note says " +
				"how to read on when the file has more. Read a file before you edit it. Several read_file, glob and " +
				"grep calls in one answer run in parallel.",
			InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file to read: a path relative to the project root, or absolute."},
    "offset": {"type": "integer", "minimum": 1, "description": "The first line to show, 1-based. Default 1."},
    "limit": {"type": "integer", "minimum": 1, "description": "How many lines to show. Default 2000."}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
		},
		{
			Name: ToolWriteFile,
			Description: "Create a file, or replace the whole content of one. Prefer edit_file to change part of an " +
				"existing file, and read a file before you replace it. The user may be asked to approve the write; " +
				"a denied write is not done. Missing parent folders are created.",
			InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file to write: a path relative to the project root, or absolute."},
    "content": {"type": "string", "description": "The complete new content of the file."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`),
		},
		{
			Name: ToolEditFile,
			Description: "Replace exact text in a file. `old_string` must occur exactly once in the file (include " +
				"enough surrounding lines to make it unique), unless `replace_all` is true. Copy the text exactly as " +
				"read_file shows it, without the line-number prefix, keeping indentation. The user may be asked to " +
				"approve the edit; a denied edit is not done.",
			InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file to edit: a path relative to the project root, or absolute."},
    "old_string": {"type": "string", "description": "The exact text to replace."},
    "new_string": {"type": "string", "description": "The text to put in its place; must differ from old_string."},
    "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence of old_string instead of exactly one."}
  },
  "required": ["path", "old_string", "new_string"],
  "additionalProperties": false
}`),
		},
		{
			Name: ToolGlob,
			Description: "Find files by name pattern, newest first. `**` matches any number of folders and {a,b} " +
				"alternatives, e.g. \"**/*.go\" or \"src/**/*.{ts,tsx}\". Files ignored by .gitignore and the .git " +
				"folder are left out. Use this instead of find or ls in bash.",
			InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The pattern, relative to path."},
    "path": {"type": "string", "description": "The folder to search in. Default: the project root."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`),
		},
		{
			Name: ToolGrep,
			Description: "Search file contents with a regular expression (Go RE2 syntax: no backreferences or " +
				"lookaround). Files ignored by .gitignore are left out. output_mode \"files\" (the default) lists the " +
				"matching files, \"content\" shows matching lines as path:line:text (with `context` lines around " +
				"them), \"count\" the matches per file. Use this instead of grep or rg in bash.",
			InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The regular expression to search for."},
    "path": {"type": "string", "description": "A file or folder to search in. Default: the project root."},
    "glob": {"type": "string", "description": "Only search files whose name matches this pattern, e.g. \"*.go\" or \"src/**/*.ts\"."},
    "case_insensitive": {"type": "boolean", "default": false, "description": "Ignore case."},
    "context": {"type": "integer", "minimum": 0, "description": "Lines of context before and after each match (output_mode content)."},
    "output_mode": {"type": "string", "enum": ["content", "files", "count"], "default": "files", "description": "What to show: matching lines, matching files, or counts."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`),
		},
		{
			Name: ToolBash,
			Description: "Run a shell command in the project root with bash. By default it runs in Garuda's sandbox: " +
				"no network, writes only inside the project and a private temporary folder (none in plan mode), " +
				"protected paths such as .git/hooks read-only. Output (stdout and stderr) is returned, with the exit " +
				"status. Use read_file, glob, grep, edit_file and write_file for files, not cat, find, sed or echo. " +
				"If a command fails only because of the sandbox (it needs the network or a path outside the " +
				"project), you may run it again with sandbox: false: that asks the user, who may refuse.",
			InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The command line, run by bash."},
    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 600000, "description": "Stop the command after this many milliseconds. Default 120000, at most 600000."},
    "description": {"type": "string", "description": "What the command does, in a few words, shown to the user."},
    "sandbox": {"type": "boolean", "default": true, "description": "Run in the sandbox (the default). false asks the user to run the command outside it, with the network and the whole filesystem: only when the sandbox stopped it and the command is needed."}
  },
  "required": ["command"],
  "additionalProperties": false
}`),
		},
		{
			Name: ToolSkill,
			Description: "Load a skill: instructions for a kind of task, written by the user or the project. The " +
				"available skills are listed in the system prompt; load one when the task matches its description, " +
				"then follow it.",
			InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "name": {"type": "string", "description": "The skill's name, as listed."}
  },
  "required": ["name"],
  "additionalProperties": false
}`),
		},
	}
}
