// Package brokertest serves a real broker (broker.NewServer) in process on a unix socket, with a temporary project
// root and GARUDA_HOME, and calls it as a front end does; for tests only (test/attacks, the broker's own tests).
package brokertest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/garuda-dev/garuda/broker"
	"github.com/garuda-dev/garuda/broker/audit"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Env is one broker, served in process on a unix socket, with a project root and a GARUDA_HOME.
type Env struct {
	t    testing.TB
	Sock string
	Root string
	Home string
	Svc  *broker.Service
}

// New serves a broker for a project root and a GARUDA_HOME in a temporary folder.
func New(t testing.TB) *Env {
	t.Helper()
	dir := t.TempDir()
	return NewIn(t, dir, filepath.Join(dir, "project"), filepath.Join(dir, "home"))
}

// NewAt is New with a chosen root and GARUDA_HOME (for a home inside the root, as when the project is the user's
// own home folder).
func NewAt(t testing.TB, root, home string) *Env {
	t.Helper()
	return NewIn(t, t.TempDir(), root, home)
}

// NewIn serves a broker on a socket in dir, for the project root and GARUDA_HOME given, to the uids given (a shared
// broker), or to this process's own uid when none is.
func NewIn(t testing.TB, dir, root, home string, uids ...uint32) *Env {
	t.Helper()
	e := &Env{t: t, Sock: filepath.Join(dir, "b.sock"), Root: root, Home: home}
	os.MkdirAll(e.Root, 0o755)
	os.MkdirAll(e.Home, 0o700)
	e.Svc = broker.NewService(broker.Config{Home: e.Home, ManagedPolicy: filepath.Join(dir, "managed.json"), Version: "test"})
	if len(uids) == 0 {
		uids = []uint32{uint32(os.Getuid())}
	}
	srv := broker.NewServer(e.Svc, uids)
	ln, err := net.Listen("unix", e.Sock)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { e.Svc.Shutdown(); srv.Stop() })
	return e
}

// Client is one connection to the broker, as one front end.
func (e *Env) Client() execv1.ExecServiceClient {
	e.t.Helper()
	_, c := Dial(e.t, e.Sock)
	return c
}

// Dial connects to a broker's socket, as one front end; the connection is closed when the test ends.
func Dial(t testing.TB, sock string) (*grpc.ClientConn, execv1.ExecServiceClient) {
	t.Helper()
	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc, execv1.NewExecServiceClient(cc)
}

// Open opens a session on the root in build mode and returns its id.
func (e *Env) Open(c execv1.ExecServiceClient) string {
	e.t.Helper()
	r, err := c.OpenSession(context.Background(), &execv1.OpenSessionRequest{Root: e.Root, Mode: execv1.Mode_MODE_BUILD})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.SessionId
}

// Script writes an executable bash script into $GARUDA_HOME/hooks/ (where users keep theirs) and returns its path.
func (e *Env) Script(t testing.TB, name, body string) string {
	t.Helper()
	dir := filepath.Join(e.Home, "hooks")
	os.MkdirAll(dir, 0o755)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/bash\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// Settings writes the user's settings ($GARUDA_HOME/settings.json).
func (e *Env) Settings(t testing.TB, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.Home, "settings.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Team writes the team policy the broker reads ($GARUDA_HOME/policy.json).
func (e *Env) Team(t testing.TB, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.Home, "policy.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// MCPStart writes servers (name → definition, as in mcp.json) as the user's mcp.json, opens a session and starts
// its MCP servers, every question answered once; it returns the session and mcp_start's result.
func (e *Env) MCPStart(t testing.TB, c execv1.ExecServiceClient, servers map[string]any) (string, *execv1.Result) {
	t.Helper()
	def, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	MustWrite(t, filepath.Join(e.Home, "mcp.json"), string(def))
	sid := e.Open(c)
	res, _, err := Run(t, Start(t, c, Ctx(t), sid, &execv1.Start{Op: &execv1.Start_McpStart{McpStart: &execv1.McpStart{}}}),
		execv1.Choice_CHOICE_ONCE)
	if err != nil {
		t.Fatalf("mcp_start: %v", err)
	}
	return sid, res
}

// Ctx is a context for one test's calls: 30 seconds at most.
func Ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// Start opens a Call with one operation.
func Start(t testing.TB, c execv1.ExecServiceClient, cx context.Context, sid string, op *execv1.Start) execv1.ExecService_CallClient {
	t.Helper()
	st, err := c.Call(cx)
	if err != nil {
		t.Fatal(err)
	}
	op.SessionId = sid
	if op.CallId == "" {
		op.CallId = "call-1"
	}
	if err := st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Start{Start: op}}); err != nil {
		t.Fatal(err)
	}
	return st
}

// Answer answers the question id with ch.
func Answer(st execv1.ExecService_CallClient, id string, ch execv1.Choice) error {
	return st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Answer{Answer: &execv1.Answer{QuestionId: id, Choice: ch}}})
}

