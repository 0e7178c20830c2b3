package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

func TestStartMapsEveryTool(t *testing.T) {
	cases := []struct {
		name, input string
		want        *execv1.Start
	}{
		{"read_file", `{"path":"a.go","offset":3,"limit":9}`, &execv1.Start{CallId: "c",
			Op: &execv1.Start_ReadFile{ReadFile: &execv1.ReadFile{Path: "a.go", Offset: 3, Limit: 9}}}},
		{"write_file", `{"path":"a.go","content":"x"}`, &execv1.Start{CallId: "c",
			Op: &execv1.Start_WriteFile{WriteFile: &execv1.WriteFile{Path: "a.go", Content: "x"}}}},
		{"edit_file", `{"path":"a.go","old_string":"a","new_string":"b","replace_all":true}`, &execv1.Start{CallId: "c",
			Op: &execv1.Start_EditFile{EditFile: &execv1.EditFile{Path: "a.go", OldString: "a", NewString: "b", ReplaceAll: true}}}},
		{"glob", `{"pattern":"**/*.go","path":"src"}`, &execv1.Start{CallId: "c",
			Op: &execv1.Start_Glob{Glob: &execv1.Glob{Pattern: "**/*.go", Path: "src"}}}},
		{"grep", `{"pattern":"x","path":"p","glob":"*.go","case_insensitive":true,"context":2,"output_mode":"content"}`,
			&execv1.Start{CallId: "c", Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "x", Path: "p", Glob: "*.go",
				CaseInsensitive: true, Context: 2, OutputMode: "content"}}}},
		{"bash", `{"command":"ls","timeout_ms":5,"description":"list"}`, &execv1.Start{CallId: "c",
			Op: &execv1.Start_Bash{Bash: &execv1.Bash{Command: "ls", TimeoutMs: 5, Description: "list"}}}},
		{"bash", `{"command":"ls","sandbox":true}`, &execv1.Start{CallId: "c", Op: &execv1.Start_Bash{Bash: &execv1.Bash{Command: "ls"}}}},
		{"bash", `{"command":"curl x","sandbox":false}`, &execv1.Start{CallId: "c",
			Op: &execv1.Start_Bash{Bash: &execv1.Bash{Command: "curl x", Unsandboxed: true}}}},
		{"skill", `{"name":"deploy"}`, &execv1.Start{CallId: "c", Op: &execv1.Start_LoadSkill{LoadSkill: &execv1.LoadSkill{Name: "deploy"}}}},
		{"web_fetch", `{"url":"https://go.dev/doc"}`, &execv1.Start{CallId: "c",
			Op: &execv1.Start_WebFetch{WebFetch: &execv1.WebFetch{Url: "https://go.dev/doc"}}}},
		{"process_manager", `{"action":"start","command":"npm run dev","description":"dev server"}`, &execv1.Start{CallId: "c",
			Op: &execv1.Start_ProcessManager{ProcessManager: &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_START,
				Command: "npm run dev", Description: "dev server"}}}},
		{"process_manager", `{"action":"read","id":"bg-1","since":42}`, &execv1.Start{CallId: "c",
			Op: &execv1.Start_ProcessManager{ProcessManager: &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_READ,
				Id: "bg-1", Since: 42}}}},
		{"process_manager", `{"action":"input","id":"bg-1","input":"y\n","close_input":true}`, &execv1.Start{CallId: "c",
			Op: &execv1.Start_ProcessManager{ProcessManager: &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_INPUT,
				Id: "bg-1", Input: "y\n", CloseInput: true}}}},
	}
	for _, c := range cases {
		got, err := Start("c", c.name, json.RawMessage(c.input))
		if err != nil {
			t.Errorf("%s %s: %v", c.name, c.input, err)
			continue
		}
		if !proto.Equal(got, c.want) {
			t.Errorf("%s %s:\n got %v\nwant %v", c.name, c.input, got, c.want)
		}
	}
}

