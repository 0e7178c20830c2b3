package acpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/broker/sessionlog"
	"github.com/garuda-dev/garuda/frontend/agent"
	"github.com/garuda-dev/garuda/frontend/model"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
	"github.com/garuda-dev/garuda/test/editor"
)

// stop ends the agent and its broker, as when the editor quits: stdin closes, Serve returns, the broker shuts
// down. The env's cleanups still run.
func (e *env) stop() {
	e.t.Helper()
	e.stdin.Close()
	select {
	case err := <-e.served:
		e.served <- err
	case <-time.After(waitLimit):
		e.t.Fatal("Serve did not return after stdin closed")
	}
	e.stopSrv()
}

// sessionFile is the path of the session's file in the env's home.
func (e *env) sessionFile(sid string) string { return filepath.Join(e.home, "sessions", sid+".jsonl") }

// aSavedSession opens a session in an agent on base and runs one turn in it ("hi", answered "hello"), so that the
// session has a file; it returns the agent's env and the session's id.
func aSavedSession(t *testing.T, base string) (*env, string) {
	t.Helper()
	e := newEnvIn(t, base)
	sid := e.newSession()
	e.fake.Push(model.TextStep("hello"))
	e.promptOK(sid, "hi")
	e.waitRecorded(sid, "stop") // on disk: the file is written after the turn answers
	return e, sid
}

// aRichTurn runs a turn with a thought, text, an allowed edit (a diff) and a denied command; it returns the
// prompt.
func aRichTurn(e *env, sid string) string {
	e.t.Helper()
	e.write("a.txt", "alpha\n")
	e.ed.Answer = func(ctx context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
		if r.ToolCall.Title != nil && strings.HasPrefix(*r.ToolCall.Title, "$") {
			return editor.Selected("deny"), nil
		}
		return editor.Selected("once"), nil
	}
	think := model.Step{Response: &model.Response{Message: model.Message{Content: []model.Block{
		{Type: model.BlockThinking, Text: "The user wants a change.", Signature: "sig"},
		{Type: model.BlockText, Text: "I will edit a.txt, then ask to run curl."},
		{Type: model.BlockToolUse, ToolUseID: "toolu_edit", Name: "edit_file",
			Input: json.RawMessage(`{"path":"a.txt","old_string":"alpha","new_string":"beta"}`)},
	}}, StopReason: model.StopToolUse}}
	e.fake.Push(think,
		tool("toolu_curl", "bash", `{"command":"curl https://example.com","sandbox":false}`),
		model.TextStep("Done: a.txt says beta; curl was not allowed."))
	prompt := "Change alpha to beta\nand fetch example.com"
	e.promptEndsTurn(sid, prompt)
	if e.read("a.txt") != "beta\n" {
		e.t.Fatalf("a.txt = %q", e.read("a.txt"))
	}
	return prompt
}

