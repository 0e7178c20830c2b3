package acpagent

import (
	"context"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/model"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
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
			e.ed.answer = func(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
				return selected("deny"), nil
			}
		}
		e.fake.Push(model.TextStep("found it"), model.TextStep("again"))
		sid := e.newSession()
		e.promptOK(sid, "search the web for garuda")
		e.promptOK(sid, "and again")
		ups, perms := e.ed.snapshot()
		if len(perms) != 1 || perms[0].ToolCall.Title == nil || !strings.Contains(*perms[0].ToolCall.Title, "Search the web") {
			t.Fatalf("allow=%v: want one consent question, got %+v", allow, perms)
		}
		reqs := e.fake.Requests()
		if len(reqs) != 2 || reqs[0].WebSearch != allow || reqs[1].WebSearch != allow {
			t.Fatalf("allow=%v: requests offered web search: %v %v", allow, reqs[0].WebSearch, reqs[1].WebSearch)
		}
		tc, st, texts := toolCall(ups, "srvtoolu_1")
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
