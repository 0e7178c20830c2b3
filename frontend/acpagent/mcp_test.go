package acpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"google.golang.org/grpc"

	"github.com/garuda-dev/garuda/broker/mcphost/mcptest"
	"github.com/garuda-dev/garuda/frontend/brokerconn"
	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/internal/testproc"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
	"github.com/garuda-dev/garuda/test/editor"
	"github.com/garuda-dev/garuda/test/nobody"

	"github.com/garuda-dev/garuda/internal/testenv"
)

// mcpJSON is a .mcp.json with the test binary as the stdio server name, in mode, with extra args and env.
func mcpJSON(t testing.TB, name, mode string, env map[string]string, extra ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	def := map[string]any{"command": exe, "args": append([]string{mcptest.Arg, mode}, extra...)}
	if env != nil {
		def["env"] = env
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: def}})
	return string(b)
}

// consentQuestions are the permission requests of consent entries (garuda-question-<n>) about MCP servers.
func consentQuestions(perms []acp.RequestPermissionRequest) []acp.RequestPermissionRequest {
	var out []acp.RequestPermissionRequest
	for _, p := range perms {
		if strings.HasPrefix(string(p.ToolCall.ToolCallId), "garuda-question-") && p.ToolCall.Title != nil &&
			strings.Contains(*p.ToolCall.Title, "MCP server") {
			out = append(out, p)
		}
	}
	return out
}

func permText(p acp.RequestPermissionRequest) string {
	var b strings.Builder
	for _, c := range p.ToolCall.Content {
		if c.Content != nil && c.Content.Content.Text != nil {
			b.WriteString(c.Content.Content.Text.Text)
		}
	}
	return b.String()
}

func offered(req model.Request, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// A project's MCP server: its consent is asked first (what runs, variable names but not values), it starts in the
// sandbox, the model is offered its tools, a call is asked about as server/tool (kind other) and its result reaches
// the model, end to end through a real broker. The consent is pinned: the next session does not ask; a changed
// definition asks again.
func TestMCPProjectServerEndToEnd(t *testing.T) {
	base := t.TempDir()
	e := newEnvIn(t, base)
	e.write(".mcp.json", mcpJSON(t, "test", mcptest.Good, map[string]string{"MCPTEST_MARK": "started", "API_TOKEN": "s3cr3t-value"}))
	sid := e.newSession()
	e.fake.Push(tool("toolu_m", "mcp__test__echo", `{"text":"through the broker"}`), model.TextStep("done"))
	e.promptOK(sid, "use the tool")

	_, perms := e.ed.Snapshot()
	qs := consentQuestions(perms)
	if len(qs) != 1 {
		t.Fatalf("%d consent questions: %+v", len(qs), perms)
	}
	q := permText(qs[0])
	for _, want := range []string{`MCP server "test"`, ".mcp.json:1", mcptest.Arg, "API_TOKEN", "MCPTEST_MARK", "no network"} {
		if !strings.Contains(q, want) {
			t.Errorf("the consent question lacks %q:\n%s", want, q)
		}
	}
	if strings.Contains(q, "s3cr3t-value") {
		t.Errorf("the consent question shows a variable's value:\n%s", q)
	}
	if e.read("started") == "" {
		t.Error("the server did not run in the project folder")
	}
	reqs := e.fake.Requests()
	if len(reqs) < 2 || !offered(reqs[0], "mcp__test__echo") {
		t.Fatalf("the model was not offered the MCP tool: %+v", reqs)
	}
	if !strings.Contains(fmt.Sprint(reqs[1].Messages), "echo: through the broker") {
		t.Errorf("the result did not reach the model: %v", reqs[1].Messages)
	}
	ups, perms := e.ed.Snapshot()
	tc, st, _ := editor.ToolCall(ups, "toolu_m")
	if tc == nil || tc.Title != "test/echo" || tc.Kind != acp.ToolKindOther || st != acp.ToolCallStatusCompleted {
		t.Errorf("tool call: %+v %s", tc, st)
	}
	asked := false
	for _, p := range perms {
		asked = asked || string(p.ToolCall.ToolCallId) == "toolu_m" && strings.Contains(permText(p), "through the broker")
	}
	if !asked {
		t.Error("the MCP call was not asked about with its arguments (echo's readOnlyHint must loosen nothing)")
	}
	cons, _ := os.ReadFile(filepath.Join(e.home, "consents.json"))
	if !strings.Contains(string(cons), `"kind": "mcp_server"`) {
		t.Errorf("consents.json: %s", cons)
	}
	// The audit log names the server that started and what it runs.
	logs, _ := filepath.Glob(filepath.Join(e.home, "audit", "*.jsonl"))
	var audit []byte
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		audit = append(audit, b...)
	}
	if !strings.Contains(string(audit), `"op":"mcp_start","input":"start the session's MCP servers: test (`) ||
		!strings.Contains(string(audit), `"event":"decision","op":"mcp_start","input":"test (`) ||
		!strings.Contains(string(audit), mcptest.Arg+" good") {
		t.Errorf("the audit log does not name the server started:\n%s", audit)
	}

	// A new session: the pinned consent holds.
	sid2 := e.newSession()
	e.fake.Push(model.TextStep("ok"))
	e.promptOK(sid2, "again")
	_, perms = e.ed.Snapshot()
	if n := len(consentQuestions(perms)); n != 1 {
		t.Errorf("a consented server was asked about again (%d questions)", n)
	}
	// A changed definition asks again.
	e.write(".mcp.json", mcpJSON(t, "test", mcptest.Good, nil, "--changed"))
	sid3 := e.newSession()
	e.fake.Push(model.TextStep("ok"))
	e.promptOK(sid3, "changed")
	_, perms = e.ed.Snapshot()
	if n := len(consentQuestions(perms)); n != 2 {
		t.Errorf("a changed definition was not asked about (%d questions):\n%s", n, editor.Messages(updatesOf(e.ed)))
	}
}

