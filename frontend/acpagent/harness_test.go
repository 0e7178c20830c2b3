package acpagent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/garuda-dev/garuda/broker"
	"github.com/garuda-dev/garuda/broker/mcphost/mcptest"
	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/internal/testenv"
	"github.com/garuda-dev/garuda/internal/testproc"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
	"github.com/garuda-dev/garuda/test/editor"
)

func TestMain(m *testing.M) {
	// The broker runs commands by re-executing its own binary, here the test binary, as the sandbox helper.
	sandbox.MaybeRunHelper()
	if len(os.Args) > 2 && os.Args[1] == mcptest.Arg {
		os.Exit(mcptest.Serve(os.Args[2])) // the MCP tests' server, run by the broker in the sandbox
	}
	restore := testenv.IsolateMemoryCgroup() // the commands' per-user memory limit is this binary's alone
	code := m.Run()
	restore()
	if serverBin != "" {
		os.RemoveAll(filepath.Dir(serverBin)) // the MCP benchmarks' server
	}
	os.Exit(code)
}

// waitLimit bounds every wait of these tests: reaching it is a failure, never a measurement.
const waitLimit = editor.WaitLimit

// env is one agent under test: a real broker in process, Serve over pipes, the SDK's client, a fake model.
type env struct {
	t       testing.TB
	root    string
	home    string
	fake    *model.FakeClient
	ed      *editor.Editor
	conn    *acp.ClientSideConnection
	broker  execv1.ExecServiceClient
	stopSrv func()

	getenvMu sync.Mutex
	envVars  map[string]string

	brokerDone chan struct{}
	stdin      *io.PipeWriter
	served     chan error

	tapMu sync.Mutex
	tap   []string // every line the agent wrote, in order
}

type envOption func(*env, *Options)

func withoutKey() envOption {
	return func(e *env, o *Options) { e.envVars = map[string]string{} }
}

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	return newEnvIn(t, t.TempDir(), opts...)
}

// newEnvIn is newEnv in base: a second env in the same base is the same user, project and GARUDA_HOME after a
// restart of both processes.
func newEnvIn(t testing.TB, base string, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t, root: filepath.Join(base, "proj"), home: filepath.Join(base, "home"), fake: model.NewFakeClient(),
		ed: editor.New(), envVars: map[string]string{"ANTHROPIC_API_KEY": "test-key"}, brokerDone: make(chan struct{}),
		served: make(chan error, 1)}
	for _, d := range []string{e.root, e.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("GARUDA_HOME", e.home)

	// The real broker, on a unix socket, with its peer-credential check.
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := broker.NewService(broker.Config{Version: "test", Home: e.home, ManagedPolicy: filepath.Join(base,
		"no-managed-policy.json"), Log: quiet})
	srv := broker.NewServer(svc, []uint32{uint32(os.Getuid())})
	sockDir, err := os.MkdirTemp("", "gacp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "b.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	// Never the real home, and the broker's per-session temp folders go under the test's own folder.
	for _, v := range []string{"HOME", "TMPDIR"} {
		d := filepath.Join(base, strings.ToLower(v))
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Setenv(v, d)
	}
	var stopOnce sync.Once
	e.stopSrv = func() {
		stopOnce.Do(func() {
			svc.Shutdown()
			srv.Stop()
			os.RemoveAll(sockDir)
		})
	}
	t.Cleanup(e.stopSrv)
	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	e.broker = execv1.NewExecServiceClient(cc)

	o := Options{
		Broker:     e.broker,
		BrokerDone: e.brokerDone,
		Version:    "9.9.9-test",
		Model:      "claude-sonnet-5",
		Getenv: func(k string) string {
			e.getenvMu.Lock()
			defer e.getenvMu.Unlock()
			return e.envVars[k]
		},
		NewModel: func(ms *execv1.ModelSettings, key string) (model.Client, error) { return e.fake, nil },
		Log:      quiet,
	}
	for _, opt := range opts {
		opt(e, &o)
	}

	// Editor -> agent and agent -> editor pipes; the agent's output is tapped line by line.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tapR, tapW := io.Pipe()
	e.stdin = inW
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line := sc.Text()
			e.tapMu.Lock()
			e.tap = append(e.tap, line)
			e.tapMu.Unlock()
			if _, err := tapW.Write([]byte(line + "\n")); err != nil {
				return
			}
		}
		tapW.Close()
	}()
	go func() {
		e.served <- Serve(context.Background(), inR, outW, o)
		outW.Close()
	}()
	e.conn = acp.NewClientSideConnection(e.ed, inW, tapR)
	e.conn.SetLogger(quiet)
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-e.served:
		case <-time.After(waitLimit):
			t.Errorf("Serve did not return after stdin closed")
		}
	})
	if _, err := e.conn.Initialize(e.ctx(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return e
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	e.t.Cleanup(cancel)
	return ctx
}

func (e *env) setEnv(k, v string) {
	e.getenvMu.Lock()
	defer e.getenvMu.Unlock()
	e.envVars[k] = v
}

// newSession opens a session on the root and waits for its / menu.
func (e *env) newSession(mcp ...acp.McpServer) string {
	e.t.Helper()
	if mcp == nil {
		mcp = []acp.McpServer{}
	}
	res, err := e.conn.NewSession(e.ctx(), acp.NewSessionRequest{Cwd: e.root, McpServers: mcp})
	if err != nil {
		e.t.Fatalf("session/new: %v", err)
	}
	id := string(res.SessionId)
	e.ed.WaitFor(e.t, "available_commands_update", func(ed *editor.Editor) bool {
		for _, u := range ed.Updates {
			if string(u.SessionId) == id && u.Update.AvailableCommandsUpdate != nil {
				return true
			}
		}
		return false
	})
	return id
}

func (e *env) prompt(sid string, blocks ...acp.ContentBlock) (acp.PromptResponse, error) {
	return e.conn.Prompt(e.ctx(), acp.PromptRequest{SessionId: acp.SessionId(sid), Prompt: blocks})
}

func (e *env) promptOK(sid string, text string) acp.StopReason {
	e.t.Helper()
	res, err := e.prompt(sid, acp.TextBlock(text))
	if err != nil {
		e.t.Fatalf("session/prompt %q: %v", text, err)
	}
	return res.StopReason
}

// promptEndsTurn sends a text prompt and fails the test unless the turn ends (end_turn).
func (e *env) promptEndsTurn(sid string, text string) {
	e.t.Helper()
	if stop := e.promptOK(sid, text); stop != acp.StopReasonEndTurn {
		e.t.Fatalf("session/prompt %q: stop %q, want end_turn", text, stop)
	}
}

// promptInBackground sends a text prompt without waiting for it: its answer comes on the channel. A prompt that
// fails fails the test (and sends the zero answer).
func (e *env) promptInBackground(sid, text string) <-chan acp.PromptResponse {
	done := make(chan acp.PromptResponse, 1)
	go func() {
		r, err := e.prompt(sid, acp.TextBlock(text))
		if err != nil {
			e.t.Errorf("session/prompt %q: %v", text, err)
		}
		done <- r
	}()
	return done
}

// writeHome writes a file of GARUDA_HOME (settings.json, mcp.json, agents/x.md, ...), before the session that
// reads it.
func (e *env) writeHome(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.home, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) write(rel, content string) string {
	e.t.Helper()
	p := filepath.Join(e.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.root, rel))
	if err != nil && !os.IsNotExist(err) {
		e.t.Fatal(err)
	}
	return string(b)
}

