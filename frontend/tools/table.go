package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/invopop/jsonschema"

	"github.com/garuda-dev/garuda/frontend/model"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Names of Garuda's built-in tools.
const (
	ReadFile  = "read_file"
	WriteFile = "write_file"
	EditFile  = "edit_file"
	Glob      = "glob"
	Grep      = "grep"
	Bash      = "bash"
	Skill     = "skill"
	WebFetch  = "web_fetch"
	Todo      = "todo"
	Process   = "process_manager"
	Subagent  = "subagent"
	WebSearch = "web_search" // the provider's server-side search (Anthropic): offered by the model client, shown here
)

// Kind is how an editor shows a tool call: ACP's tool kinds.
type Kind string

const (
	KindRead    Kind = "read"
	KindEdit    Kind = "edit"
	KindSearch  Kind = "search"
	KindExecute Kind = "execute"
	KindThink   Kind = "think"
	KindFetch   Kind = "fetch"
	KindOther   Kind = "other"
)

// Tool is one entry of the table: everything the front end knows of a tool is here, so a tool is added in one
// place. Its input schema is derived from the struct its input is decoded into, so the two cannot disagree.
type Tool struct {
	Name        string
	Description string // for the model
	Rule        string // its one line in the system prompt's list of tools
	Kind        Kind
	ReadOnly    bool // calls may run in parallel with other read-only calls of the same step
	// Local tools run in the front end and touch nothing the broker guards (the plan; a subagent, whose own calls go
	// to the broker): they have no broker operation, and Start refuses them.
	Local bool

	input  reflect.Type
	decode func(json.RawMessage) (any, error) // strict: the input must fit the schema
	parse  func(json.RawMessage) any          // lenient, for titles and locations: what fits is read
	title  func(any) string
	path   func(any) (path string, line int) // the file it is about, if any
	start  func(any) *execv1.Start
}

// Location is a file a call is about, and its line when known (else 0).
type Location struct {
	Path string
	Line int
}

// define makes a table entry for a tool whose input decodes into In: title, path and start see the decoded
// input.
func define[In any](t Tool, title func(*In) string, path func(*In) (string, int), start func(*In) *execv1.Start) Tool {
	t.input = reflect.TypeFor[In]()
	t.decode = func(raw json.RawMessage) (any, error) {
		in := new(In)
		if err := decodeInput(raw, in, t.input); err != nil {
			return nil, err
		}
		return in, nil
	}
	t.parse = func(raw json.RawMessage) any {
		in := new(In)
		_ = json.Unmarshal(raw, in) // a bad input still gets what can be read of it
		return in
	}
	t.title = func(v any) string { return title(v.(*In)) }
	if path != nil {
		t.path = func(v any) (string, int) { return path(v.(*In)) }
	}
	if start != nil {
		t.start = func(v any) *execv1.Start { return start(v.(*In)) }
	}
	return t
}

type readFileInput struct {
	Path   string `json:"path" jsonschema:"minLength=1" jsonschema_description:"The file to read: a path relative to the project root, or absolute."`
	Offset int32  `json:"offset,omitempty" jsonschema:"minimum=1" jsonschema_description:"The first line to show, 1-based. Default 1."`
	Limit  int32  `json:"limit,omitempty" jsonschema:"minimum=1" jsonschema_description:"How many lines to show. Default 2000."`
}

type writeFileInput struct {
	Path    string `json:"path" jsonschema:"minLength=1" jsonschema_description:"The file to write: a path relative to the project root, or absolute."`
	Content string `json:"content" jsonschema_description:"The complete new content of the file."`
}