// A denied server never starts, and is not asked about again in the session; the user's own mcp.json servers are
// trusted without a question.
func TestMCPDeniedNeverStartsUserTrusted(t *testing.T) {
	e := newEnv(t)
	e.write(".mcp.json", mcpJSON(t, "proj", mcptest.Good, map[string]string{"MCPTEST_MARK": "proj-started"}))
	e.writeHome("mcp.json", mcpJSON(t, "mine", mcptest.Good, map[string]string{"MCPTEST_MARK": "mine-started"}))
	e.ed.Answer = editor.Always("deny")
	sid := e.newSession()
	e.fake.Push(model.TextStep("one"), model.TextStep("two"))
	e.promptOK(sid, "first")
	e.promptOK(sid, "second")
	_, perms := e.ed.Snapshot()
	qs := consentQuestions(perms)
	if len(qs) != 1 || !strings.Contains(*qs[0].ToolCall.Title, `"proj"`) {
		t.Fatalf("consent questions: %d", len(qs))
	}
	if e.read("proj-started") != "" {
		t.Error("a denied server started")
	}
	if e.read("mine-started") == "" {
		t.Error("the user's own server did not start")
	}
	for _, r := range e.fake.Requests() {
		if offered(r, "mcp__proj__echo") || !offered(r, "mcp__mine__echo") {
			t.Errorf("tools offered: %+v", r.Tools)
		}
	}
	if !strings.Contains(editor.Messages(updatesOf(e.ed)), `MCP server "proj"`) {
		t.Error("no notice says the denied server was not started")
	}
}

// updatesOf is a copy of the updates ed has recorded so far.
func updatesOf(ed *editor.Editor) []acp.SessionNotification {
	ups, _ := ed.Snapshot()
	return ups
}

// A stdio server runs in the command sandbox: it cannot write outside the project folder nor reach the network, and
// the protected paths (git hooks) are read-only to it as to a command.
// The negative controls: the same write and the same connection work from outside the sandbox.
func TestMCPServerIsSandboxed(t *testing.T) {
	e := newEnv(t)
	e.writeHome("mcp.json", mcpJSON(t, "box", mcptest.Good, nil))
	outside := filepath.Join(filepath.Dir(e.root), "outside.txt")
	ln := testenv.ClosingListener(t)
	if out, err := exec.Command("git", "init", "-q", e.root).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	sid := e.newSession()
	e.fake.Push(
		tool("toolu_h", "mcp__box__write", `{"path":".git/hooks/pre-commit"}`),
		tool("toolu_w", "mcp__box__write", fmt.Sprintf(`{"path":%q}`, outside)),
		tool("toolu_d", "mcp__box__dial", fmt.Sprintf(`{"addr":%q}`, ln.Addr().String())),
		tool("toolu_in", "mcp__box__write", `{"path":"inside.txt"}`),
		model.TextStep("done"))
	e.promptOK(sid, "try")
	ups, _ := e.ed.Snapshot()
	for id, want := range map[string]string{"toolu_w": "write failed", "toolu_d": "dial failed", "toolu_h": "write failed"} {
		if _, st, texts := editor.ToolCall(ups, id); st != acp.ToolCallStatusFailed || !strings.Contains(strings.Join(texts, "\n"), want) {
			t.Errorf("%s: %s %q, want failed with %q", id, st, texts, want)
		}
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("the server wrote outside the project folder")
	}
	if e.read("inside.txt") == "" {
		t.Errorf("the server could not write in the project folder:\n%s", e.ed.Dump())
	}
	// Negative controls: without the sandbox the write and the connection succeed.
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatalf("control: %v", err)
	}
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	c.Close()
}

