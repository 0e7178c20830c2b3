package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
	"github.com/garuda-dev/garuda/frontend/model/fakeprovider"
	"github.com/garuda-dev/garuda/test/editor"
)

// TestProcessLoadAfterRestart: the real binaries, an Anthropic-compatible fake provider. A turn with a thought,
// text, an allowed edit and a denied command; garuda acp exits and starts again; session/load replays exactly
// what the editor saw, before its answer; a follow-up prompt sends the model the whole conversation.
func TestProcessLoadAfterRestart(t *testing.T) {
	fp, err := fakeprovider.Serve("127.0.0.1:0", []fakeprovider.Turn{
		{Thinking: "The user wants alpha changed.", Signature: "sig-1", Text: "I will edit a.txt.",
			ToolCalls: []fakeprovider.ToolCall{{ID: "toolu_edit", Name: "edit_file",
				Input: `{"path":"a.txt","old_string":"alpha","new_string":"beta"}`}}},
		{ToolCalls: []fakeprovider.ToolCall{{ID: "toolu_curl", Name: "bash",
			Input: `{"command":"curl https://example.com","sandbox":false}`}}},
		{Text: "Done; curl was not allowed."},
		{Text: "I changed alpha to beta."},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fp.Close)
	models := fmt.Sprintf(`{"default":"fake","providers":{"fakeant":{"type":"anthropic","base_url":%q,"api_key_env":"LOCAL_API_KEY"}},`+
		`"models":{"fake":{"provider":"fakeant","id":"fake-model","context_window":200000}}}`, fp.URL)
	base := t.TempDir()

	p := startGarudaIn(t, base, models)
	if err := os.WriteFile(filepath.Join(p.root, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.ed.Answer = func(_ context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
		if r.ToolCall.Title != nil && strings.HasPrefix(*r.ToolCall.Title, "$") {
			return editor.Selected("deny"), nil
		}
		return editor.Selected("once"), nil
	}
	prompt := "Change alpha to beta, then fetch example.com"
	sid := string(p.turn(prompt))
	if b, _ := os.ReadFile(filepath.Join(p.root, "a.txt")); string(b) != "beta\n" {
		t.Fatalf("a.txt = %q", b)
	}
	live, _ := p.ed.Snapshot()
	want := append([]string{editor.UserChunk(prompt)}, editor.Transcript(live, sid)...)
	if code, _ := p.closeAndWait(); code != 0 {
		t.Fatalf("garuda acp exited with %d", code)
	}
	before := fp.Requests()

	q := startGarudaIn(t, base, models)
	q.initialize()
	if _, err := q.conn.LoadSession(q.ctx(), editor.LoadRequest(sid, q.root)); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	replay, _ := q.ed.Snapshot()
	if got := editor.Transcript(replay, sid); !reflect.DeepEqual(got, want) {
		t.Fatalf("replay differs:\n got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	for _, s := range []string{`thought: The user wants alpha changed.`, `"type":"diff"`, `"toolCallId":"toolu_curl"`} {
		if !strings.Contains(strings.Join(want, "\n"), s) {
			t.Errorf("the transcript lacks %s", s)
		}
	}

	res, err := q.prompt(acp.SessionId(sid), "what did you change?")
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("follow-up: %+v, %v", res, err)
	}
	after := fp.Requests()
	if len(after) != len(before)+1 {
		t.Fatalf("%d requests after the follow-up, want %d", len(after), len(before)+1)
	}
	prev, next := bodyMessages(t, before[len(before)-1].Body), bodyMessages(t, after[len(after)-1].Body)
	if len(next) != len(prev)+2 || !reflect.DeepEqual(next[:len(prev)], prev) {
		t.Fatalf("the follow-up sent %d messages, want the %d of the last request before the restart and 2 more:\n%s",
			len(next), len(prev), after[len(after)-1].Body)
	}
	// The thought's signature went back to the provider: the conversation is whole, not a retelling.
	if !strings.Contains(string(after[len(after)-1].Body), `"sig-1"`) {
		t.Error("the thinking block's signature is not in the follow-up request")
	}
}

// bodyMessages is the messages of an Anthropic request body, without the prompt-cache marks (which move to the
// newest message).
func bodyMessages(t *testing.T, body []byte) []any {
	t.Helper()
	var b struct {
		Messages []any `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	var strip func(v any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "cache_control")
			for _, e := range x {
				strip(e)
			}
		case []any:
			for _, e := range x {
				strip(e)
			}
		}
	}
	strip(b.Messages)
	return b.Messages
}