func (e *env) lines() []string {
	e.tapMu.Lock()
	defer e.tapMu.Unlock()
	return append([]string(nil), e.tap...)
}

func tool(id, name, input string) model.Step {
	return model.ToolStep("", model.ToolCall{ID: id, Name: name, Input: input})
}

// oneQuestionEntry checks that the editor was asked one question, the agent's own (a consent, not about a tool
// call), and that it shows as an entry of its own, of kind other, completed; it returns that entry and the updates.
func (e *env) oneQuestionEntry() (*acp.SessionUpdateToolCall, []acp.SessionNotification) {
	e.t.Helper()
	ups, perms := e.ed.Snapshot()
	if len(perms) != 1 || perms[0].ToolCall.ToolCallId != "garuda-question-1" {
		e.t.Fatalf("questions %+v", perms)
	}
	tc, st, _ := editor.ToolCall(ups, "garuda-question-1")
	if tc == nil || tc.Kind != acp.ToolKindOther || st != acp.ToolCallStatusCompleted {
		e.t.Fatalf("the question's entry %+v, status %q", tc, st)
	}
	return tc, ups
}

// wantCancelledCall checks what the editor was told of a cancelled call: the prompt stopped cancelled, the call
// failed, and a line of Garuda's names it by its title (editor.WantCancelledCall).
func wantCancelledCall(t *testing.T, e *env, id, title string, r acp.PromptResponse) {
	t.Helper()
	if r.StopReason != acp.StopReasonCancelled {
		t.Errorf("stop %q", r.StopReason)
	}
	e.ed.WantCancelledCall(t, id, title)
}

// waitingAnswer blocks until the request's context ends, like an editor whose user never answers.
func waitingAnswer(ctx context.Context, _ acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	<-ctx.Done()
	return acp.RequestPermissionResponse{}, ctx.Err()
}

// resetFake replaces the scripted answers left: a cancelled turn leaves its unused steps behind.
func resetFake(e *env, steps ...model.Step) *model.FakeClient {
	for e.fake.Remaining() > 0 {
		e.fake.Stream(context.Background(), model.Request{}, discard{})
	}
	e.fake.Push(steps...)
	return e.fake
}

type discard struct{}

func (discard) Delta(model.DeltaKind, string) {}

// sleeperAlive reports whether a process runs "sleep <arg>".
func sleeperAlive(arg string) bool { return len(testproc.Live("sleep "+arg)) > 0 }

// raw writes lines to the agent's stdin in one write, in order, as an editor that sends them back to back. An agent
// that stopped reading fails the test instead of hanging it.
func (e *env) raw(lines ...string) {
	e.t.Helper()
	done := make(chan struct{})
	go func() {
		e.stdin.Write([]byte(strings.Join(lines, "\n") + "\n"))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(waitLimit):
		e.t.Errorf("the agent did not read a message within %v", waitLimit)
	}
}

// rawResponse waits (at most d) for the response to the request with the string id, and returns it decoded.
func (e *env) rawResponse(id string, d time.Duration) (map[string]any, bool) {
	marker := fmt.Sprintf(`"id":%q`, id)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, l := range e.lines() {
			if strings.Contains(l, marker) {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					e.t.Fatalf("response %s is not JSON: %v", l, err)
				}
				return m, true
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil, false
}

func promptLine(id, sid, text string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "session/prompt",
		"params": map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}})
	return string(b)
}

func cancelLine(sid string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sid)
}