// A server's process tree, and what it started in a session of its own, dies with the ACP session.
func TestMCPProcessTreeDiesWithTheSession(t *testing.T) {
	e := newEnv(t)
	e.writeHome("mcp.json", mcpJSON(t, "tree", mcptest.Good, nil))
	secs := fmt.Sprintf("1000.%d", time.Now().UnixNano()%1000000)
	sid := e.newSession()
	e.fake.Push(tool("toolu_s", "mcp__tree__spawn", fmt.Sprintf(`{"secs":%q}`, secs)), model.TextStep("done"))
	e.promptOK(sid, "spawn")
	if n := sleepers(secs); n != 1 {
		t.Fatalf("%d processes of the spawn, want 1", n)
	}
	if _, err := e.conn.CloseSession(e.ctx(), acp.CloseSessionRequest{SessionId: acp.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLimit)
	for sleepers(secs) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server's process outlived its session")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMCPSandboxAsNobody reruns the tests of a stdio server's sandbox as the unprivileged user nobody, where the
// sandbox runs in a user namespace: it cannot write outside the root, reach a 127.0.0.1 listener or write
// .git/hooks, and its setsid grandchild dies with the session.
func TestMCPSandboxAsNobody(t *testing.T) {
	nobody.Rerun(t, "^TestMCP(ServerIsSandboxed|ProcessTreeDiesWithTheSession)$", "TestMCPServerIsSandboxed",
		"TestMCPProcessTreeDiesWithTheSession")
}

// sleepers counts the processes running `sleep secs`.
func sleepers(secs string) int {
	n := 0
	for _, p := range testproc.Holding("sleep " + secs) {
		if p.Cmdline == "sleep "+secs {
			n++
		}
	}
	return n
}

// everythingServer is the reference server's entry point, installed by .ci/run into the repository's .tools.
const everythingServer = "../../.tools/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

// The reference server @modelcontextprotocol/server-everything (npm), run by the broker in the sandbox: its tools
// are offered and its echo answers. It fails, not skips, where the server is not installed.
func TestMCPReferenceServerEverything(t *testing.T) {
	entry, err := filepath.Abs(everythingServer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("the reference MCP server is not installed (%v): run `cd .tools && npm install "+
			"@modelcontextprotocol/server-everything@2026.8.31`, as .ci/run does", err)
	}
	e := newEnv(t)
	def, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": "node",
		"args": []string{entry, "stdio"}}}})
	e.writeHome("mcp.json", string(def))
	sid := e.newSession()
	e.fake.Push(tool("toolu_e", "mcp__everything__echo", `{"message":"hello everything"}`), model.TextStep("done"))
	e.promptOK(sid, "echo")
	reqs := e.fake.Requests()
	if len(reqs) < 2 || !offered(reqs[0], "mcp__everything__echo") {
		t.Fatalf("the reference server's tools were not offered:\n%s", editor.Messages(updatesOf(e.ed)))
	}
	if !strings.Contains(fmt.Sprint(reqs[1].Messages), "hello everything") {
		t.Errorf("the echo did not reach the model: %v", reqs[1].Messages)
	}
}

// The settings grammar decides MCP calls: an allow rule for mcp__server__tool asks nothing; team policy's
// mcp_servers deny list keeps a server from starting at all, even the user's own.
func TestMCPRulesAndTeamPolicy(t *testing.T) {
	e := newEnv(t)
	both, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"ok":     json.RawMessage(mcpDef(t, mcptest.Good)),
		"banned": json.RawMessage(mcpDef(t, mcptest.Good)),
	}})
	for name, data := range map[string]string{
		"mcp.json":      string(both),
		"settings.json": `{"permissions": {"allow": ["mcp__ok__echo"]}}`,
		"policy.json":   `{"mcp_servers": {"deny": ["name:banned"]}}`,
	} {
		e.writeHome(name, data)
	}
	sid := e.newSession()
	e.fake.Push(tool("toolu_a", "mcp__ok__echo", `{"text":"allowed"}`), tool("toolu_b", "mcp__ok__big", `{"bytes":1}`), model.TextStep("done"))
	e.promptOK(sid, "go")
	ups, perms := e.ed.Snapshot()
	for _, p := range perms {
		if string(p.ToolCall.ToolCallId) == "toolu_a" {
			t.Error("a call an allow rule covers was asked about")
		}
	}
	asked := false
	for _, p := range perms {
		asked = asked || string(p.ToolCall.ToolCallId) == "toolu_b"
	}
	if !asked {
		t.Error("a call no rule covers was not asked about")
	}
	if _, st, _ := editor.ToolCall(ups, "toolu_a"); st != acp.ToolCallStatusCompleted {
		t.Errorf("allowed call: %s", st)
	}
	if !strings.Contains(editor.Messages(ups), `"banned"`) || !strings.Contains(editor.Messages(ups), "team policy forbids") {
		t.Errorf("no notice of the forbidden server:\n%s", editor.Messages(ups))
	}
	if offered(e.fake.Requests()[0], "mcp__banned__echo") {
		t.Error("a server team policy forbids was started")
	}
}

func mcpDef(t *testing.T, mode string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"command": exe, "args": []string{mcptest.Arg, mode}})
	return string(b)
}

