package acpagent

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/visible"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

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

func TestPromptText(t *testing.T) {
	blocks := []acp.ContentBlock{
		acp.TextBlock("look at"),
		acp.ResourceLinkBlock("a.go", "file:///proj/src/a%20b.go"),
		acp.TextBlock(" and"),
		acp.ResourceLinkBlock("passwd", "file:///etc/passwd"),
		acp.ResourceLinkBlock("root", "file:///proj"),
		acp.ResourceLinkBlock("evil", "file:///proj/../etc/shadow"),
		acp.ResourceLinkBlock("web", "https://example.org/x"),
		acp.ResourceBlock(acp.EmbeddedResourceResource{TextResourceContents: &acp.TextResourceContents{Uri: "file:///proj/sel.go#L3", Text: "x := \"```\"\n"}}),
	}
	text, mentions := promptText(blocks, "/proj")
	want := "look at @src/a b.go and passwd (file:///etc/passwd) root (file:///proj) evil (file:///proj/../etc/shadow) web (https://example.org/x)\n" +
		"````file:///proj/sel.go#L3\nx := \"```\"\n````\n"
	if text != want {
		t.Errorf("text:\n%q\nwant\n%q", text, want)
	}
	if len(mentions) != 1 || mentions[0].rel != "src/a b.go" {
		t.Errorf("mentions %+v", mentions)
	}
}

func TestCommandName(t *testing.T) {
	for in, want := range map[string]string{"/diff": "diff", "/review please": "review", "/a/b": "", "/": "", "hi /x": "", "/x\nmore": "x"} {
		got, ok := commandName(in)
		if got != want || ok != (want != "") {
			t.Errorf("commandName(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
}

func TestPermissionOptions(t *testing.T) {
	all := []execv1.Choice{execv1.Choice_CHOICE_ONCE, execv1.Choice_CHOICE_SESSION, execv1.Choice_CHOICE_DENY}
	opts, byID := permissionOptions(all)
	want := []acp.PermissionOption{
		{OptionId: "once", Kind: acp.PermissionOptionKindAllowOnce, Name: "Allow once"},
		{OptionId: "session", Kind: acp.PermissionOptionKindAllowAlways, Name: "Allow for this session"},
		{OptionId: "deny", Kind: acp.PermissionOptionKindRejectOnce, Name: "Deny"},
	}
	if len(opts) != 3 {
		t.Fatalf("options %+v", opts)
	}
	for i := range want {
		if opts[i].OptionId != want[i].OptionId || opts[i].Kind != want[i].Kind || opts[i].Name != want[i].Name {
			t.Errorf("option %d: %+v, want %+v", i, opts[i], want[i])
		}
	}
	if byID["session"] != execv1.Choice_CHOICE_SESSION || byID["once"] != execv1.Choice_CHOICE_ONCE {
		t.Errorf("byID %v", byID)
	}
	// A question without "session" (outside the sandbox, a protected path) offers the other two.
	opts, byID = permissionOptions([]execv1.Choice{execv1.Choice_CHOICE_ONCE, execv1.Choice_CHOICE_DENY})
	if len(opts) != 2 || opts[0].OptionId != "once" || opts[1].OptionId != "deny" {
		t.Errorf("options %+v", opts)
	}
	if _, ok := byID["session"]; ok {
		t.Error("session is answerable although not offered")
	}
}

func TestQuestionContentShowsHiddenCharacters(t *testing.T) {
	q := &execv1.Question{
		Title:   "Edit a.txt",
		Preview: "- hello\n+ hel\u202elo",
		Diff:    &execv1.Diff{Path: "a.txt", OldText: "hello\n", NewText: "hel\u202elo\n"},
	}
	content := questionContent(q, "/proj")
	if len(content) != 2 || content[0].Content == nil || content[1].Diff == nil {
		t.Fatalf("content %+v", content)
	}
	text := content[0].Content.Content.Text.Text
	if !strings.Contains(text, visible.Warning) || !strings.Contains(text, `hel\u202elo`) || strings.Contains(text, "\u202e") {
		t.Errorf("preview %q", text)
	}
	d := content[1].Diff
	if d.Path != "/proj/a.txt" || d.OldText == nil || *d.OldText != "hello\n" || d.NewText != `hel\u202elo`+"\n" {
		t.Errorf("diff %+v", d)
	}
	// Negative control: a plain preview gets no warning line.
	plain := questionContent(&execv1.Question{Preview: "+ hello"}, "/proj")
	if strings.Contains(plain[0].Content.Content.Text.Text, visible.Warning) {
		t.Error("warning on a plain preview")
	}
	// Without a diff (the broker sends none above 1 MiB: broker TestChangeDiff), only the preview goes.
	if c := questionContent(&execv1.Question{Preview: "p"}, "/"); len(c) != 1 {
		t.Errorf("a question without a diff: %d parts", len(c))
	}
}

func TestTextMentions(t *testing.T) {
	for text, want := range map[string][]string{
		"look at @src/main.go please":         {"src/main.go"},
		"@README.md, then @docs/a.md.":        {"README.md", "docs/a.md"},
		"mail me@example.com about @Override": nil,
		"(@./x.txt) and @x.txt and @./x.txt":  {"./x.txt", "x.txt"},
		"@/etc/hosts is outside":              {"/etc/hosts"},
		"no mentions here, just an @ sign":    nil,
	} {
		if got := textMentions(text); !slices.Equal(got, want) {
			t.Errorf("textMentions(%q) = %q, want %q", text, got, want)
		}
	}
}

// The answer to initialize is the spec's, false capabilities included, as the line an editor reads.
func TestInitializeLineIsTheSpecs(t *testing.T) {
	var buf bytes.Buffer
	h := newHookWriter(&buf)
	s := &server{opts: Options{Version: "9.9"}}
	res, _ := s.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: 1})
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": res})
	if !bytes.Contains(line, sdkCaps) {
		t.Fatalf("the SDK no longer writes %s; update sdkCaps:\n%s", sdkCaps, line)
	}
	h.Write(append(line, '\n'))
	var got struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"protocolVersion": float64(1),
		"agentInfo":       map[string]any{"name": "garuda", "title": "Garuda", "version": "9.9"},
		"agentCapabilities": map[string]any{
			"loadSession":         true,
			"promptCapabilities":  map[string]any{"image": false, "audio": false, "embeddedContext": true},
			"mcpCapabilities":     map[string]any{"http": true, "sse": true},
			"sessionCapabilities": map[string]any{"list": map[string]any{}, "resume": map[string]any{}, "close": map[string]any{}},
		},
		"authMethods": []any{},
	}
	if !reflect.DeepEqual(got.Result, want) {
		t.Fatalf("initialize answered\n%v\nwant\n%v", got.Result, want)
	}
}