type editFileInput struct {
	Path       string `json:"path" jsonschema:"minLength=1" jsonschema_description:"The file to edit: a path relative to the project root, or absolute."`
	OldString  string `json:"old_string" jsonschema:"minLength=1" jsonschema_description:"The exact text to replace."`
	NewString  string `json:"new_string" jsonschema_description:"The text to put in its place; must differ from old_string."`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"default=false" jsonschema_description:"Replace every occurrence of old_string instead of exactly one."`
}

type globInput struct {
	Pattern string `json:"pattern" jsonschema:"minLength=1" jsonschema_description:"The pattern, relative to path."`
	Path    string `json:"path,omitempty" jsonschema_description:"The folder to search in. Default: the project root."`
}

type grepInput struct {
	Pattern         string `json:"pattern" jsonschema:"minLength=1" jsonschema_description:"The regular expression to search for."`
	Path            string `json:"path,omitempty" jsonschema_description:"A file or folder to search in. Default: the project root."`
	Glob            string `json:"glob,omitempty" jsonschema_description:"Only search files whose name matches this pattern, e.g. \"*.go\" or \"src/**/*.ts\"."`
	CaseInsensitive bool   `json:"case_insensitive,omitempty" jsonschema:"default=false" jsonschema_description:"Ignore case."`
	Context         int32  `json:"context,omitempty" jsonschema:"minimum=0" jsonschema_description:"Lines of context before and after each match (output_mode content)."`
	OutputMode      string `json:"output_mode,omitempty" jsonschema:"enum=content,enum=files,enum=count,default=files" jsonschema_description:"What to show: matching lines, matching files, or counts."`
}

type bashInput struct {
	Command     string `json:"command" jsonschema:"minLength=1" jsonschema_description:"The command line, run by bash."`
	TimeoutMS   int32  `json:"timeout_ms,omitempty" jsonschema:"minimum=1,maximum=600000" jsonschema_description:"Stop the command after this many milliseconds. Default 120000, at most 600000."`
	Description string `json:"description,omitempty" jsonschema_description:"What the command does, in a few words, shown to the user."`
	Sandbox     *bool  `json:"sandbox,omitempty" jsonschema:"default=true" jsonschema_description:"Run in the sandbox (the default). false asks the user to run the command outside it, with the network and the whole filesystem: only when the sandbox stopped it and the command is needed."`
}

type webFetchInput struct {
	URL string `json:"url" jsonschema:"minLength=1" jsonschema_description:"The http or https URL to fetch."`
}

type processInput struct {
	Action      string `json:"action" jsonschema:"enum=start,enum=list,enum=read,enum=wait,enum=input,enum=stop" jsonschema_description:"start a command in the background; list the session's processes; read the output of one since a mark; wait for one to end; input: write to its standard input; stop one."`
	Command     string `json:"command,omitempty" jsonschema_description:"start: the command line, run by bash in the sandbox."`
	ID          string `json:"id,omitempty" jsonschema_description:"read, wait, input, stop: the process's id, from start's result."`
	Description string `json:"description,omitempty" jsonschema_description:"start: what the command does, in a few words, shown to the user."`
	Since       int64  `json:"since,omitempty" jsonschema:"minimum=0" jsonschema_description:"read, wait: show the output from this mark on (0: from the start); each read gives the next mark."`
	TimeoutMS   int32  `json:"timeout_ms,omitempty" jsonschema:"minimum=1,maximum=600000" jsonschema_description:"wait: how long to wait for the end, in milliseconds. Default 30000."`
	Input       string `json:"input,omitempty" jsonschema_description:"input: the text to write to the process's standard input (add a newline where it reads lines)."`
	CloseInput  bool   `json:"close_input,omitempty" jsonschema:"default=false" jsonschema_description:"input: close its standard input after the text."`
}

var processActions = map[string]execv1.ProcessAction{
	"start": execv1.ProcessAction_PROCESS_ACTION_START, "list": execv1.ProcessAction_PROCESS_ACTION_LIST,
	"read": execv1.ProcessAction_PROCESS_ACTION_READ, "wait": execv1.ProcessAction_PROCESS_ACTION_WAIT,
	"input": execv1.ProcessAction_PROCESS_ACTION_INPUT, "stop": execv1.ProcessAction_PROCESS_ACTION_STOP,
}

// processTitle is "$ <command>" for start, "Process <id>: <action>" for the others.
func processTitle(in *processInput) string {
	switch in.Action {
	case "start":
		return "$ " + in.Command
	case "list":
		return "Processes: list"
	}
	return "Process " + in.ID + ": " + in.Action
}

// SubagentInput is the input of subagent.
type SubagentInput struct {
	Agent string `json:"agent" jsonschema:"minLength=1" jsonschema_description:"The agent to run, as listed: explore, or a custom agent's name."`
	Task  string `json:"task" jsonschema:"minLength=1" jsonschema_description:"The whole task for the agent, with everything it needs to know: it sees nothing of this conversation."`
}

// TodoInput is the input of todo: the whole plan, every time.
type TodoInput struct {
	Todos []TodoEntry `json:"todos" jsonschema_description:"The whole plan, in order: every entry, also those already completed. Each call replaces the plan."`
}

// TodoEntry is one entry of the plan.
type TodoEntry struct {
	Content  string `json:"content" jsonschema:"minLength=1" jsonschema_description:"What the step does, in a few words."`
	Status   string `json:"status" jsonschema:"enum=pending,enum=in_progress,enum=completed" jsonschema_description:"pending, in_progress (one at a time) or completed."`
	Priority string `json:"priority,omitempty" jsonschema:"enum=high,enum=medium,enum=low,default=medium" jsonschema_description:"high, medium or low. Default medium."`
}

type skillInput struct {
	Name string `json:"name" jsonschema:"minLength=1" jsonschema_description:"The skill's name, as listed."`
}

// table is every built-in tool, in the order they are offered.
var table = []Tool{
	define(Tool{
		Name: ReadFile, Kind: KindRead, ReadOnly: true,
		Description: "Read a text file. The result shows its lines numbered like `cat -n`, from line `offset` " +
			"(1-based, default 1), at most `limit` lines (default 2000); very long lines are cut, and a note says " +
			"how to read on when the file has more. Read a file before you edit it. Several read_file, glob and " +
			"grep calls in one answer run in parallel.",
		Rule: "read_file: read a file, numbered lines; use offset and limit for long files.",
	}, func(in *readFileInput) string { return "Read " + in.Path },
		func(in *readFileInput) (string, int) { return in.Path, int(in.Offset) },
		func(in *readFileInput) *execv1.Start {
			return &execv1.Start{Op: &execv1.Start_ReadFile{ReadFile: &execv1.ReadFile{Path: in.Path, Offset: in.Offset, Limit: in.Limit}}}
		}),
	define(Tool{
		Name: WriteFile, Kind: KindEdit,
		Description: "Create a file, or replace the whole content of one. Prefer edit_file to change part of an " +
			"existing file, and read a file before you replace it. The user may be asked to approve the write; " +
			"a denied write is not done. Missing parent folders are created.",
		Rule: "write_file: create a file or replace all of it. For an existing file prefer edit_file.",
	}, func(in *writeFileInput) string { return "Write " + in.Path },
		func(in *writeFileInput) (string, int) { return in.Path, 0 },
		func(in *writeFileInput) *execv1.Start {
			return &execv1.Start{Op: &execv1.Start_WriteFile{WriteFile: &execv1.WriteFile{Path: in.Path, Content: in.Content}}}
		}),
	define(Tool{
		Name: EditFile, Kind: KindEdit,
		Description: "Replace exact text in a file. `old_string` must occur exactly once in the file (include " +
			"enough surrounding lines to make it unique), unless `replace_all` is true. Copy the text exactly as " +
			"read_file shows it, without the line-number prefix, keeping indentation. The user may be asked to " +
			"approve the edit; a denied edit is not done.",
		Rule: "edit_file: replace exact text; old_string must be unique in the file unless replace_all. Read the " +
			"file first and copy the text exactly, without line numbers.",
	}, func(in *editFileInput) string { return "Edit " + in.Path },
		func(in *editFileInput) (string, int) { return in.Path, 0 },
		func(in *editFileInput) *execv1.Start {
			return &execv1.Start{Op: &execv1.Start_EditFile{EditFile: &execv1.EditFile{Path: in.Path, OldString: in.OldString,
				NewString: in.NewString, ReplaceAll: in.ReplaceAll}}}
		}),
	define(Tool{
		Name: Glob, Kind: KindSearch, ReadOnly: true,
		Description: "Find files by name pattern, newest first. `**` matches any number of folders and {a,b} " +
			"alternatives, e.g. \"**/*.go\" or \"src/**/*.{ts,tsx}\". Files ignored by .gitignore and the .git " +
			"folder are left out. Use this instead of find or ls in bash.",
		Rule: "glob: find files by name pattern (** for any folders).",
	}, func(in *globInput) string { return "Search " + in.Pattern },
		func(in *globInput) (string, int) { return in.Path, 0 },
		func(in *globInput) *execv1.Start {
			return &execv1.Start{Op: &execv1.Start_Glob{Glob: &execv1.Glob{Pattern: in.Pattern, Path: in.Path}}}
		}),
	define(Tool{
		Name: Grep, Kind: KindSearch, ReadOnly: true,
		Description: "Search file contents with a regular expression (Go RE2 syntax: no backreferences or " +
			"lookaround). Files ignored by .gitignore are left out. output_mode \"files\" (the default) lists the " +
			"matching files, \"content\" shows matching lines as path:line:text (with `context` lines around " +
			"them), \"count\" the matches per file. Use this instead of grep or rg in bash.",
		Rule: "grep: search contents with a regular expression; use it, not grep or rg in bash.",
	}, func(in *grepInput) string { return "Search " + in.Pattern },
		func(in *grepInput) (string, int) { return in.Path, 0 },
		func(in *grepInput) *execv1.Start {
			return &execv1.Start{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: in.Pattern, Path: in.Path, Glob: in.Glob,
				CaseInsensitive: in.CaseInsensitive, Context: in.Context, OutputMode: in.OutputMode}}}
		}),
	define(Tool{
		Name: Bash, Kind: KindExecute,
		Description: "Run a shell command in the project root with bash. By default it runs in Garuda's sandbox: " +
			"the network only through Garuda's HTTP(S) proxy, to hosts the user allows (package registries by default; " +
			"others ask the user; a refused host answers 403 with the reason), writes only inside the project and a " +
			"private temporary folder (none in plan mode), " +
			"protected paths such as .git/hooks read-only. Output (stdout and stderr) is returned, with the exit " +
			"status. Use read_file, glob, grep, edit_file and write_file for files, not cat, find, sed or echo. " +
			"If a command fails only because of the sandbox (it needs the network or a path outside the " +
			"project), you may run it again with sandbox: false: that asks the user, who may refuse.",
		Rule: "bash: run a command in the project root, in the sandbox (network only through a proxy to allowed hosts, " +
			"package registries by default; writes only in the project and " +
			"a temporary folder). Use the file tools for files, not cat, sed, find or echo. If a command fails only " +
			"because of the sandbox and it is needed, run it again with sandbox: false: that asks the user.",
	}, func(in *bashInput) string { return "$ " + in.Command }, nil,
		func(in *bashInput) *execv1.Start {
			// Only an explicit false leaves the sandbox; the broker then always asks the user.
			unsandboxed := in.Sandbox != nil && !*in.Sandbox
			return &execv1.Start{Op: &execv1.Start_Bash{Bash: &execv1.Bash{Command: in.Command, TimeoutMs: in.TimeoutMS,
				Description: in.Description, Unsandboxed: unsandboxed}}}
		}),
	define(Tool{
		Name: WebFetch, Kind: KindFetch, ReadOnly: true,
		Description: "Fetch a web page or text file over http(s) and read it: HTML comes back as Markdown, other " +
			"text as it is; binaries are refused. Long pages are cut in the middle (the whole page is saved in the " +
			"session's output folder, which read_file can read). Hosts the user has not allowed ask first; local " +
			"and private addresses are refused unless the user's rules name the host.",
		Rule: "web_fetch: read a web page (as Markdown) or a text file from an http(s) URL.",
	}, func(in *webFetchInput) string { return "Fetch " + in.URL }, nil,
		func(in *webFetchInput) *execv1.Start {
			return &execv1.Start{Op: &execv1.Start_WebFetch{WebFetch: &execv1.WebFetch{Url: in.URL}}}
		}),
	define(Tool{
		Name: Skill, Kind: KindOther,
		Description: "Load a skill: instructions for a kind of task, written by the user or the project. The " +
			"available skills are listed in the system prompt; load one when the task matches its description, " +
			"then follow it.",
		Rule: "skill: load one of the skills listed below when the task matches it, then follow it.",
	}, func(in *skillInput) string { return "Skill: " + in.Name }, nil,
		func(in *skillInput) *execv1.Start {
			return &execv1.Start{Op: &execv1.Start_LoadSkill{LoadSkill: &execv1.LoadSkill{Name: in.Name}}}
		}),
	define(Tool{
		Name: Process, Kind: KindExecute,
		Description: "Run a long-lived command in the background: a dev server, a watcher, a long test suite. " +
			"action start runs `command` in the same sandbox as bash (no network out, writes only in the project " +
			"and a temporary folder) with no time limit, and answers at once with `id: <id>`; read shows its " +
			"output since a mark (`since`, 0 for all; each read gives the next mark; long output shows its head and " +
			"tail); wait waits for it to end (timeout_ms, default 30 s); input writes to its standard input; stop " +
			"ends it and everything it started; list shows the session's processes. Use bash for commands that end " +
			"by themselves. Every background process ends with the session; at most 8 run at once.",
		Rule: "process_manager: start a long-lived command (a server, a watcher) in the background, then read, wait, " +
			"input, stop or list; use bash for commands that end by themselves.",
	}, processTitle, nil,
		func(in *processInput) *execv1.Start {
			return &execv1.Start{Op: &execv1.Start_ProcessManager{ProcessManager: &execv1.ProcessManager{
				Action: processActions[in.Action], Command: in.Command, Id: in.ID, Description: in.Description,
				Since: in.Since, TimeoutMs: in.TimeoutMS, Input: in.Input, CloseInput: in.CloseInput}}}
		}),
	define(Tool{
		Name: Subagent, Kind: KindThink, Local: true,
		Description: "Hand a task to a subagent: a fresh model loop with its own context and a narrower set of " +
			"tools, which returns its final answer as the result. `explore` investigates read-only (read_file, glob, " +
			"grep, and bash with the project read-only): use it for broad searches and questions about the code " +
			"whose details you do not need in your own context. The task is all the subagent sees: say what to " +
			"find and what to report. The user's and the project's custom agents are named the same way; an unknown " +
			"name lists them.",
		Rule: "subagent: hand a self-contained task to a subagent (explore: read-only investigation); it returns " +
			"its final answer.",
	}, func(in *SubagentInput) string { return "Subagent: " + in.Agent }, nil, nil),
	define(Tool{
		Name: Todo, Kind: KindThink, Local: true,
		Description: "Keep a plan of the task, shown to the user as a list: send the whole list each time, with " +
			"each entry's status (pending, in_progress, completed) and priority (high, medium, low). Use it for a " +
			"task of three steps or more: write the plan first, mark one entry in_progress when you start it and " +
			"completed as soon as it is done. At most 100 entries.",
		Rule: "todo: keep the plan of a task of several steps; send the whole list, mark entries in_progress and " +
			"completed as you go.",
	}, func(in *TodoInput) string { return "Update the plan" }, nil, nil),
}

// Lookup finds a built-in tool by name.
func Lookup(name string) (*Tool, bool) {
	for i := range table {
		if table[i].Name == name {
			return &table[i], true
		}
	}
	return nil, false
}

var (
	specsOnce sync.Once
	specs     []model.ToolSpec
)

// Specs returns the model-facing specs of the built-in tools, in the table's order; each call returns a new slice.
// Their schemas are the ones Schema reflects, reflected when the table changes (schemas.go), not at each start.
func Specs() []model.ToolSpec {
	specsOnce.Do(func() {
		for i := range table {
			t := &table[i]
			specs = append(specs, model.ToolSpec{Name: t.Name, Description: t.Description,
				InputSchema: json.RawMessage(reflectedSchemas[t.Name])})
		}
	})
	return append([]model.ToolSpec(nil), specs...)
}

// Rules returns the system prompt's line for each of specs: the table's rule for a built-in tool, else the first
// line of its description.
func Rules(specs []model.ToolSpec) []string {
	out := make([]string, 0, len(specs))
	for _, s := range specs {
		if t, ok := Lookup(s.Name); ok {
			out = append(out, t.Rule)
			continue
		}
		d := strings.TrimSpace(s.Description)
		if i := strings.IndexByte(d, '\n'); i >= 0 {
			d = d[:i]
		}
		out = append(out, s.Name+": "+d)
	}
	return out
}

// Schema is the tool's input schema, reflected from its input struct: fields without omitempty are required,
// and no other property is allowed.
func (t *Tool) Schema() json.RawMessage {
	r := jsonschema.Reflector{Anonymous: true, DoNotReference: true, ExpandedStruct: true}
	s := r.ReflectFromType(t.input)
	s.Version = ""
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("the schema of %s: %v", t.Name, err)) // a struct of the table that cannot be reflected
	}
	return b
}

// decodeInput reads a tool input into in, and checks that every required field of the schema is present and, where
// the schema says minLength 1, not empty.
func decodeInput(raw json.RawMessage, in any, typ reflect.Type) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, in); err != nil {
		return inputError(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return err
	}
	for i := range typ.NumField() {
		tag := typ.Field(i).Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" || strings.Contains(opts, "omitempty") {
			continue
		}
		v, ok := fields[name]
		nonEmpty := strings.Contains(typ.Field(i).Tag.Get("jsonschema"), "minLength=1")
		if !ok || string(v) == "null" || nonEmpty && string(v) == `""` {
			return fmt.Errorf("%q is required", name)
		}
	}
	return nil
}

// inputError says what is wrong with a tool's input in the words of its schema (JSON's types, the field's name), not
// in Go's ("cannot unmarshal number into Go struct field readFileInput.path of type string"): the model and the
// editor read it.
func inputError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return fmt.Errorf("the input is %s, not an object", jsonValue(te.Value))
	case errors.As(err, &te):
		return fmt.Errorf("%q: want %s, got %s", te.Field, jsonWant(te.Type), jsonValue(te.Value))
	case errors.As(err, &se):
		return fmt.Errorf("the input is not valid JSON: %s", se.Error())
	}
	return err
}

// jsonValue names the JSON value encoding/json found ("number", "number 1.5", "array", …).
func jsonValue(v string) string {
	kind, rest, _ := strings.Cut(v, " ")
	switch kind {
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "bool":
		return "true or false"
	}
	return strings.TrimSpace("a " + kind + " " + rest)
}

// jsonWant names the JSON value a Go type takes.
func jsonWant(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16,
		reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

// Start turns a model tool call into the broker's typed request. An input that does not fit the tool's schema is
// an error the model reads.
func Start(callID, name string, input json.RawMessage) (*execv1.Start, error) {
	t, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("there is no tool named %q", name)
	}
	in, err := t.decode(input)
	if err != nil {
		return nil, fmt.Errorf("the input of %s is not valid: %w", name, err)
	}
	if t.start == nil {
		return nil, fmt.Errorf("%s runs in the front end, not in the broker", name)
	}
	s := t.start(in)
	s.CallId = callID
	return s, nil
}

// Decode reads the input of a local tool (its *Input type, e.g. *TodoInput); an input that does not fit the tool's
// schema is an error the model reads.
func Decode(name string, input json.RawMessage) (any, error) {
	t, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("there is no tool named %q", name)
	}
	in, err := t.decode(input)
	if err != nil {
		return nil, fmt.Errorf("the input of %s is not valid: %w", name, err)
	}
	return in, nil
}

// Describe returns the title and kind of a call as the editor shows it: the table's title of what can be read of
// its input; for a tool the table does not hold (an MCP tool, mcp__server__tool) server/tool, kind other.
func Describe(name string, input json.RawMessage) (string, Kind) {
	t, ok := Lookup(name)
	if !ok && name == WebSearch {
		// The provider's own tool: not in the table (the broker does not run it), shown as the spec says.
		var in struct {
			Query string `json:"query"`
		}
		_ = json.Unmarshal(input, &in)
		return "Search the web: " + in.Query, KindFetch
	}
	if !ok {
		if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
			if server, tool, ok := strings.Cut(rest, "__"); ok {
				return server + "/" + tool, KindOther
			}
		}
		return name, KindOther
	}
	return t.title(t.parse(input)), t.Kind
}

// Path returns the file a call is about, and the line when the input names one; ok is false for a tool without
// one, or an input that does not name it.
func Path(name string, input json.RawMessage) (Location, bool) {
	t, ok := Lookup(name)
	if !ok || t.path == nil {
		return Location{}, false
	}
	p, line := t.path(t.parse(input))
	return Location{Path: p, Line: line}, p != ""
}