// A result larger than the model's share reaches it as head and tail, the whole saved like command output.
func TestMCPLargeResultIsCut(t *testing.T) {
	e := newEnv(t)
	e.writeHome("mcp.json", mcpJSON(t, "big", mcptest.Good, nil))
	sid := e.newSession()
	e.fake.Push(tool("toolu_b", "mcp__big__big", `{"bytes":200000}`), model.TextStep("done"))
	e.promptOK(sid, "big")
	got := fmt.Sprint(e.fake.Requests()[1].Messages)
	if !strings.Contains(got, "BEGIN") || !strings.Contains(got, "END") || !strings.Contains(got,
		"bytes cut; the whole result is in ") || len(got) > 60000 {
		t.Fatalf("the model got %d bytes", len(got))
	}
	i := strings.Index(got, "the whole result is in ") + len("the whole result is in ")
	path := got[i : i+strings.Index(got[i:], " ...")]
	if b, err := os.ReadFile(path); err != nil || len(b) != 200008 {
		t.Errorf("the saved result %s: %d bytes, %v", path, len(b), err)
	}
}

// The editor's HTTP server: its consent shows the URL and the header names, never their values; the token stays
// in the broker and the server answers.
func TestMCPEditorHTTPServer(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(mcptest.Handler("editor-t0ken"))
	defer srv.Close()
	sid := e.newSession(acp.McpServer{Http: &acp.McpServerHttpInline{Name: "web", Type: "http", Url: srv.URL,
		Headers: []acp.HttpHeader{{Name: "Authorization", Value: "Bearer editor-t0ken"}}}})
	defer e.conn.CloseSession(e.ctx(), acp.CloseSessionRequest{SessionId: acp.SessionId(sid)})
	e.fake.Push(tool("toolu_h", "mcp__web__echo", `{"text":"over http"}`), model.TextStep("done"))
	e.promptOK(sid, "http")
	_, perms := e.ed.Snapshot()
	qs := consentQuestions(perms)
	if len(qs) != 1 {
		t.Fatalf("%d consent questions", len(qs))
	}
	q := permText(qs[0])
	if !strings.Contains(q, srv.URL) || !strings.Contains(q, "Authorization") || strings.Contains(q,
		"editor-t0ken") || !strings.Contains(q, "configured by the editor.") {
		t.Errorf("consent question:\n%s", q)
	}
	if !strings.Contains(fmt.Sprint(e.fake.Requests()[1].Messages), "echo: over http") {
		t.Errorf("the HTTP server's answer did not reach the model:\n%s", editor.Messages(updatesOf(e.ed)))
	}
	for _, l := range e.lines() {
		if strings.Contains(l, "editor-t0ken") && !strings.Contains(l, `"method":"session/new"`) {
			t.Errorf("the token left the broker: %s", l)
		}
	}
}

// A server's prompts join the / menu as /server:prompt, and one typed is the prompt's text for the model.
func TestMCPPromptsInTheSlashMenu(t *testing.T) {
	e := newEnv(t)
	e.writeHome("mcp.json", mcpJSON(t, "test", mcptest.Good, nil))
	sid := e.newSession()
	e.fake.Push(model.TextStep("one"), model.TextStep("two"))
	e.promptOK(sid, "hi")
	inMenu := false
	for _, u := range updatesOf(e.ed) {
		if c := u.Update.AvailableCommandsUpdate; c != nil {
			for _, ac := range c.AvailableCommands {
				inMenu = inMenu || ac.Name == "test:review" && ac.Description == "Review a topic."
			}
		}
	}
	if !inMenu {
		t.Fatalf("the prompt is not in the / menu:\n%s", e.ed.Dump())
	}
	e.promptOK(sid, "/test:review the parser")
	reqs := e.fake.Requests()
	if got := reqs[len(reqs)-1].LastUserText(); !strings.Contains(got, "Please review the parser carefully.") {
		t.Errorf("the model got %q", got)
	}
}

// A resource the user mentions as @server:uri is read from the running server and attached to the prompt; a
// "@file.go:12" that names no server is left alone.
func TestMCPResourceMention(t *testing.T) {
	e := newEnv(t)
	e.writeHome("mcp.json", mcpJSON(t, "test", mcptest.Good, nil))
	sid := e.newSession()
	e.fake.Push(model.TextStep("one"))
	e.promptOK(sid, "look at @test:mem://notes and @main.go:12")
	got := e.fake.Requests()[0].LastUserText()
	if !strings.Contains(got, "Contents of @test:mem://notes:\nthe notes of the server") {
		t.Errorf("the resource was not attached: %q", got)
	}
	if strings.Contains(editor.Messages(updatesOf(e.ed)), "main.go:12 was not attached") {
		t.Error("a file and line was taken for a resource")
	}
}

// Plan mode restarts the stdio servers with the project read-only: a write that worked in build mode fails.
func TestMCPPlanModeRestartsReadOnly(t *testing.T) {
	e := newEnv(t)
	e.writeHome("mcp.json", mcpJSON(t, "box", mcptest.Good, nil))
	sid := e.newSession()
	e.fake.Push(tool("toolu_1", "mcp__box__write", `{"path":"build.txt"}`), model.TextStep("one"))
	e.promptOK(sid, "build")
	if _, err := e.conn.SetSessionMode(e.ctx(), acp.SetSessionModeRequest{SessionId: acp.SessionId(sid), ModeId: "plan"}); err != nil {
		t.Fatal(err)
	}
	e.fake.Push(tool("toolu_2", "mcp__box__write", `{"path":"plan.txt"}`), model.TextStep("two"))
	e.promptOK(sid, "plan")
	if e.read("build.txt") == "" {
		t.Fatal("the write in build mode failed")
	}
	if e.read("plan.txt") != "" {
		t.Error("a server wrote the project in plan mode")
	}
	if _, _, texts := editor.ToolCall(updatesOf(e.ed), "toolu_2"); !strings.Contains(strings.Join(texts, "\n"), "write failed") {
		t.Errorf("the plan-mode write did not run and fail: %q", texts)
	}
	if !strings.Contains(editor.Messages(updatesOf(e.ed)), "plan mode") {
		t.Errorf("no notice of the restart:\n%s", editor.Messages(updatesOf(e.ed)))
	}
}