// TestLoadReplaysWhatTheEditorSaw: after a restart of garuda acp and its broker, session/load replays the turn
// (user chunk, title, thought, text, the edit with its diff, the denied command, the final text) exactly as the
// editor saw it, all before its response; the session goes on with the same id and the model hears the whole
// conversation.
func TestLoadReplaysWhatTheEditorSaw(t *testing.T) {
	base := t.TempDir()
	e := newEnvIn(t, base)
	sid := e.newSession()
	prompt := aRichTurn(e, sid)
	live, _ := e.ed.Snapshot()
	want := append([]string{editor.UserChunk(prompt)}, editor.Transcript(live, sid)...)
	heard := e.fake.Requests()
	e.stop()

	e2 := newEnvIn(t, base)
	res, err := e2.conn.LoadSession(e2.ctx(), editor.LoadRequest(sid, e2.root))
	if err != nil {
		t.Fatalf("session/load: %v", err)
	}
	if res.Modes == nil || res.Modes.CurrentModeId != agent.ModeBuild {
		t.Errorf("modes %+v", res.Modes)
	}
	// The SDK hands the client every notification sent before the response before the response itself: what is
	// here now is what came before the response.
	replay, _ := e2.ed.Snapshot()
	got := editor.Transcript(replay, sid)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("replay differs from the live transcript:\n got %d:\n  %s\nwant %d:\n  %s", len(got), strings.Join(got, "\n  "),
			len(want), strings.Join(want, "\n  "))
	}
	// What the test relies on is there: the diff, the denied command, the title.
	all := strings.Join(got, "\n")
	for _, s := range []string{`"type":"diff"`, `"oldText":"alpha\n"`, `"status":"failed"`, `"title":"Change alpha to beta"`,
		`"sessionUpdate":"session_info_update"`} {
		if !strings.Contains(all, s) {
			t.Errorf("replay lacks %s", s)
		}
	}

	// The session goes on: the model hears the whole conversation, and the load's notice comes with the prompt.
	e2.fake.Push(model.TextStep("Still here."))
	e2.promptEndsTurn(sid, "what did you change?")
	reqs := e2.fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests after the load", len(reqs))
	}
	last := heard[len(heard)-1].Messages
	msgs := reqs[0].Messages
	if len(msgs) != len(last)+2 || !reflect.DeepEqual(msgs[:len(last)], last) {
		t.Fatalf("the model heard %d messages after the load, want the %d before and 2 more:\n%+v", len(msgs), len(last), msgs)
	}
	if msgs[len(last)].Content[0].Text != "Done: a.txt says beta; curl was not allowed." ||
		reqs[0].LastUserText() != "what did you change?" {
		t.Errorf("the follow-up request ends with %+v", msgs[len(last):])
	}
	after, _ := e2.ed.Snapshot()
	if !strings.Contains(editor.Messages(after[len(replay):]), "Allow for this session") {
		t.Errorf("no notice that session answers ended: %q", editor.Messages(after[len(replay):]))
	}
	// A second load of the open session is refused.
	_, err = e2.conn.LoadSession(e2.ctx(), editor.LoadRequest(sid, e2.root))
	if re := editor.RequestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, "open already") {
		t.Errorf("second load: %v", err)
	}
}

// TestLoadRefusesBadInput: each bad input is a clear JSON-RPC error, the session file is unchanged, and the agent
// keeps serving.
func TestLoadRefusesBadInput(t *testing.T) {
	base := t.TempDir()
	e, sid := aSavedSession(t, base)
	e.stop()
	path := e.sessionFile(sid)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	e2 := newEnvIn(t, base)
	other := filepath.Join(base, "other")
	os.MkdirAll(other, 0o755)
	load := func(id, cwd string) error {
		_, err := e2.conn.LoadSession(e2.ctx(), editor.LoadRequest(id, cwd))
		return err
	}
	for _, c := range []struct {
		name, id, cwd, want string
	}{
		{"path characters", "../" + sid, e2.root, "invalid session id"},
		{"unknown id", "nosuchsession", e2.root, "unknown session"},
		{"relative cwd", sid, "proj", "absolute"},
		{"another root", sid, other, "belongs to the project"},
	} {
		err := load(c.id, c.cwd)
		if err == nil {
			t.Errorf("%s: loaded", c.name)
			continue
		}
		if re := editor.RequestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, c.want) {
			t.Errorf("%s: %d %q, want -32602 with %q", c.name, re.Code, re.Message, c.want)
		}
	}
	// A hand-edited file: a line in the middle that is no entry; then one whose update does not decode.
	for _, bad := range []string{"not json\n", `{"time":"2026-12-04T00:00:00Z","kind":"update","data":{"sessionUpdate":42}}` + "\n"} {
		lines := strings.SplitAfter(string(orig), "\n")
		edited := strings.Join(lines[:2], "") + bad + strings.Join(lines[2:], "")
		os.WriteFile(path, []byte(edited), 0o600)
		err := load(sid, e2.root)
		if err == nil {
			t.Fatalf("a hand-edited file loaded")
		}
		if re := editor.RequestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, "session") {
			t.Errorf("hand-edited file: %d %q", re.Code, re.Message)
		}
		if b, _ := os.ReadFile(path); string(b) != edited {
			t.Errorf("a refused load changed the file")
		}
	}
	os.WriteFile(path, orig, 0o600)
	// A foreign file: another user's header.
	foreign := strings.Replace(string(orig), fmt.Sprintf(`"uid":%d`, os.Getuid()), `"uid":4242`, 1)
	os.WriteFile(path, []byte(foreign), 0o600)
	if re := editor.RequestError(t, load(sid, e2.root)); re.Code != -32602 || !strings.Contains(re.Message, "another user") {
		t.Errorf("foreign file: %d %q", re.Code, re.Message)
	}
	os.WriteFile(path, orig, 0o600)
	// The agent still serves, and the intact file loads.
	if err := load(sid, e2.root); err != nil {
		t.Fatalf("the intact file after the refusals: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(orig) {
		t.Errorf("a load without a prompt changed the file")
	}
}

