package test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/internal/testproc"
	"github.com/garuda-dev/garuda/test/editor"
)

// waitLimit bounds every wait of the process tests: reaching it is a failure, never a measurement.
const waitLimit = editor.WaitLimit

// agent is `garuda acp` started as an editor starts it: the SDK's client (conn, recording in ed) on its stdio,
// every stdout line kept, stderr kept for failures. Every test that starts one checks, once the test is done,
// that stdout carried only JSON-RPC.
type agent struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	conn   *acp.ClientSideConnection
	ed     *editor.Editor
	root   string // the project folder (startAgentIn), or empty
	stderr *testproc.Output
	mu     sync.Mutex
	stdout []string // every line, in order
	waited chan error
}

// startEditor starts `garuda acp` with home as GARUDA_HOME and HOME, PATH=/usr/bin:/bin and env.
func startEditor(t testing.TB, home string, env ...string) *agent {
	t.Helper()
	needBins(t)
	cmd := exec.Command(bins.garuda, "acp")
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + home, "HOME=" + home}, env...)
	return startAgent(t, cmd, "")
}

// startGarudaIn starts `garuda acp` in base/proj with base/garuda-home as GARUDA_HOME and models as its
// models.json, the key LOCAL_API_KEY=local-key: a second start in the same base is a restart.
func startGarudaIn(t testing.TB, base, models string) *agent {
	t.Helper()
	needBins(t)
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
	cmd := exec.Command(bins.garuda, "acp")
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(base, "home"), "GARUDA_HOME=" + home,
		"TMPDIR=" + filepath.Join(base, "tmp"), "LOCAL_API_KEY=local-key"}
	return startAgent(t, cmd, root)
}

// startGarudaWith is startGaruda with files (name: content) in garuda acp's GARUDA_HOME beside models.json.
func startGarudaWith(t testing.TB, model *fakeOpenAI, files map[string]string) *agent {
	t.Helper()
	base := t.TempDir()
	home := filepath.Join(base, "garuda-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(home, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return startGarudaIn(t, base, model.modelsJSON(t))
}

// startGaruda is startGarudaIn a new folder, with model as the OpenAI-compatible provider.
func startGaruda(t testing.TB, model *fakeOpenAI) *agent {
	t.Helper()
	return startGarudaIn(t, t.TempDir(), model.modelsJSON(t))
}

func startAgent(t testing.TB, cmd *exec.Cmd, root string) *agent {
	t.Helper()
	a := &agent{t: t, cmd: cmd, ed: editor.New(), root: root, stderr: &testproc.Output{}, waited: make(chan error, 1)}
	cmd.Stderr = a.stderr
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
	a.stdin = stdin
	tapR, tapW := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				a.mu.Lock()
				a.stdout = append(a.stdout, strings.TrimSuffix(line, "\n"))
				a.mu.Unlock()
				tapW.Write([]byte(line))
			}
			if err != nil {
				break
			}
		}
		tapW.Close()
		a.waited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case err := <-a.waited:
			a.waited <- err
		case <-time.After(waitLimit):
			cmd.Process.Kill()
		}
		a.checkLines()
		if t.Failed() {
			t.Logf("garuda acp's stderr:\n%s", a.stderr)
		}
	})
	a.conn = acp.NewClientSideConnection(a.ed, stdin, tapR)
	return a
}

// lines is every stdout line so far.
func (a *agent) lines() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.stdout...)
}

// checkLines fails the test for any stdout line that is not JSON-RPC 2.0.
func (a *agent) checkLines() {
	for _, l := range a.lines() {
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal([]byte(l), &msg); err != nil || msg.JSONRPC != "2.0" {
			a.t.Errorf("stdout carried a line that is not JSON-RPC: %q", l)
		}
	}
}

func (a *agent) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	a.t.Cleanup(cancel)
	return ctx
}

// initialize sends initialize, as an editor with no capabilities, and fails unless it is answered.
func (a *agent) initialize() acp.InitializeResponse {
	a.t.Helper()
	res, err := a.conn.Initialize(a.ctx(), acp.InitializeRequest{ProtocolVersion: 1})
	if err != nil {
		a.t.Fatalf("initialize: %v\nstderr:\n%s", err, a.stderr)
	}
	return res
}

// newSession opens a session on cwd (the project folder when empty) and fails unless it is answered.
func (a *agent) newSession(cwd string) acp.SessionId {
	a.t.Helper()
	if cwd == "" {
		cwd = a.root
	}
	res, err := a.conn.NewSession(a.ctx(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		a.t.Fatalf("session/new: %v\nstderr:\n%s", err, a.stderr)
	}
	return res.SessionId
}

// prompt sends a text prompt and returns its answer.
func (a *agent) prompt(sid acp.SessionId, text string) (acp.PromptResponse, error) {
	return a.conn.Prompt(a.ctx(), acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
}

// promptEndsTurn sends a text prompt and fails the test unless the turn ends (end_turn).
func (a *agent) promptEndsTurn(sid acp.SessionId, text string) {
	a.t.Helper()
	if res, err := a.prompt(sid, text); err != nil || res.StopReason != acp.StopReasonEndTurn {
		a.t.Fatalf("prompt %q: %+v %v\nstderr:\n%s", text, res, err, a.stderr)
	}
}

// closeAndWait closes stdin and waits for the exit; it returns the exit code and how long the exit took.
func (a *agent) closeAndWait() (int, time.Duration) {
	a.t.Helper()
	start := time.Now()
	a.stdin.Close()
	return a.wait(), time.Since(start)
}

// wait waits for the exit (after a signal, or stdin's close) and returns the exit code.
func (a *agent) wait() int {
	a.t.Helper()
	select {
	case err := <-a.waited:
		a.waited <- err
	case <-time.After(waitLimit):
		a.cmd.Process.Kill()
		a.t.Fatalf("garuda acp did not exit\nstderr:\n%s", a.stderr)
	}
	return a.cmd.ProcessState.ExitCode()
}

// startLogged starts cmd with its stderr kept in log; done receives the result of its Wait.
func startLogged(t testing.TB, cmd *exec.Cmd) (log *testproc.Output, done <-chan error) {
	t.Helper()
	log = &testproc.Output{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	return log, waited
}