// askCounter answers every question of a broker call with its choice, and counts them.
type askCounter struct {
	choice execv1.Choice
	n      atomic.Int32
}

func (a *askCounter) Ask(context.Context, *execv1.Question) execv1.Choice {
	a.n.Add(1)
	return a.choice
}

// A tool the model is not offered — its input schema is invalid, or the server lists no such tool — is refused by
// the broker when a front end calls it by its raw name, with a clear message and no question; the server never
// hears of it. Control: a tool of the list is asked about and called.
func TestMCPToolNotOfferedIsRefused(t *testing.T) {
	e := newEnv(t)
	e.writeHome("mcp.json", mcpJSON(t, "raw", mcptest.Many, nil))
	sid := e.newSession()
	asks := &askCounter{choice: execv1.Choice_CHOICE_ONCE}
	r := &brokerconn.Runner{Client: e.broker, SessionID: sid, Approver: asks}
	ctx := e.ctx()
	if _, err := r.Call(ctx, &execv1.Start{Op: &execv1.Start_McpStart{McpStart: &execv1.McpStart{}}}, nil); err != nil {
		t.Fatal(err)
	}
	callTool := func(tool string) *execv1.Result {
		t.Helper()
		res, err := r.Call(ctx, &execv1.Start{Op: &execv1.Start_McpCall{McpCall: &execv1.McpCall{Server: "raw", Tool: tool,
			ArgumentsJson: `{}`}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := callTool("t00001"); res.GetStatus() != execv1.Status_STATUS_COMPLETED || asks.n.Load() != 1 {
		t.Fatalf("control: a tool of the list: %v %q, %d questions", res.GetStatus(), res.GetContent(), asks.n.Load())
	}
	for tool, want := range map[string]string{
		"badschema": `tool "badschema": it is not one of the tools offered to the model, so it cannot be called (its input schema`,
		"nosuch":    `tool "nosuch": it is not one of the tools offered to the model`,
	} {
		res := callTool(tool)
		if res.GetStatus() != execv1.Status_STATUS_FAILED || !strings.Contains(res.GetContent(), want) {
			t.Errorf("%s: %v %q, want failed with %q", tool, res.GetStatus(), res.GetContent(), want)
		}
	}
	if n := asks.n.Load(); n != 1 {
		t.Errorf("%d questions; a call of a tool not offered was asked about", n)
	}
}

// processesWith counts the processes whose command line holds arg as one of its words.
func processesWith(arg string) int {
	n := 0
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), arg) {
			n++
		}
	}
	return n
}

// session/cancel during a running MCP tool call, end to end through a real broker and a sandboxed stdio server: the
// server receives notifications/cancelled (its handler ends what it started and says so), the tool call ends
// failed with the line the spec gives a call the stop ended, the prompt answers cancelled, and the server itself
// runs on for the session's next call; at session/close nothing of it is left.
func TestMCPCancelDuringACall(t *testing.T) {
	e := newEnv(t)
	mark := fmt.Sprintf("--mark-%d", time.Now().UnixNano())
	e.writeHome("mcp.json", mcpJSON(t, "test", mcptest.Good, nil, mark))
	secs := fmt.Sprintf("1000.%d", time.Now().UnixNano()%1000000)
	sid := e.newSession()
	e.fake.Push(tool("toolu_s", "mcp__test__sleep", fmt.Sprintf(`{"secs":%q}`, secs)), model.TextStep("never"))
	done := e.promptInBackground(sid, "sleep")
	deadline := time.Now().Add(waitLimit)
	for sleepers(secs) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("negative control: the tool's work never ran:\n%s", e.ed.Dump())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := processesWith(mark); n == 0 {
		t.Fatal("negative control: no process of the server found")
	}
	if err := e.conn.Cancel(e.ctx(), acp.CancelNotification{SessionId: acp.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	var r acp.PromptResponse
	select {
	case r = <-done:
	case <-time.After(waitLimit):
		t.Fatal("the prompt did not answer after session/cancel")
	}
	wantCancelledCall(t, e, "toolu_s", "test/sleep", r)
	// notifications/cancelled reached the server: its handler's context ended, it stopped its work and said so.
	for e.read("cancelled") == "" || sleepers(secs) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not hear the cancel: file %q, %d sleeps running", e.read("cancelled"), sleepers(secs))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The call was cancelled, not the server: it answers the next prompt's call without a restart.
	e.fake = resetFake(e, tool("toolu_e", "mcp__test__echo", `{"text":"still here"}`), model.TextStep("done"))
	e.promptOK(sid, "echo")
	if _, st, texts := editor.ToolCall(updatesOf(e.ed), "toolu_e"); st != acp.ToolCallStatusCompleted ||
		!strings.Contains(strings.Join(texts, "\n"), "echo: still here") {
		t.Errorf("after the cancel: %s %q", st, texts)
	}
	if m := editor.Messages(updatesOf(e.ed)); strings.Contains(m, "restarted") || strings.Contains(m, "stopped") {
		t.Errorf("the server was stopped by the cancel: %q", m)
	}
	if _, err := e.conn.CloseSession(e.ctx(), acp.CloseSessionRequest{SessionId: acp.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	for processesWith(mark) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server outlived its session")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gitAsUser runs git in dir as the user does afterwards: outside any sandbox, with no global or system config. It
// returns what git printed on its standard output.
func gitAsUser(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	out, _ := cmd.Output()
	return string(out)
}

// plantFSMonitor makes a repository in dir whose git status runs a program that leaves dir/PWNED.
func plantFSMonitor(dir string) string {
	return `printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > fsm && chmod +x fsm && git init -q ` + dir + ` && git -C ` + dir +
		` config core.fsmonitor "$PWD/fsm"`
}

// What stdio servers leave for git to run later is undone by the command guard, as after a command: after a call
// (the check beside the result), and for what it left after its last call, while it runs or at its end. The two servers
// start together and share one guard scan before them. Control: outside the sandbox the same planting makes the
// user's git status run the program.
func TestMCPGuardUndoesWhatServersLeave(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	control := t.TempDir()
	if out, err := exec.Command("sh", "-c", "cd "+control+" && "+plantFSMonitor("nested")).CombinedOutput(); err != nil {
		t.Fatalf("control: %v %s", err, out)
	}
	gitAsUser(t, filepath.Join(control, "nested"), "status")
	if _, err := os.Stat(filepath.Join(control, "nested", "PWNED")); err != nil {
		t.Fatal("control: the planted fsmonitor did not run outside the sandbox")
	}

	e := newEnv(t)
	both, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"a": json.RawMessage(mcpDef(t, mcptest.Good)), "b": json.RawMessage(mcpDef(t, mcptest.Good))}})
	e.writeHome("mcp.json", string(both))
	sid := e.newSession()
	fsmonitor := func(dir string) string {
		return strings.TrimSpace(gitAsUser(t, filepath.Join(e.root, dir), "config", "--local", "core.fsmonitor"))
	}
	// After a call.
	e.fake.Push(tool("toolu_a", "mcp__a__sh", fmt.Sprintf(`{"text":%q}`, plantFSMonitor("nested"))), model.TextStep("done"))
	e.promptOK(sid, "plant")
	if _, st, texts := editor.ToolCall(updatesOf(e.ed), "toolu_a"); st != acp.ToolCallStatusCompleted {
		t.Fatalf("the planting call: %s %q", st, texts)
	}
	deadline := time.Now().Add(waitLimit)
	for fsmonitor("nested") != "" {
		if time.Now().After(deadline) {
			t.Fatal("the fsmonitor a server planted was not undone after its call")
		}
		time.Sleep(20 * time.Millisecond)
	}
	gitAsUser(t, filepath.Join(e.root, "nested"), "status")
	if e.read("nested/PWNED") != "" {
		t.Error("the fsmonitor a server planted ran in the user's git status")
	}
	// Planted after the check that followed its last call: undone while the server runs (the guard's check at a
	// change of the tree) or, at the latest, when the session closes it.
	late := "(sleep 0.5; " + plantFSMonitor("later") + " && touch later-done) >/dev/null 2>&1 &"
	e.fake.Push(tool("toolu_b", "mcp__b__sh", fmt.Sprintf(`{"text":%q}`, late)), model.TextStep("done"))
	e.promptOK(sid, "plant later")
	for _, err := os.Stat(filepath.Join(e.root, "later-done")); err != nil; _, err = os.Stat(filepath.Join(e.root, "later-done")) {
		if time.Now().After(deadline) {
			t.Fatal("the late planting never happened")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := e.conn.CloseSession(e.ctx(), acp.CloseSessionRequest{SessionId: acp.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	if fsmonitor("later") != "" {
		t.Error("what a server left after its last check was not undone at its end")
	}
	gitAsUser(t, filepath.Join(e.root, "later"), "status")
	if e.read("later/PWNED") != "" {
		t.Error("the fsmonitor a server planted before its end ran in the user's git status")
	}
}

// A server's tools/list_changed reaches the model from its next step: a call that adds a tool (the server says so
// before it answers), and the very next model request offers it.
func TestMCPToolListChangedReachesTheNextStep(t *testing.T) {
	e := newEnv(t)
	e.writeHome("mcp.json", mcpJSON(t, "test", mcptest.Good, nil))
	sid := e.newSession()
	e.fake.Push(tool("toolu_g", "mcp__test__grow", `{}`), tool("toolu_a", "mcp__test__added", `{}`), model.TextStep("done"))
	e.promptOK(sid, "grow")
	reqs := e.fake.Requests()
	if len(reqs) != 3 || offered(reqs[0], "mcp__test__added") || !offered(reqs[1], "mcp__test__added") {
		t.Fatalf("the new tool was not offered at the next step: %d requests", len(reqs))
	}
	if _, st, texts := editor.ToolCall(updatesOf(e.ed), "toolu_a"); st != acp.ToolCallStatusCompleted ||
		!strings.Contains(strings.Join(texts, "\n"), "added works") {
		t.Errorf("the new tool: %s %q", st, texts)
	}
}

// A malformed mcp.json is a notice naming the file and the line, and the servers of the other files still start:
// here the project's .garuda/mcp.json, which asks first like .mcp.json.
func TestMCPMalformedFileOthersStillStart(t *testing.T) {
	e := newEnv(t)
	e.writeHome("mcp.json", "{\"mcpServers\": {\n  \"x\": {\"command\": 1}\n}}")
	e.write(".garuda/mcp.json", mcpJSON(t, "gar", mcptest.Good, nil))
	sid := e.newSession()
	e.fake.Push(tool("toolu_g", "mcp__gar__echo", `{"text":"from .garuda"}`), model.TextStep("done"))
	e.promptOK(sid, "go")
	ups, perms := e.ed.Snapshot()
	if m := editor.Messages(ups); !strings.Contains(m, filepath.Join(e.home, "mcp.json")+": line 2") {
		t.Errorf("no notice naming the file and line:\n%s", m)
	}
	if qs := consentQuestions(perms); len(qs) != 1 || !strings.Contains(permText(qs[0]), filepath.Join(".garuda", "mcp.json")) {
		t.Errorf("the .garuda/mcp.json server was not asked about: %d questions", len(qs))
	}
	if _, st, texts := editor.ToolCall(ups, "toolu_g"); st != acp.ToolCallStatusCompleted || !strings.Contains(strings.Join(texts, "\n"),
		"echo: from .garuda") {
		t.Errorf("the .garuda/mcp.json server's call: %s %q", st, texts)
	}
}

// Bad servers through the broker: one that prints garbage, one that advertises 10,000 tools with hidden characters,
// one whose tool floods 100 MB and one that exits mid-call. The session goes on (the good server answers), each
// failure is a clear notice or a failed call, nothing of what they sent reaches the editor raw, and no process of
// theirs is left once the session is closed.
func TestMCPBadServersAreContained(t *testing.T) {
	e := newEnv(t)
	mark := fmt.Sprintf("--mark-%d", time.Now().UnixNano())
	def := func(mode string) json.RawMessage {
		exe, _ := os.Executable()
		b, _ := json.Marshal(map[string]any{"command": exe, "args": []string{mcptest.Arg, mode, mark}})
		return b
	}
	all, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"garbage": def(mcptest.Garbage), "many": def(mcptest.Many),
		"flood": def(mcptest.Flood), "crash": def(mcptest.Good), "good": def(mcptest.Good)}})
	e.writeHome("mcp.json", string(all))
	sid := e.newSession()
	e.fake.Push(tool("toolu_f", "mcp__flood__t00000", `{}`), tool("toolu_c", "mcp__crash__crash", `{}`),
		tool("toolu_e", "mcp__good__echo", `{"text":"still fine"}`), model.TextStep("done"))
	e.promptOK(sid, "go")
	ups, _ := e.ed.Snapshot()
	m := editor.Messages(ups)
	for _, want := range []string{`MCP server "garbage"`, "wrote something other than MCP messages", `"many" offers more than 100 tools`} {
		if !strings.Contains(m, want) {
			t.Errorf("no notice %q:\n%s", want, m)
		}
	}
	for id, want := range map[string]string{"toolu_f": "over 8 MiB", "toolu_c": `MCP server "crash"`} {
		if _, st, texts := editor.ToolCall(ups, id); st != acp.ToolCallStatusFailed || !strings.Contains(strings.Join(texts, "\n"), want) {
			t.Errorf("%s: %s %q, want failed with %q", id, st, texts, want)
		}
	}
	if _, st, texts := editor.ToolCall(ups, "toolu_e"); st != acp.ToolCallStatusCompleted || !strings.Contains(strings.Join(texts, "\n"),
		"echo: still fine") {
		t.Errorf("the good server after the others failed: %s %q", st, texts)
	}
	for _, l := range e.lines() {
		if strings.Contains(l, "hello, this is not JSON-RPC") || strings.ContainsAny(l, "\u200b\u202e") || len(l) > 1<<20 {
			t.Errorf("raw server output reached the editor: %.200q", l)
		}
	}
	if n := processesWith(mark); n == 0 {
		t.Fatal("negative control: no process of the servers found while the session runs")
	}
	if _, err := e.conn.CloseSession(e.ctx(), acp.CloseSessionRequest{SessionId: acp.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLimit)
	for processesWith(mark) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of the servers outlived the session", processesWith(mark))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEditorMCPServersGetANoticeAtTheFirstPrompt(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession(acp.McpServer{Stdio: &acp.McpServerStdio{Name: "fs-server", Command: "/bin/false", Args: []string{},
		Env: []acp.EnvVariable{}}})
	ups, _ := e.ed.Snapshot()
	if m := editor.Messages(ups); m != "" {
		t.Errorf("a message before any prompt: %q", m)
	}
	e.fake.Push(model.TextStep("ok"))
	e.promptOK(sid, "hi")
	ups, _ = e.ed.Snapshot()
	if m := editor.Messages(ups); !strings.Contains(m, "Garuda:") || !strings.Contains(m, "fs-server") {
		t.Errorf("no notice naming the editor's MCP server: %q", m)
	}
}

// mcp_start's result carries the tools of the servers that started, so the turn's first model request needs no
// McpTools call of its own (one round trip less before the first answer), and it lists only what was allowed: the
// user's own server, not the project's server whose consent the user denied.
func TestMCPStartResultCarriesTheTools(t *testing.T) {
	var lists atomic.Int32
	e := newEnv(t, func(_ *env, o *Options) { o.Broker = countingMcpTools{o.Broker, &lists} })
	e.write(".mcp.json", mcpJSON(t, "proj", mcptest.Good, nil))
	if err := os.WriteFile(filepath.Join(e.home, "mcp.json"), []byte(mcpJSON(t, "mine", mcptest.Good, nil)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.ed.Answer = func(ctx context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
		return editor.Selected("deny"), nil
	}
	sid := e.newSession()
	e.fake.Push(model.TextStep("done"))
	e.promptOK(sid, "hi")
	reqs := e.fake.Requests()
	if len(reqs) != 1 || !offered(reqs[0], "mcp__mine__echo") || offered(reqs[0], "mcp__proj__echo") {
		t.Fatalf("the first request's tools: %+v", reqs)
	}
	if n := lists.Load(); n != 0 {
		t.Errorf("the front end asked McpTools %d times before the first request; mcp_start's result has the list", n)
	}
}

// countingMcpTools counts the front end's McpTools calls.
type countingMcpTools struct {
	execv1.ExecServiceClient
	n *atomic.Int32
}

func (c countingMcpTools) McpTools(ctx context.Context, in *execv1.McpToolsRequest, opts ...grpc.CallOption) (*execv1.McpToolsResponse,
	error) {
	c.n.Add(1)
	return c.ExecServiceClient.McpTools(ctx, in, opts...)
}

// A prompt's records wait for the model's first output (holdRecords), but not for a person: while a project server's
// consent, asked before the first model request, is unanswered, the prompt and the title are already in the session
// file. Without the bound on the hold they wait for the answer.
func TestRecordsDoNotWaitForAConsent(t *testing.T) {
	e := newEnv(t)
	e.write(".mcp.json", mcpJSON(t, "proj", mcptest.Good, nil))
	asked, answer := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.ed.Answer = func(ctx context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
		once.Do(func() { close(asked) })
		select {
		case <-answer:
		case <-ctx.Done():
		}
		return editor.Selected("deny"), nil
	}
	sid := e.newSession()
	e.fake.Push(model.TextStep("ok"))
	done := e.promptInBackground(sid, "remember the word PELICAN")
	select {
	case <-asked:
	case <-time.After(waitLimit):
		t.Fatal("the server's consent was not asked")
	}
	e.waitRecorded(sid, "title")
	e.waitRecorded(sid, "prompt")
	close(answer)
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("the turn did not end")
	}
}

// An editor's server entry that is none of the schema's (a stdio server without args or env) is named in a notice
// that says what a server needs, and is not handed to the broker: the SDK decodes it as an HTTP server with no
// type, whose notice was about an empty URL. Well-formed entries pass as they are.
func TestEditorMCPServerOfNoKnownShape(t *testing.T) {
	var p acp.NewSessionRequest
	if err := json.Unmarshal([]byte(`{"cwd":"/p","mcpServers":[
		{"name":"noargs","command":"/bin/srv"},
		{"name":"nocommand","args":[],"env":[]},
		{"name":"ok","command":"/bin/srv","args":[],"env":[]},
		{"type":"http","name":"web","url":"http://127.0.0.1:1/mcp","headers":[]}]}`), &p); err != nil {
		t.Fatal(err)
	}
	servers, notices := mcpServers(p.McpServers)
	var names []string
	for _, s := range servers {
		names = append(names, s.GetName()+":"+s.GetType())
	}
	if !slices.Equal(names, []string{"ok:stdio", "web:http"}) {
		t.Errorf("servers handed to the broker: %v, want ok:stdio and web:http", names)
	}
	if len(notices) != 2 {
		t.Fatalf("notices %q, want one for each malformed entry", notices)
	}
	for i, name := range []string{"noargs", "nocommand"} {
		if n := notices[i]; !strings.Contains(n, `"`+name+`"`) || !strings.Contains(n, "command, args and env") ||
			strings.Contains(n, "url \"\"") {
			t.Errorf("notice %q: want the server's name and what a stdio server needs", n)
		}
	}
}