// TestTornFileLoadsWithANotice: a file whose last line a crash cut is loaded up to its last whole entry; the
// notice comes with the next prompt, not in the replay, and the next entries are whole lines.
func TestTornFileLoadsWithANotice(t *testing.T) {
	base := t.TempDir()
	e, sid := aSavedSession(t, base)
	e.stop()
	path := e.sessionFile(sid)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"time":"2026-12-04T00:00:00Z","kind":"upd`)
	f.Close()

	e2 := newEnvIn(t, base)
	if _, err := e2.conn.LoadSession(e2.ctx(), editor.LoadRequest(sid, e2.root)); err != nil {
		t.Fatalf("load of a torn file: %v", err)
	}
	replay, _ := e2.ed.Snapshot()
	if strings.Contains(editor.Messages(replay), "torn") {
		t.Errorf("the load's notice is inside the replay")
	}
	e2.fake.Push(model.TextStep("again"))
	e2.promptOK(sid, "next")
	after, _ := e2.ed.Snapshot()
	if !strings.Contains(editor.Messages(after[len(replay):]), "torn line") {
		t.Errorf("no torn-file notice with the next prompt: %q", editor.Messages(after[len(replay):]))
	}
	e2.stop()
	b, _ := os.ReadFile(path)
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("line %d of the file is not whole after the load: %q", i+1, line)
		}
	}
}

