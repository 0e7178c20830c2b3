package acpagent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/test/release"

	"github.com/garuda-dev/garuda/internal/testproc"
)

// These tests build garuda and garuda-exec and drive `garuda acp` as an editor does, against a local fake
// OpenAI-compatible model server.

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds both binaries once per test run, side by side (garuda finds garuda-exec beside itself).
func binaries(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binaries; skipped with -short")
	}
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "garuda-bin")
		if buildErr != nil {
			return
		}
		out, err := release.Command("../..", "", binDir, "./cmd/garuda", "./cmd/garuda-exec").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// fakeOpenAI answers chat-completion requests with scripted streams, in order.
type fakeOpenAI struct {
	mu      sync.Mutex
	answers [][]string // each answer: the JSON chunks of one stream
	bodies  []string
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(b))
	var chunks []string
	if len(f.answers) > 0 {
		chunks, f.answers = f.answers[0], f.answers[1:]
	}
	f.mu.Unlock()
	if chunks == nil {
		http.Error(w, `{"error":{"message":"no scripted answer"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func chunk(delta string, finish string) string {
	fin := "null"
	if finish != "" {
		fin = fmt.Sprintf("%q", finish)
	}
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`, delta, fin)
}

func textAnswer(text string) []string {
	return []string{chunk(fmt.Sprintf(`{"role":"assistant","content":%q}`, text), ""), chunk(`{}`, "stop")}
}

func bashAnswer(id, command string) []string {
	args, _ := json.Marshal(map[string]string{"command": command})
	return []string{
		chunk(fmt.Sprintf(`{"role":"assistant","tool_calls":[{"index":0,"id":%q,"type":"function","function":{"name":"bash","arguments":%q}}]}`, id, string(args)), ""),
		chunk(`{}`, "tool_calls"),
	}
}

// proc is a running `garuda acp` with the SDK's client on its stdio.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	conn   *acp.ClientSideConnection
	ed     *editor
	root   string
	mu     sync.Mutex
	stdout []string
	waited chan error
}

func startGaruda(t *testing.T, model *fakeOpenAI) *proc {
	t.Helper()
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	models := fmt.Sprintf(`{"default":"fake","providers":{"local":{"type":"openai","base_url":%q,"api_key_env":"LOCAL_API_KEY"}},"models":{"fake":{"provider":"local","id":"fake-model"}}}`, srv.URL+"/v1")
	return startGarudaIn(t, t.TempDir(), models)
}

// startGarudaIn starts `garuda acp` in base/proj with base/garuda-home as GARUDA_HOME and models as its
// models.json: a second start in the same base is a restart.
func startGarudaIn(t testing.TB, base, models string) *proc {
	t.Helper()
	bin := binaries(t)
	home := filepath.Join(base, "garuda-home")
	root := filepath.Join(base, "proj")
	for _, d := range []string{home, root, filepath.Join(base, "home"), filepath.Join(base, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "models.json"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "garuda"), "acp")
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(base, "home"), "GARUDA_HOME=" + home, "TMPDIR=" + filepath.Join(base, "tmp"), "LOCAL_API_KEY=local-key"}
	cmd.Stderr = testWriter{t}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stdin: stdin, ed: newEditor(), root: root, waited: make(chan error, 1)}
	tapR, tapW := io.Pipe()
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.stdout = append(p.stdout, sc.Text())
			p.mu.Unlock()
			tapW.Write(append(sc.Bytes(), '\n'))
		}
		tapW.Close()
		p.waited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-p.waited:
		case <-time.After(waitLimit):
			cmd.Process.Kill()
		}
	})
	p.conn = acp.NewClientSideConnection(p.ed, stdin, tapR)
	return p
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("garuda stderr: %s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func (p *proc) ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// brokerPIDs lists the running garuda-exec processes of the built binary.
func brokerPIDs(bin string) []int { return testproc.OfExe(filepath.Join(bin, "garuda-exec")) }

func TestProcessStdoutOnlyProtocolAndCleanExit(t *testing.T) {
	m := &fakeOpenAI{answers: [][]string{bashAnswer("call_1", "echo hello; echo to-stdout; echo to-stderr >&2"), textAnswer("done")}}
	p := startGaruda(t, m)
	if _, err := p.conn.Initialize(p.ctx(t), acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	ns, err := p.conn.NewSession(p.ctx(t), acp.NewSessionRequest{Cwd: p.root, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.conn.Prompt(p.ctx(t), acp.PromptRequest{SessionId: ns.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("say hello")}})
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", res, err)
	}
	ups, _ := p.ed.snapshot()
	if _, st, texts := toolCall(ups, "call_1"); st != acp.ToolCallStatusCompleted || !strings.Contains(strings.Join(texts, ""), "hello") {
		t.Errorf("bash call %q %q", st, texts)
	}
	if len(brokerPIDs(binDir)) == 0 {
		t.Fatal("negative control: no garuda-exec process found while garuda runs")
	}
	p.stdin.Close()
	select {
	case err := <-p.waited:
		if err != nil {
			t.Errorf("garuda acp exited with %v after stdin closed, want 0", err)
		}
		p.waited <- err
	case <-time.After(waitLimit):
		t.Fatal("garuda acp did not exit after stdin closed")
	}
	p.mu.Lock()
	lines := append([]string(nil), p.stdout...)
	p.mu.Unlock()
	if len(lines) == 0 {
		t.Fatal("no stdout at all")
	}
	for _, l := range lines {
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal([]byte(l), &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Errorf("stdout line is not JSON-RPC: %q", l)
		}
	}
	deadline := time.Now().Add(waitLimit)
	for len(brokerPIDs(binDir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("garuda-exec still running after garuda exited: %v", brokerPIDs(binDir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestProcessCancelSleep(t *testing.T) {
	m := &fakeOpenAI{answers: [][]string{bashAnswer("call_s", "sleep 60.75")}}
	p := startGaruda(t, m)
	if _, err := p.conn.Initialize(p.ctx(t), acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	ns, err := p.conn.NewSession(p.ctx(t), acp.NewSessionRequest{Cwd: p.root, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan acp.PromptResponse, 1)
	go func() {
		res, err := p.conn.Prompt(p.ctx(t), acp.PromptRequest{SessionId: ns.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("sleep")}})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	deadline := time.Now().Add(waitLimit)
	for !sleeperAlive("60.75") {
		if time.Now().After(deadline) {
			t.Fatal("the sleep never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.conn.Cancel(p.ctx(t), acp.CancelNotification{SessionId: ns.SessionId})
	res := <-done
	if res.StopReason != acp.StopReasonCancelled {
		t.Errorf("stop %q", res.StopReason)
	}
	ups, _ := p.ed.snapshot()
	if !strings.Contains(messages(ups), "Garuda: $ sleep 60.75 cancelled.") {
		t.Errorf("messages %q", messages(ups))
	}
	if _, st, _ := toolCall(ups, "call_s"); st != acp.ToolCallStatusFailed {
		t.Errorf("status %q", st)
	}
	for sleeperAlive("60.75") {
		if time.Now().After(deadline) {
			t.Fatal("sleep 60.75 survived the cancel")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
