package acpagent

import (
	"context"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/frontend/model/fakeprovider"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
	"github.com/garuda-dev/garuda/test/editor"
)

// searchingModel is a fake provider that runs a web search itself whenever the request offers it.
type searchingModel struct{ *model.FakeClient }

func (searchingModel) SearchesWeb() bool { return true }

func (m searchingModel) Stream(ctx context.Context, req model.Request, h model.Handler) (*model.Response, error) {
	if sh, ok := h.(model.ServerToolHandler); ok && req.WebSearch {
		sh.ServerTool(model.ServerToolEvent{ID: "srvtoolu_1", Name: "web_search", Query: "garuda acp"})
		sh.ServerTool(model.ServerToolEvent{ID: "srvtoolu_1", Name: "web_search", Done: true, URLs: []string{"https://example.com/garuda"}})
	}
	return m.FakeClient.Stream(ctx, req, h)
}

// The web search consent is asked once per session, before the first model request; allowed, the search shows as
// a tool call of kind fetch, "Search the web: <query>", completed with its URLs. Denied, the tool is left out.
func TestWebSearchConsentAndEvents(t *testing.T) {
	for _, allow := range []bool{true, false} {
		e := newEnv(t, func(e *env, o *Options) {
			o.NewModel = func(*execv1.ModelSettings, string) (model.Client, error) { return searchingModel{e.fake}, nil }
		})
		if !allow {
			e.ed.Answer = editor.Always("deny")
		}
		e.fake.Push(model.TextStep("found it"), model.TextStep("again"))
		sid := e.newSession()
		e.promptOK(sid, "search the web for garuda")
		e.promptOK(sid, "and again")
		ups, perms := e.ed.Snapshot()
		if len(perms) != 1 || perms[0].ToolCall.Title == nil || !strings.Contains(*perms[0].ToolCall.Title, "Search the web") {
			t.Fatalf("allow=%v: want one consent question, got %+v", allow, perms)
		}
		reqs := e.fake.Requests()
		if len(reqs) != 2 || reqs[0].WebSearch != allow || reqs[1].WebSearch != allow {
			t.Fatalf("allow=%v: requests offered web search: %v %v", allow, reqs[0].WebSearch, reqs[1].WebSearch)
		}
		tc, st, texts := editor.ToolCall(ups, "srvtoolu_1")
		if !allow {
			if tc != nil {
				t.Errorf("denied, yet a search was shown: %+v", tc)
			}
			continue
		}
		if tc == nil || tc.Title != "Search the web: garuda acp" || tc.Kind != acp.ToolKindFetch || st != acp.ToolCallStatusCompleted ||
			len(texts) == 0 || texts[0] != "https://example.com/garuda" {
			t.Errorf("the search's tool call: %+v %v %q", tc, st, texts)
		}
	}
}

// searchingAnthropic is the real Anthropic client pointed at the fake provider, offering web search as Anthropic's
// own API does (the client offers it only at api.anthropic.com).
type searchingAnthropic struct{ model.Client }

func (searchingAnthropic) SearchesWeb() bool { return true }

// A web search's blocks stay in the conversation: the second turn's request, and a turn after session/load, send
// the first turn's server_tool_use and web_search_tool_result back as the provider sent them (its encrypted
// content included), as Anthropic's API requires.
func TestWebSearchBlocksKeptAcrossTurns(t *testing.T) {
	fp, err := fakeprovider.Serve("127.0.0.1:0", []fakeprovider.Turn{
		{Searches: []fakeprovider.Search{{ID: "srvtoolu_acp1", Query: "garuda acp", URLs: []string{"https://example.com/garuda"}}},
			Text: "Garuda speaks ACP."},
		{Text: "Yes."},
		{Text: "Still yes."},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer fp.Close()
	newModel := func(*execv1.ModelSettings, string) (model.Client, error) {
		return searchingAnthropic{model.NewAnthropic(model.ProviderConfig{Type: model.TypeAnthropic, BaseURL: fp.URL, APIKey: "k",
			Model: "claude-sonnet-4-5"})}, nil
	}
	base := t.TempDir()
	e := newEnvIn(t, base, func(e *env, o *Options) { o.NewModel = newModel })
	sid := e.newSession()
	e.promptOK(sid, "search the web for garuda")
	e.promptOK(sid, "are you sure?")
	ups, _ := e.ed.Snapshot()
	if tc, st, texts := editor.ToolCall(ups, "srvtoolu_acp1"); tc == nil || tc.Title != "Search the web: garuda acp" ||
		st != acp.ToolCallStatusCompleted || len(texts) == 0 || texts[0] != "https://example.com/garuda" {
		t.Errorf("the search's tool call: %+v %v %q", tc, st, texts)
	}
	e.stop()
	e2 := newEnvIn(t, base, func(e *env, o *Options) { o.NewModel = newModel })
	if _, err := e2.conn.LoadSession(e2.ctx(), editor.LoadRequest(sid, e2.root)); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	e2.promptOK(sid, "and after a reload?")

	bodies := fp.Bodies()
	if len(bodies) != 3 {
		t.Fatalf("%d model requests, want 3", len(bodies))
	}
	use := `{"type":"server_tool_use","id":"srvtoolu_acp1","name":"web_search","input":{"query":"garuda acp"}}`
	result := `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_acp1","content":[{"encrypted_content":"enc-srvtoolu_acp1-0",` +
		`"title":"Result 1","type":"web_search_result","url":"https://example.com/garuda"}]}`
	if strings.Contains(bodies[0], "srvtoolu_acp1") {
		t.Errorf("the first request already holds the search: %s", bodies[0])
	}
	for i, b := range bodies[1:] {
		if !strings.Contains(b, use) || !strings.Contains(b, result) || !strings.Contains(b, `"text":"Garuda speaks ACP."`) {
			t.Errorf("request %d does not carry the first turn's search blocks:\n%s", i+2, b)
		}
	}
}