// TestResumeListClose: resume goes on without a replay; list shows the session with its title, newest first, by
// cwd; close frees the broker session, and a second close is an error.
func TestResumeListClose(t *testing.T) {
	base := t.TempDir()
	e := newEnvIn(t, base)
	first := e.newSession()
	e.fake.Push(model.TextStep("one"))
	e.promptOK(first, "first session\nwith a second line")
	e.waitRecorded(first, "stop") // the file's time is its last entry's, written after the response
	second := e.newSession()
	e.fake.Push(model.TextStep("two"))
	e.promptOK(second, strings.Repeat("long title ", 20))
	e.stop()

	e2 := newEnvIn(t, base)
	list, err := e2.conn.ListSessions(e2.ctx(), acp.ListSessionsRequest{Cwd: acp.Ptr(e2.root)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 2 || list.NextCursor != nil {
		t.Fatalf("list = %+v", list)
	}
	if string(list.Sessions[0].SessionId) != second || string(list.Sessions[1].SessionId) != first {
		t.Errorf("not newest first: %s (%s), %s (%s)", list.Sessions[0].SessionId, deref(list.Sessions[0].UpdatedAt),
			list.Sessions[1].SessionId, deref(list.Sessions[1].UpdatedAt))
	}
	if ti := list.Sessions[1].Title; ti == nil || *ti != "first session" {
		t.Errorf("title %q", deref(ti))
	}
	if ti := list.Sessions[0].Title; ti == nil || len([]rune(*ti)) > titleLimit || !strings.HasSuffix(*ti, "…") {
		t.Errorf("long title %q", deref(ti))
	}
	if s := list.Sessions[0]; s.Cwd != e2.root || s.UpdatedAt == nil {
		t.Errorf("session info %+v", s)
	}
	other, err := e2.conn.ListSessions(e2.ctx(), acp.ListSessionsRequest{Cwd: acp.Ptr(filepath.Join(base, "elsewhere"))})
	if err != nil || len(other.Sessions) != 0 {
		t.Errorf("list of another cwd = %+v, %v", other, err)
	}

	before := openSessions(t, e2)
	if _, err := e2.conn.ResumeSession(e2.ctx(), acp.ResumeSessionRequest{SessionId: acp.SessionId(first), Cwd: e2.root}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	ups, _ := e2.ed.Snapshot()
	if len(editor.Transcript(ups, first)) != 0 {
		t.Errorf("resume replayed: %v", editor.Transcript(ups, first))
	}
	e2.fake.Push(model.TextStep("resumed"))
	e2.promptOK(first, "go on")
	if reqs := e2.fake.Requests(); len(reqs[0].Messages) != 3 {
		t.Errorf("after resume the model heard %d messages, want 3", len(reqs[0].Messages))
	}
	if n := openSessions(t, e2); n != before+1 {
		t.Fatalf("broker sessions %d after resume, want %d", n, before+1)
	}
	if _, err := e2.conn.CloseSession(e2.ctx(), acp.CloseSessionRequest{SessionId: acp.SessionId(first)}); err != nil {
		t.Fatalf("close: %v", err)
	}
	if n := openSessions(t, e2); n != before {
		t.Errorf("broker sessions %d after close, want %d", n, before)
	}
	_, err = e2.conn.CloseSession(e2.ctx(), acp.CloseSessionRequest{SessionId: acp.SessionId(first)})
	if re := editor.RequestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, "unknown session") {
		t.Errorf("second close: %v", err)
	}
	if _, err := e2.prompt(first, acp.TextBlock("after close")); err == nil {
		t.Errorf("a prompt after close ran")
	}
	// Closed, it can be loaded again.
	if _, err := e2.conn.LoadSession(e2.ctx(), editor.LoadRequest(first, e2.root)); err != nil {
		t.Errorf("load after close: %v", err)
	}
}

func openSessions(t *testing.T, e *env) int {
	t.Helper()
	h, err := e.broker.Hello(e.ctx(), &execv1.HelloRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return int(h.GetOpenSessions())
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// waitRecorded waits until the session's file has an entry of kind: entries are written after the turn answers.
func (e *env) waitRecorded(sid, kind string) {
	e.t.Helper()
	path := e.sessionFile(sid)
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), `"kind":"`+kind+`"`) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.t.Fatalf("no %s entry in %s", kind, path)
}

// TestLoadRefusesASessionOpenElsewhere: a session that another garuda acp (another broker on the same home) has
// open cannot be loaded or resumed; once that one closes it, it can.
func TestLoadRefusesASessionOpenElsewhere(t *testing.T) {
	base := t.TempDir()
	e, sid := aSavedSession(t, base)

	other := newEnvIn(t, base) // a second agent and broker, the same user, home and project
	req := editor.LoadRequest(sid, other.root)
	_, err := other.conn.LoadSession(other.ctx(), req)
	if re := editor.RequestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, "open in another garuda acp") {
		t.Errorf("load of a session open elsewhere: %d %q", re.Code, re.Message)
	} else {
		t.Logf("the editor reads: %s", re.Message)
	}
	_, err = other.conn.ResumeSession(other.ctx(), acp.ResumeSessionRequest{SessionId: acp.SessionId(sid), Cwd: other.root})
	if re := editor.RequestError(t, err); !strings.Contains(re.Message, "open in another garuda acp") {
		t.Errorf("resume of a session open elsewhere: %q", re.Message)
	}
	if n := openSessions(t, other); n != 0 {
		t.Errorf("the refused loads left %d broker sessions open", n)
	}
	// Control: closed in the first agent, it loads in the second.
	if _, err := e.conn.CloseSession(e.ctx(), acp.CloseSessionRequest{SessionId: acp.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.conn.LoadSession(other.ctx(), req); err != nil {
		t.Fatalf("load after the close elsewhere: %v", err)
	}
}

// TestListPagesPast100: 150 sessions on the root come in two pages with the protocol's cursor, newest first, each
// once; a made-up cursor is -32602.
func TestListPagesPast100(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.home, "sessions")
	for i := range 150 {
		w := sessionlog.Create(dir, fmt.Sprintf("s%03d", i), sessionlog.Header{Root: e.root, UID: uint32(os.Getuid())})
		if err := w.Append(recTitle, json.RawMessage(fmt.Sprintf(`"session %d"`, i))); err != nil {
			t.Fatal(err)
		}
		w.Close()
		time.Sleep(time.Millisecond) // distinct times of the last entries
	}
	var got []acp.SessionInfo
	var cursor *string
	pages := 0
	for {
		res, err := e.conn.ListSessions(e.ctx(), acp.ListSessionsRequest{Cwd: acp.Ptr(e.root), Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append(got, res.Sessions...)
		if res.NextCursor == nil {
			break
		}
		cursor = res.NextCursor
	}
	if pages != 2 || len(got) != 150 {
		t.Fatalf("%d pages, %d sessions; want 2 and 150", pages, len(got))
	}
	for i, s := range got {
		if want := fmt.Sprintf("s%03d", 149-i); string(s.SessionId) != want || deref(s.Title) != fmt.Sprintf("session %d", 149-i) {
			t.Fatalf("item %d = %s %q, want %s", i, s.SessionId, deref(s.Title), want)
		}
	}
	_, err := e.conn.ListSessions(e.ctx(), acp.ListSessionsRequest{Cwd: acp.Ptr(e.root), Cursor: acp.Ptr("made-up")})
	if re := editor.RequestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, "cursor") {
		t.Errorf("a made-up cursor: %d %q", re.Code, re.Message)
	}
}

// TestCloseStopsTheRunningTurn: closing a session with a turn running stops the turn (the prompt answers
// cancelled), ends the broker session, and keeps the turn in the file.
func TestCloseStopsTheRunningTurn(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	before := openSessions(t, e)
	working := model.Message{Content: []model.Block{{Type: model.BlockText, Text: "working"}}}
	e.fake.Push(model.Step{Deltas: []model.FakeDelta{{Kind: model.DeltaText, Text: "working"}}, Wait: make(chan struct{}),
		Response: &model.Response{Message: working}})
	answered := e.promptInBackground(sid, "work for a long time")
	e.ed.WaitFor(t, "the turn's first text", func(ed *editor.Editor) bool {
		return strings.Contains(editor.Messages(ed.Updates), "working")
	})
	if _, err := e.conn.CloseSession(e.ctx(), acp.CloseSessionRequest{SessionId: acp.SessionId(sid)}); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case res := <-answered:
		if res.StopReason != acp.StopReasonCancelled {
			t.Errorf("the running prompt ended %q, want cancelled", res.StopReason)
		}
	case <-time.After(waitLimit):
		t.Fatal("the running prompt did not end after the close")
	}
	if n := openSessions(t, e); n != before-1 {
		t.Errorf("broker sessions %d after close, want %d", n, before-1)
	}
	b, _ := os.ReadFile(e.sessionFile(sid))
	if !strings.Contains(string(b), `"text":"work for a long time"`) || !strings.Contains(string(b), `"kind":"stop"`) {
		t.Errorf("the closed turn is not in the file:\n%s", b)
	}
}

// TestTwoLoadsAtOnce: two loads of one id sent together: one reopens the session, the other is a clear error.
func TestTwoLoadsAtOnce(t *testing.T) {
	base := t.TempDir()
	e, sid := aSavedSession(t, base)
	e.stop()
	e2 := newEnvIn(t, base)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := e2.conn.LoadSession(e2.ctx(), editor.LoadRequest(sid, e2.root))
			errs <- err
		}()
	}
	var failed []error
	for range 2 {
		if err := <-errs; err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) != 1 {
		t.Fatalf("%d of two loads failed: %v", len(failed), failed)
	}
	if re := editor.RequestError(t, failed[0]); re.Code != -32602 || !strings.Contains(re.Message, sid) {
		t.Errorf("the second load: %d %q", re.Code, re.Message)
	}
	if n := openSessions(t, e2); n != 1 {
		t.Errorf("%d broker sessions open after two loads, want 1", n)
	}
}
