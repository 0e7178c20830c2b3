package test

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker/mcphost/mcptest"
	"github.com/garuda-dev/garuda/test/release"

	"github.com/garuda-dev/garuda/internal/testproc"
)

// bins holds the binaries built once for this test run, in a folder every user may read (the unprivileged tests
// run them as nobody).
var bins struct {
	dir, garuda, exec string
	self              string // a copy of this test binary that others may run
	err               error
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if len(os.Args) > 2 && os.Args[1] == mcptest.Arg {
		return mcptest.Serve(os.Args[2]) // the MCP tests' server, run by the broker in the sandbox
	}
	// Re-run as a tiny client: connect to a unix socket and exit 0 if the kernel let us.
	if path := os.Getenv("GARUDA_TEST_CONNECT"); path != "" {
		c, err := net.Dial("unix", path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		c.Close()
		return 0
	}
	dir, err := os.MkdirTemp("", "garuda-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bins.dir = dir
	bins.garuda = filepath.Join(dir, "garuda")
	bins.exec = filepath.Join(dir, "garuda-exec")
	// Tests never read the real /etc/garuda/policy.json: the managed policy path is fixed at build time.
	ld := "-X github.com/garuda-dev/garuda/broker.ManagedPolicyPath=" + filepath.Join(dir, "managed-policy.json")
	bins.self = filepath.Join(dir, "test.bin")
	if data, err := os.ReadFile(os.Args[0]); err == nil {
		os.WriteFile(bins.self, data, 0o755)
	}
	for _, b := range [][2]string{{bins.garuda, "./cmd/garuda"}, {bins.exec, "./cmd/garuda-exec"}} {
		if out, err := release.Command("..", ld, b[0], b[1]).CombinedOutput(); err != nil {
			bins.err = fmt.Errorf("build %s: %v\n%s", b[1], err, out)
			break
		}
	}
	return m.Run()
}

// fakeModels is a models.json whose default model "fake" is served by a fake Anthropic provider at url, its key in
// LOCAL_API_KEY.
func fakeModels(url string) string {
	return fmt.Sprintf(`{"default":"fake","providers":{"local":{"type":"anthropic","base_url":%q,"api_key_env":"LOCAL_API_KEY"}},`+
		`"models":{"fake":{"provider":"local","id":"fake-model"}}}`, url)
}

func needBins(t *testing.T) {
	t.Helper()
	if bins.err != nil {
		t.Fatal(bins.err)
	}
}

// openDir makes a temp folder that other users may enter (for tests that run as nobody).
func openDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for p := d; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	return d
}

// editor is `garuda acp` started as an editor starts it.
type editor struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *syncBuffer
	lines  []string
	nextID int
}

func startEditor(t *testing.T, home string, env ...string) *editor {
	t.Helper()
	needBins(t)
	cmd := exec.Command(bins.garuda, "acp")
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + home, "HOME=" + home}, env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	e := &editor{t: t, cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout), stderr: &syncBuffer{}}
	cmd.Stderr = e.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return e
}

// request sends a JSON-RPC request and returns its response, failing on any stdout line that is not JSON-RPC.
func (e *editor) request(method string, params any) map[string]any {
	e.t.Helper()
	e.nextID++
	id := e.nextID
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := e.stdin.Write(append(msg, '\n')); err != nil {
		e.t.Fatalf("write %s: %v", method, err)
	}
	for {
		line, err := e.out.ReadString('\n')
		if err != nil {
			e.t.Fatalf("read the answer to %s: %v\nstderr:\n%s", method, err, e.stderr)
		}
		e.lines = append(e.lines, line)
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
			e.t.Fatalf("stdout carried a line that is not JSON-RPC: %q", line)
		}
		if idv, ok := m["id"].(float64); ok && int(idv) == id && m["method"] == nil {
			return m
		}
	}
}

// closeAndWait closes stdin and waits for the exit.
func (e *editor) closeAndWait() (int, time.Duration) {
	e.t.Helper()
	start := time.Now()
	e.stdin.Close()
	// Whatever else stdout still carries must be JSON-RPC too.
	rest, _ := io.ReadAll(e.out)
	for _, l := range strings.Split(strings.TrimSpace(string(rest)), "\n") {
		if l != "" && !json.Valid([]byte(l)) {
			e.t.Errorf("stdout carried a line that is not JSON-RPC: %q", l)
		}
	}
	done := make(chan error, 1)
	go func() { done <- e.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		e.cmd.Process.Kill()
		e.t.Fatalf("garuda acp did not exit after stdin closed\nstderr:\n%s", e.stderr)
	}
	return e.cmd.ProcessState.ExitCode(), time.Since(start)
}

// waitGone waits until no process runs path, or fails.
func waitGone(t *testing.T, path string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := testproc.OfExe(path)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of %s still running: %v", filepath.Base(path), left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a strings.Builder that a process may write while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls until the buffer holds sub.
func (s *syncBuffer) waitFor(sub string, within time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(s.String(), sub) {
			return true
		}
	}
	return strings.Contains(s.String(), sub)
}

// The shipped binaries are static and leave out grpc's tracing (test/release): no dynamic loader, no libc mapped
// in either process, and no html/template, whose reflection would keep every exported method linked.
func TestShippedBinariesAreStaticAndLean(t *testing.T) {
	needBins(t)
	for _, bin := range []string{bins.garuda, bins.exec} {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has a dynamic loader (PT_INTERP): built with cgo", filepath.Base(bin))
			}
		}
		syms, err := f.Symbols()
		if err != nil {
			t.Fatal(err)
		}
		var linked bool
		var unwanted string
		for _, s := range syms {
			if strings.HasPrefix(s.Name, "golang.org/x/net/trace.") || strings.HasPrefix(s.Name, "html/template.") {
				unwanted = s.Name
			}
			linked = linked || strings.HasPrefix(s.Name, "google.golang.org/grpc.")
		}
		if unwanted != "" {
			t.Errorf("%s links %s: built without -tags %s", filepath.Base(bin), unwanted, release.Tags)
		}
		if !linked {
			t.Errorf("%s has no grpc symbols: the check above looked at nothing", filepath.Base(bin))
		}
	}
}