func TestStartRefusesBadInput(t *testing.T) {
	for _, c := range []struct{ name, input, want string }{
		{"read_file", `{}`, `"path" is required`},
		{"bash", `{"command":""}`, `"command" is required`},
		{"edit_file", `{"path":1}`, `the input of edit_file is not valid: "path": want a string, got a number`},
		{"rm_rf", `{}`, `no tool named "rm_rf"`},
		// What the model and the editor read names the field in the schema's words, not Go's types.
		{"read_file", `{"path":"a","offset":"ten"}`, `"offset": want a whole number, got a string`},
		{"read_file", `{"path":"a","offset":1.5}`, `"offset": want a whole number, got a number 1.5`},
		{"read_file", `[1]`, `the input is a list, not an object`},
		{"read_file", `{"path":`, `the input is not valid JSON`},
		{"process_manager", `{"action":"start","command":["ls"]}`, `"command": want a string, got a list`},
	} {
		_, err := Start("c", c.name, json.RawMessage(c.input))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "Go ") ||
			strings.Contains(err.Error(), "json: ") {
			t.Errorf("%s %s: err %v, want %q", c.name, c.input, err, c.want)
		}
	}
	// A local tool's input (todo's entries) too.
	_, err := Decode(Todo, json.RawMessage(`{"todos":[{"content":"a","status":5}]}`))
	if err == nil || !strings.Contains(err.Error(), `"todos.status": want a string, got a number`) {
		t.Errorf("todo: %v", err)
	}
}

// scripted is a broker whose Call runs the test's script.

func TestSpecs(t *testing.T) {
	want := map[string][]string{
		ReadFile:  {"path", "offset", "limit"},
		WriteFile: {"path", "content"},
		EditFile:  {"path", "old_string", "new_string", "replace_all"},
		Glob:      {"pattern", "path"},
		Grep:      {"pattern", "path", "glob", "case_insensitive", "context", "output_mode"},
		Bash:      {"command", "timeout_ms", "description", "sandbox"},
		Skill:     {"name"},
		WebFetch:  {"url"},
		Todo:      {"todos"},
		Process:   {"action", "command", "id", "description", "since", "timeout_ms", "input", "close_input"},
		Subagent:  {"agent", "task"},
	}
	required := map[string][]string{
		ReadFile: {"path"}, WriteFile: {"path", "content"}, EditFile: {"path", "old_string", "new_string"},
		Glob: {"pattern"}, Grep: {"pattern"}, Bash: {"command"}, Skill: {"name"}, WebFetch: {"url"},
		Todo: {"todos"}, Process: {"action"}, Subagent: {"agent", "task"},
	}
	specs := Specs()
	if len(specs) != len(want) {
		t.Fatalf("%d tools, want %d", len(specs), len(want))
	}
	for _, sp := range specs {
		var schema struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
			Schema               string                     `json:"$schema"`
		}
		if err := json.Unmarshal(sp.InputSchema, &schema); err != nil {
			t.Errorf("%s: schema is not JSON: %v", sp.Name, err)
			continue
		}
		props, ok := want[sp.Name]
		if !ok || schema.Type != "object" || len(sp.Description) < 40 || schema.Schema != "" {
			t.Errorf("%s: unexpected tool, type %q, $schema %q, or a short description", sp.Name, schema.Type, schema.Schema)
		}
		if schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s: other properties are not refused", sp.Name)
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
		if strings.Join(schema.Required, ",") != strings.Join(required[sp.Name], ",") {
			t.Errorf("%s: required %v, want %v", sp.Name, schema.Required, required[sp.Name])
		}
		// The schema is the decoder's: each required property, left out, is what the decoder refuses.
		for _, r := range schema.Required {
			in := map[string]any{}
			for _, p := range schema.Required {
				if p != r {
					in[p] = "x"
				}
			}
			raw, _ := json.Marshal(in)
			if _, err := Start("c", sp.Name, raw); err == nil || !strings.Contains(err.Error(), `"`+r+`" is required`) {
				t.Errorf("%s without %s: %v", sp.Name, r, err)
			}
		}
	}
	var bash struct {
		Properties struct {
			Sandbox struct {
				Default *bool `json:"default"`
			} `json:"sandbox"`
			OutputMode struct {
				Enum []string `json:"enum"`
			} `json:"output_mode"`
		} `json:"properties"`
	}
	t5, _ := Lookup(Bash)
	_ = json.Unmarshal(t5.Schema(), &bash)
	// The model must opt out of the sandbox explicitly; an absent field means sandboxed.
	if bash.Properties.Sandbox.Default == nil || !*bash.Properties.Sandbox.Default {
		t.Errorf("bash.sandbox must default to true")
	}
	g, _ := Lookup(Grep)
	_ = json.Unmarshal(g.Schema(), &bash)
	if strings.Join(bash.Properties.OutputMode.Enum, ",") != "content,files,count" {
		t.Errorf("grep.output_mode enum = %v", bash.Properties.OutputMode.Enum)
	}
	// Each call returns its own slice: a caller cannot change another's specs.
	specs[0].Name = "changed"
	if Specs()[0].Name != ReadFile {
		t.Errorf("Specs shares its slice")
	}
}

