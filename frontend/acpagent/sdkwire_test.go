package acpagent

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/internal/testproc"
)

// Found by the conformance pass (what an editor relies on where the first tests did not look): it failed
// before its fix.
// A malformed line is logged as its first few hundred bytes and its length, by Garuda and not by the SDK (which logs
// it whole), and the agent goes on.
func TestMalformedLineIsLoggedBounded(t *testing.T) {
	var logs testproc.Output
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	old := slog.Default()
	slog.SetDefault(logger) // the SDK logs through the default logger
	t.Cleanup(func() { slog.SetDefault(old) })
	e := newEnv(t, func(_ *env, o *Options) { o.Log = logger })
	sid := e.newSession()
	garbage := "{not json " + strings.Repeat("g", 5<<20)
	e.raw(garbage)
	e.fake.Push(model.TextStep("still here"))
	e.promptEndsTurn(sid, "hi") // the next prompt works
	got := logs.String()
	if len(got) > 4096 || !strings.Contains(got, fmt.Sprintf("bytes=%d", len(garbage)+1)) || !strings.Contains(got, "{not json ggg") {
		t.Errorf("log of %d bytes, want the line's length and head: %.600s", len(got), got)
	}
}

// Found by the conformance pass (what an editor relies on where the first tests did not look): it failed
// before its fix.
// The SDK closes the connection on a line over 10 MiB, so one big selection sent as embedded context would end the
// agent and every session in it. The request gets an error instead, and the agent goes on.
func TestOverlongMessageGetsAnErrorAndTheAgentLives(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	big := promptLine("big-1", sid, strings.Repeat("y", 11<<20))
	e.raw(big)
	res, ok := e.rawResponse("big-1", waitLimit)
	if !ok {
		t.Fatal("no answer to a prompt over 10 MiB")
	}
	er, _ := res["error"].(map[string]any)
	if er == nil || er["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(er["message"]), "too large") {
		t.Errorf("answer %v, want an invalid-params error that says the message is too large", res)
	}
	e.fake.Push(model.TextStep("still here"))
	e.promptEndsTurn(sid, "hi") // the next prompt works
	// At the limit exactly (10 MiB with the newline) the SDK reads the message; one byte more, Garuda answers.
	for _, c := range []struct {
		size int
		code float64
	}{{maxLine, -32601}, {maxLine + 1, -32602}} {
		id := fmt.Sprintf("edge-%d", c.size)
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"x/none","params":{"pad":"`, id)
		e.raw(head + strings.Repeat("p", c.size-len(head)-len(`"}}`)-1) + `"}}`)
		res, _ := e.rawResponse(id, waitLimit)
		if er, _ := res["error"].(map[string]any); er == nil || er["code"] != c.code {
			t.Errorf("a message of %d bytes: %v, want error code %v", c.size, res, c.code)
		}
	}
	// Negative control: a prompt under the limit reaches the model (which may answer what it likes).
	asked := len(e.fake.Requests())
	e.raw(promptLine("big-2", sid, strings.Repeat("z", 1<<20)))
	res, ok = e.rawResponse("big-2", waitLimit)
	if !ok || strings.Contains(fmt.Sprint(res), "too large") || len(e.fake.Requests()) == asked {
		t.Errorf("a 1 MiB prompt did not reach the model: %v", res)
	}
}

// Found by driving garuda acp as editors do: it failed before its fix.
// An editor whose JSON encoder has no key order (CodeCompanion's Lua tables) may write "id" after a huge "params".
// A message over the limit was answered only when its id came first; with the id last the editor waited forever.
func TestOverlongMessageWithItsIDLastGetsAnError(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	e.raw(fmt.Sprintf(`{"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"%s"}]},`+
		`"jsonrpc":"2.0","id":"big-last"}`, sid, strings.Repeat("y", 11<<20)))
	res, ok := e.rawResponse("big-last", waitLimit)
	if !ok {
		t.Fatal("no answer to a prompt over 10 MiB whose id is its last member")
	}
	er, _ := res["error"].(map[string]any)
	if er == nil || er["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(er["message"]), "too large") {
		t.Errorf("answer %v, want an invalid-params error that says the message is too large", res)
	}
	e.fake.Push(model.TextStep("still here"))
	e.promptEndsTurn(sid, "hi")
}

// Found by driving garuda acp as editors do: it failed before its fix.
// A line that is not one JSON object (two messages on a line, a stray byte before a message, a batch) was dropped
// with no answer, so the editor waited forever for its request. Each request in it now gets an error with its id
// that says what to send; a response in it gets nothing (its id is the agent's, not the editor's).
func TestLineThatIsNotOneMessageAnswersItsRequests(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	e.raw(`{"jsonrpc":"2.0","id":"two-a","method":"session/list","params":{}}`+
		`{"jsonrpc":"2.0","id":"two-b","method":"session/list"}`,
		"\xff\xfe"+`{"jsonrpc":"2.0","id":"stray","method":"session/list","params":{}}`,
		`[{"jsonrpc":"2.0","id":"batch","method":"session/list","params":{}}]`,
		`{"jsonrpc":"2.0","id":"resp-1","result":{}}}`)
	for id, code := range map[string]float64{"two-a": -32700, "two-b": -32700, "stray": -32700, "batch": -32600} {
		res, ok := e.rawResponse(id, waitLimit)
		er, _ := res["error"].(map[string]any)
		if !ok || er == nil || er["code"] != code || !strings.Contains(fmt.Sprint(er["data"]), "one JSON object") {
			t.Errorf("request %s on a line that is not one message: %v, want error %v that says what to send", id, res, code)
		}
	}
	e.fake.Push(model.TextStep("still here"))
	e.promptEndsTurn(sid, "hi") // the agent goes on
	if _, ok := e.rawResponse("resp-1", 0); ok {
		t.Error("a malformed response was answered: its id is one of the agent's requests, not the editor's")
	}
}

// Found by probing garuda acp from outside (JSON-RPC's rules for what is not a request): it failed before its fix.
// A request whose id is an object was run and answered with that id; one whose method is not a string was logged
// whole by the SDK and never answered; a line of garbage got no answer. JSON-RPC answers each with an error: the
// first with id null (its id is no id), the second with its id, the third with id null (a parse error).
func TestMessageThatIsNotJSONRPCIsAnswered(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	e.raw(`{"jsonrpc":"2.0","id":{"k":"obj"},"method":"session/list","params":{}}`,
		`{"jsonrpc":"2.0","id":"num-method","method":5}`,
		`hello, not json`)
	var nulls []float64
	deadline := time.Now().Add(waitLimit)
	for len(nulls) < 2 && time.Now().Before(deadline) {
		nulls = nulls[:0]
		for _, l := range e.lines() {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) != nil {
				continue
			}
			if id, ok := m["id"]; ok && id == nil {
				er, _ := m["error"].(map[string]any)
				code, _ := er["code"].(float64)
				nulls = append(nulls, code)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !slices.Equal(nulls, []float64{-32600, -32700}) {
		t.Errorf("errors with id null: %v, want -32600 (the object id) then -32700 (the garbage)", nulls)
	}
	for _, l := range e.lines() {
		if strings.Contains(l, `"obj"`) {
			t.Errorf("the request with an object id was answered with it: %s", l)
		}
	}
	res, ok := e.rawResponse("num-method", waitLimit)
	if er, _ := res["error"].(map[string]any); !ok || er == nil || er["code"] != float64(-32600) {
		t.Errorf("a request whose method is a number: %v, want error -32600 with its id", res)
	}
	e.fake.Push(model.TextStep("still here"))
	e.promptEndsTurn(sid, "hi") // the agent goes on
}
