package acpagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/acpagent/acpinit"
	"github.com/garuda-dev/garuda/frontend/model"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
	"github.com/garuda-dev/garuda/test/editor"
)

func TestInitialize(t *testing.T) {
	e := newEnv(t)
	res, err := e.conn.Initialize(e.ctx(), acp.InitializeRequest{ProtocolVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != 1 || res.AgentInfo == nil || res.AgentInfo.Name != "garuda" || res.AgentInfo.Title == nil ||
		*res.AgentInfo.Title != "Garuda" || res.AgentInfo.Version != "9.9.9-test" {
		t.Errorf("initialize: %+v %+v", res, res.AgentInfo)
	}
	c := res.AgentCapabilities
	sc := c.SessionCapabilities
	if !c.LoadSession || sc.List == nil || sc.Resume == nil || sc.Close == nil || sc.Fork != nil ||
		c.PromptCapabilities.Image || c.PromptCapabilities.Audio || !c.PromptCapabilities.EmbeddedContext ||
		!c.McpCapabilities.Http || !c.McpCapabilities.Sse {
		t.Errorf("capabilities %+v", c)
	}
	if res.AuthMethods == nil || len(res.AuthMethods) != 0 {
		t.Errorf("authMethods %+v, want [] for an editor without Terminal Auth", res.AuthMethods)
	}
	// authMethods is [] on the wire, never null: the first answer line.
	var raw struct {
		Result struct {
			AuthMethods json.RawMessage `json:"authMethods"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(e.lines()[0]), &raw); err != nil || string(raw.Result.AuthMethods) != "[]" {
		t.Errorf("first line %s: authMethods %s", e.lines()[0], raw.Result.AuthMethods)
	}

	for name, caps := range map[string]acp.ClientCapabilities{
		"auth.terminal":       {Auth: acp.AuthCapabilities{Terminal: true}},
		"_meta terminal-auth": {Meta: map[string]any{"terminal-auth": true}},
	} {
		res, err := e.conn.Initialize(e.ctx(), acp.InitializeRequest{ProtocolVersion: 1, ClientCapabilities: caps})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.AuthMethods) != 1 || res.AuthMethods[0].Terminal == nil {
			t.Fatalf("%s: authMethods %+v", name, res.AuthMethods)
		}
		m := res.AuthMethods[0].Terminal
		if m.Id != "garuda-setup" || m.Name != "Set up Garuda" || m.Description == nil ||
			*m.Description != "Choose a model and enter its API key." || !slices.Equal(m.Args, []string{"setup"}) {
			t.Errorf("%s: method %+v", name, m)
		}
	}
	if _, err := e.conn.Authenticate(e.ctx(), acp.AuthenticateRequest{MethodId: "garuda-setup"}); err != nil {
		t.Errorf("authenticate: %v", err)
	}
}

func TestStdinCloseClosesBrokerSessions(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	e.stdin.Close()
	select {
	case err := <-e.served:
		if err != nil {
			t.Errorf("Serve returned %v after stdin closed, want nil", err)
		}
		e.served <- err
	case <-time.After(waitLimit):
		t.Fatal("Serve did not return after stdin closed")
	}
	// The broker session is gone: the broker no longer knows its id.
	_, err := e.broker.SetMode(context.Background(), &execv1.SetModeRequest{SessionId: sid, Mode: execv1.Mode_MODE_PLAN})
	if err == nil {
		t.Error("the broker session is still open")
	}
}

func TestBrokerGoneFailsThePromptAndServe(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	hold := make(chan struct{})
	defer close(hold)
	e.fake.Push(model.Step{Deltas: []model.FakeDelta{{Kind: model.DeltaText, Text: "w"}}, Wait: hold,
		Response: &model.Response{StopReason: model.StopEndTurn}})
	done := make(chan error, 1)
	go func() {
		_, err := e.prompt(sid, acp.TextBlock("go"))
		done <- err
	}()
	e.ed.WaitFor(t, "the prompt to run", func(ed *editor.Editor) bool { return strings.Contains(editor.Messages(ed.Updates), "w") })
	e.stopSrv()
	close(e.brokerDone)
	err := <-done
	if err == nil || !strings.Contains(editor.RequestError(t, err).Message, "the broker (garuda-exec) exited unexpectedly") {
		t.Errorf("prompt error %v", err)
	}
	serr := <-e.served
	e.served <- serr
	if !errors.Is(serr, ErrBrokerGone) || strings.Contains(serr.Error(), "\n") {
		t.Errorf("Serve returned %v", serr)
	}
}

// The answer to initialize is the spec's, false capabilities included, as the line an editor reads.
func TestInitializeLineIsTheSpecs(t *testing.T) {
	var buf bytes.Buffer
	h := newHookWriter(&buf)
	s := &server{opts: Options{Version: "9.9"}}
	res, _ := s.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: 1})
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": res})
	if !bytes.Contains(line, acpinit.SDKCaps) {
		t.Fatalf("the SDK no longer writes %s; update acpinit.SDKCaps:\n%s", acpinit.SDKCaps, line)
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

// Found by the conformance pass (what an editor relies on where the first tests did not look): it failed
// before its fix.
// Editors show a JSON-RPC error's message; an invalid-params error must say in it what is wrong.
func TestInvalidParamsSayWhatIsWrong(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	_, err := e.conn.NewSession(e.ctx(), acp.NewSessionRequest{Cwd: "proj", McpServers: []acp.McpServer{}})
	check := func(what string, err error, want string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s succeeded", what)
			return
		}
		if re := editor.RequestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, want) {
			t.Errorf("%s: error %d %q, want -32602 with %q in the message", what, re.Code, re.Message, want)
		}
	}
	check("session/new with a relative cwd", err, "cwd must be an absolute path to a folder")
	// The broker's refusals are one sentence: no gRPC wrapper, no sentinel words, no doubled prefix.
	for cwd, want := range map[string]string{
		"/no-such-garuda-folder": "root /no-such-garuda-folder: the root must be an existing folder",
		"/":                      "root /: choose a project folder (not / nor $GARUDA_HOME)",
	} {
		_, err := e.conn.NewSession(e.ctx(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
		check("session/new on "+cwd, err, want)
		if err != nil {
			if m := editor.RequestError(t, err).Message; m != want {
				t.Errorf("session/new on %s: %q, want exactly %q", cwd, m, want)
			}
		}
	}
	_, err = e.prompt("no-such-session", acp.TextBlock("hi"))
	check("session/prompt of an unknown session", err, `unknown session "no-such-session"`)
	_, err = e.conn.SetSessionMode(e.ctx(), acp.SetSessionModeRequest{SessionId: "no-such-session", ModeId: "plan"})
	check("session/set_mode of an unknown session", err, `unknown session "no-such-session"`)
	_, err = e.conn.SetSessionMode(e.ctx(), acp.SetSessionModeRequest{SessionId: acp.SessionId(sid), ModeId: "yolo"})
	check("session/set_mode with an unknown mode", err, `unknown mode "yolo"`)
}