// Next returns the next message that is not progress.
func Next(t testing.TB, st execv1.ExecService_CallClient) (*execv1.CallResponse, error) {
	for {
		m, err := st.Recv()
		if err != nil || m.GetProgress() == nil {
			return m, err
		}
	}
}

// Run answers every question with ch and returns the result.
func Run(t testing.TB, st execv1.ExecService_CallClient, ch execv1.Choice) (*execv1.Result, []*execv1.Question, error) {
	t.Helper()
	var qs []*execv1.Question
	for {
		m, err := Next(t, st)
		if err != nil {
			return nil, qs, err
		}
		if q := m.GetQuestion(); q != nil {
			qs = append(qs, q)
			if err := Answer(st, q.QuestionId, ch); err != nil {
				return nil, qs, err
			}
			continue
		}
		return m.GetResult(), qs, nil
	}
}

// Sh runs a sandboxed command in build mode (answering "once" should anything ask) and returns its result.
func Sh(t testing.TB, c execv1.ExecServiceClient, sid, cmd string) *execv1.Result {
	t.Helper()
	res, _, err := Run(t, Start(t, c, Ctx(t), sid, Bash(cmd)), execv1.Choice_CHOICE_ONCE)
	if err != nil {
		t.Fatalf("%q: %v", cmd, err)
	}
	return res
}

// Process runs one process_manager call (answering "once") and returns its result.
func Process(t testing.TB, c execv1.ExecServiceClient, sid string, p *execv1.ProcessManager) *execv1.Result {
	t.Helper()
	op := &execv1.Start{Op: &execv1.Start_ProcessManager{ProcessManager: p}}
	res, _, err := Run(t, Start(t, c, Ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Write is a write_file operation.
func Write(path, content string) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_WriteFile{WriteFile: &execv1.WriteFile{Path: path, Content: content}}}
}

// Read is a read_file operation.
func Read(path string) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_ReadFile{ReadFile: &execv1.ReadFile{Path: path}}}
}

// Bash is a bash operation (a command in the sandbox unless it asks to leave it).
func Bash(cmd string) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_Bash{Bash: &execv1.Bash{Command: cmd}}}
}

// GrepOp is a grep operation.
func GrepOp(pattern, mode string) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: pattern, OutputMode: mode}}}
}

// GlobOp is a glob operation.
func GlobOp(pattern string) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_Glob{Glob: &execv1.Glob{Pattern: pattern}}}
}

// EditOp is an edit_file operation.
func EditOp(path, old, new string, all bool) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_EditFile{EditFile: &execv1.EditFile{Path: path, OldString: old, NewString: new, ReplaceAll: all}}}
}

// HookEvent is a hook_event operation: a front-end event (UserPromptSubmit, Stop, …) reported to the broker.
func HookEvent(event, prompt, subject string) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_HookEvent{HookEvent: &execv1.HookEvent{Event: event, Prompt: prompt, Subject: subject}}}
}

// HooksJSON is a settings file with one hook: {"hooks": {event: [{"matcher": m, "hooks": [{command…}]}]}}.
func HooksJSON(event, matcher, command string, extra string) string {
	m, _ := json.Marshal(matcher)
	c, _ := json.Marshal(command)
	return fmt.Sprintf(`{"hooks": {%q: [{"matcher": %s, "hooks": [{"type": "command", "command": %s%s}]}]}}`, event, m, c, extra)
}

// MustWrite writes a file, making its folders.
func MustWrite(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FileText is a file's content, or its error in angle brackets.
func FileText(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// AuditRecords reads every record of the broker's audit folder, in order, and fails when a chain is broken.
func AuditRecords(t testing.TB, home string) []audit.Record {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(home, "audit", "*.jsonl"))
	var out []audit.Record
	for _, f := range files {
		if _, err := audit.Verify(f); err != nil {
			t.Fatalf("the audit chain is broken: %v", err)
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r audit.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		fh.Close()
	}
	return out
}

// Exists reports whether something is at p (a link is not followed).
func Exists(p string) bool { _, err := os.Lstat(p); return err == nil }