// Every tool of the table but the local ones becomes a broker operation of its own; a local one has none.
func TestEveryToolIsABrokerOperation(t *testing.T) {
	seen := map[string]string{}
	for _, sp := range Specs() {
		if tl, _ := Lookup(sp.Name); tl.Local {
			if _, err := Start("c", sp.Name, json.RawMessage(`{"todos":[],"agent":"x","task":"y"}`)); err == nil ||
				!strings.Contains(err.Error(), "runs in the front end") {
				t.Errorf("%s is local, yet Start gives %v", sp.Name, err)
			}
			continue
		}
		var schema struct {
			Required []string `json:"required"`
		}
		json.Unmarshal(sp.InputSchema, &schema)
		in := map[string]any{}
		for _, r := range schema.Required {
			in[r] = "x"
		}
		raw, _ := json.Marshal(in)
		s, err := Start("c", sp.Name, raw)
		if err != nil {
			t.Fatalf("%s: %v", sp.Name, err)
		}
		op := s.ProtoReflect().WhichOneof(s.ProtoReflect().Descriptor().Oneofs().ByName("op"))
		if op == nil || s.GetCallId() != "c" {
			t.Fatalf("%s: no broker operation, or the call id is lost: %v", sp.Name, s)
		}
		if other, dup := seen[string(op.Name())]; dup {
			t.Errorf("%s and %s are the same broker operation %s", sp.Name, other, op.Name())
		}
		seen[string(op.Name())] = sp.Name
	}
}

func TestDescribe(t *testing.T) {
	for _, c := range []struct {
		name, input, title string
		kind               Kind
		path               string
		line               int
	}{
		{ReadFile, `{"path":"a.go","offset":7}`, "Read a.go", KindRead, "a.go", 7},
		{WriteFile, `{"path":"b.go","content":""}`, "Write b.go", KindEdit, "b.go", 0},
		{EditFile, `{"path":"c.go","old_string":"a","new_string":"b"}`, "Edit c.go", KindEdit, "c.go", 0},
		{Glob, `{"pattern":"**/*.go"}`, "Search **/*.go", KindSearch, "", 0},
		{Grep, `{"pattern":"x","path":"src"}`, "Search x", KindSearch, "src", 0},
		{Bash, `{"command":"go test ./..."}`, "$ go test ./...", KindExecute, "", 0},
		{Skill, `{"name":"release"}`, "Skill: release", KindOther, "", 0},
		{Todo, `{"todos":[]}`, "Update the plan", KindThink, "", 0},
		{Process, `{"action":"start","command":"npm run dev"}`, "$ npm run dev", KindExecute, "", 0},
		{Process, `{"action":"stop","id":"bg-1"}`, "Process bg-1: stop", KindExecute, "", 0},
		{Subagent, `{"agent":"explore","task":"x"}`, "Subagent: explore", KindThink, "", 0},
		{"mcp__db__query", `{"sql":"select 1"}`, "db/query", KindOther, "", 0},
		{ReadFile, `{"path":1}`, "Read ", KindRead, "", 0},
		{EditFile, `{"path":"d.go"}`, "Edit d.go", KindEdit, "d.go", 0},
		{"nope", `{}`, "nope", KindOther, "", 0},
	} {
		title, kind := Describe(c.name, json.RawMessage(c.input))
		loc, ok := Path(c.name, json.RawMessage(c.input))
		if title != c.title || kind != c.kind || loc.Path != c.path || loc.Line != c.line || ok != (c.path != "") {
			t.Errorf("%s %s: %q %s %+v %v; want %q %s %s:%d", c.name, c.input, title, kind, loc, ok, c.title, c.kind, c.path, c.line)
		}
	}
}

// web_fetch and the provider's web search show as the spec says: kind fetch, "Fetch <url>", "Search the web: <query>".
func TestNetworkTitles(t *testing.T) {
	for _, c := range []struct{ name, input, title string }{
		{WebFetch, `{"url":"https://go.dev/doc"}`, "Fetch https://go.dev/doc"},
		{WebSearch, `{"query":"acp spec"}`, "Search the web: acp spec"},
	} {
		if title, kind := Describe(c.name, json.RawMessage(c.input)); title != c.title || kind != KindFetch {
			t.Errorf("Describe(%s) = %q %q", c.name, title, kind)
		}
	}
	if _, ok := Lookup(WebSearch); ok {
		t.Error("web_search is in the table: it would be offered as a tool the broker runs")
	}
}
