package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/garuda-dev/garuda/frontend/model/fakeprovider"
	"github.com/garuda-dev/garuda/test/editor"
)

// The confined front end (Landlock: reads only the DNS files and the CA certificates; a static binary with Go's own
// resolver) reaches a provider by its host name: "localhost" is looked up in /etc/hosts after confinement.
func TestAcpReachesProviderByName(t *testing.T) {
	hosts, _ := os.ReadFile("/etc/hosts")
	if !strings.Contains(string(hosts), "localhost") {
		t.Skip("/etc/hosts names no localhost here")
	}
	srv, err := fakeprovider.Serve("127.0.0.1:0", []fakeprovider.Turn{{Text: "reached by name"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	if byName == srv.URL {
		t.Fatalf("the fake provider's URL %s has no 127.0.0.1 to replace", srv.URL)
	}
	home := t.TempDir()
	models := fakeModels(byName)
	if err := os.WriteFile(filepath.Join(home, "models.json"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startEditor(t, home, "LOCAL_API_KEY=k", "TMPDIR="+t.TempDir())
	e.initialize()
	sid := e.newSession(t.TempDir())
	if res, err := e.prompt(sid, "hi"); err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v\nstderr:\n%s", res, err, e.stderr)
	}
	if all := strings.Join(e.lines(), ""); !strings.Contains(all, "reached by name") {
		t.Errorf("the model's text never reached the editor:\n%s", all)
	}
	if code, _ := e.closeAndWait(); code != 0 {
		t.Errorf("exit %d\nstderr:\n%s", code, e.stderr)
	}
}

// The provider's faults, as the editor meets them through the real binary: a final error (400, 401, 404) ends the
// prompt after exactly one request, with the provider's message and what to do; a transient one (429 with
// retry-after, 529, a stream cut) is retried by the agent loop alone (the SDKs' retries are off), each retry a
// "Garuda:" line. Nothing here asserts time; the time to the editor's error is logged.
func TestAcpProviderFaults(t *testing.T) {
	srv, err := fakeprovider.Serve("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	home := t.TempDir()
	models := fmt.Sprintf(`{"default":"fake","providers":{"anthropic":{"type":"anthropic","base_url":%q,"api_key_env":"LOCAL_API_KEY"}},`+
		`"models":{"fake":{"provider":"anthropic","id":"fake-model"}}}`, srv.URL)
	if err := os.WriteFile(filepath.Join(home, "models.json"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startEditor(t, home, "LOCAL_API_KEY=k", "TMPDIR="+t.TempDir())
	e.initialize()
	sid := e.newSession(t.TempDir())
	five529 := []fakeprovider.Turn{{Status: 529, Message: "Overloaded"}, {Status: 529, Message: "Overloaded"},
		{Status: 529, Message: "Overloaded"}, {Status: 529, Message: "Overloaded"}, {Status: 529, Message: "Overloaded"}}
	for _, c := range []struct {
		name     string
		script   []fakeprovider.Turn
		requests int
		errCode  int // 0: the prompt ends with end_turn
		want     []string
	}{
		{"400", []fakeprovider.Turn{{Status: 400, Message: "messages.0.content: bad block"}}, 1, -32603,
			[]string{"anthropic: HTTP 400: messages.0.content: bad block", "does not send it again"}},
		{"401", []fakeprovider.Turn{{Status: 401, Message: "invalid x-api-key"}}, 1, -32000,
			[]string{"invalid x-api-key", "garuda setup"}},
		{"404", []fakeprovider.Turn{{Status: 404, Message: "model: fake-model"}}, 1, -32603,
			[]string{"model: fake-model", `model id "fake-model"`, "claude-sonnet-4-5", "garuda setup --model"}},
		{"429", []fakeprovider.Turn{{Status: 429, Message: "slow down", RetryAfter: "1"}, {Text: "after the wait"}}, 2, 0,
			[]string{"Garuda: the model did not answer (anthropic: HTTP 429: slow down); trying again in 1s (attempt 2 of 5).", "after the wait"}},
		{"529", five529, 5, -32603, []string{"HTTP 529: Overloaded (failed 5 times)", "try again in a few minutes", "attempt 5 of 5"}},
		{"cut", []fakeprovider.Turn{{Text: "half an", Cut: true}, {Text: "whole answer"}}, 2, 0,
			[]string{"Garuda: the model's answer broke off", "whole answer"}},
	} {
		srv.Push(c.script...)
		before, seen := len(srv.Requests()), len(e.lines())
		start := time.Now()
		res, err := e.prompt(sid, "hi "+c.name)
		t.Logf("%s: answered after %v", c.name, time.Since(start).Round(time.Millisecond))
		if n := len(srv.Requests()) - before; n != c.requests {
			t.Errorf("%s: %d requests, want %d", c.name, n, c.requests)
		}
		var errObj *acp.RequestError
		errMsg := ""
		if err != nil {
			errObj = editor.RequestError(t, err)
			errMsg = errObj.Message
		}
		got := agentText(e.lines()[seen:]) + errMsg
		switch {
		case c.errCode == 0 && errObj != nil:
			t.Errorf("%s: error %v", c.name, errObj)
		case c.errCode != 0 && (errObj == nil || errObj.Code != c.errCode):
			t.Errorf("%s: response %+v %v, want error %v", c.name, res, err, c.errCode)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the editor did not see %q in:\n%s", c.name, w, got)
			}
		}
		if strings.Contains(got, "rpc error") || strings.Count(errMsg, "HTTP ") > 1 {
			t.Errorf("%s: doubled or wrapped words:\n%s", c.name, got)
		}
		if n := strings.Count(got, "trying again"); n != c.requests-1 {
			t.Errorf("%s: %d retry notices, want %d", c.name, n, c.requests-1)
		}
	}
	if code, _ := e.closeAndWait(); code != 0 {
		t.Errorf("exit %d\nstderr:\n%s", code, e.stderr)
	}
}

// agentText is the text of the agent_message_chunks among stdout lines, joined.
func agentText(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		var m struct {
			Params struct {
				Update struct {
					SessionUpdate string `json:"sessionUpdate"`
					Content       struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"update"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Params.Update.SessionUpdate == "agent_message_chunk" {
			b.WriteString(m.Params.Update.Content.Text)
		}
	}
	return b.String()
}
