package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/garuda-dev/garuda/broker/mcphost/mcptest"
	"github.com/garuda-dev/garuda/frontend/model/fakeprovider"
	"github.com/garuda-dev/garuda/internal/testenv"
	"github.com/garuda-dev/garuda/test/editor"
)

// The MCP SDK is the broker's alone: garuda does not link it, so that spawn → initialize stays as light as it was.
func TestFrontEndHasNoMCPSDK(t *testing.T) {
	deps := goList(t, "-deps", "./cmd/garuda")
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/modelcontextprotocol/") {
			t.Errorf("garuda links %s; MCP belongs in the broker", d)
		}
	}
	if len(deps) < 10 {
		t.Fatalf("go list found %d packages; the check checks nothing", len(deps))
	}
}

// peakRSS is a process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// childBroker is the garuda-exec that garuda (pid) started.
func childBroker(t testing.TB, pid int) int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: the command name may hold spaces, so read after its closing parenthesis.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", child)); filepath.Base(exe) == "garuda-exec" {
				return child
			}
		}
	}
	t.Fatalf("no garuda-exec child of %d", pid)
	return 0
}

// The built binaries, as an editor runs them, with a stdio server whose tool answers 50 MB: the result is cut while
// the broker reads it (never held whole), the model gets its head and tail, the whole is saved, and the front end
// and the broker together peak under 250 MB of resident memory (issue 21).
func TestProcessMCP50MBResultMemory(t *testing.T) {
	const size = 50_000_000
	m := &fakeOpenAI{answers: [][]string{toolAnswer("call_big", "mcp__big__big", fmt.Sprintf(`{"bytes":%d}`, size)),
		textAnswer("done")}}
	// The server is mcptestserver, built like a release (not the test binary, which make test builds with the race
	// detector: its 50 MB answer then took longer than the wait limit on a loaded machine). What is measured is garuda's
	// and garuda-exec's memory, not the server's.
	def, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"big": map[string]any{"command": mcpTestServer(t), "args": []string{"good"}}}})
	p := startGarudaWith(t, m, map[string]string{
		"mcp.json":      string(def),
		"settings.json": `{"permissions": {"allow": ["mcp__big__big"]}}`,
	})
	p.initialize()
	sid := p.newSession("")
	p.promptEndsTurn(sid, "big")
	front := p.cmd.Process.Pid
	frontPeak, brokerPeak := peakRSS(t, front), peakRSS(t, childBroker(t, front))
	t.Logf("peak resident memory: garuda %d MiB, garuda-exec %d MiB, together %d MiB", frontPeak>>20, brokerPeak>>20,
		(frontPeak+brokerPeak)>>20)
	if frontPeak+brokerPeak >= 250<<20 {
		t.Errorf("garuda and garuda-exec peaked at %d MiB together, want under 250 MiB", (frontPeak+brokerPeak)>>20)
	}
	ups, _ := p.ed.Snapshot()
	if _, st, texts := editor.ToolCall(ups, "call_big"); st != acp.ToolCallStatusCompleted {
		t.Fatalf("the call ended %q: %q\n%s", st, texts, editor.Messages(ups))
	}
	m.mu.Lock()
	body := m.bodies[len(m.bodies)-1]
	m.mu.Unlock()
	var req struct {
		Messages []struct {
			Role    string
			Content json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	got := string(req.Messages[len(req.Messages)-1].Content)
	if !strings.Contains(got, "BEGIN") || !strings.Contains(got, "END") || !strings.Contains(got, "bytes cut") || len(got) > 40000 {
		t.Fatalf("the model got %d bytes: %.300q", len(got), got)
	}
	i := strings.Index(got, "the whole result is in ") + len("the whole result is in ")
	saved := got[i : i+strings.Index(got[i:], " ...")]
	if fi, err := os.Stat(saved); err != nil || fi.Size() != int64(size+len("BEGINEND")) {
		t.Errorf("the whole result %s: %v %v", saved, fi, err)
	}
}

// BenchmarkProcessMCPFirstPromptFiveServers is BenchmarkMCPFirstPromptFiveServers with the built binaries, as an
// editor runs them: the sandbox's helper is garuda-sandbox beside garuda-exec, where in process it is the test
// binary. The difference from BenchmarkProcessMCPFirstPromptNoServers is what listing the tools of 5 servers adds
// (target: under 50 ms). Besides the mean it reports the median prompt (p50-ms: a loaded machine's outliers move
// the mean) and the CPU of the whole process tree per prompt, the untimed session/new and close included (cpu-ms).

func BenchmarkProcessMCPFirstPromptFiveServers(b *testing.B) { benchProcessFirstPrompt(b, 5) }

func BenchmarkProcessMCPFirstPromptOneServer(b *testing.B) { benchProcessFirstPrompt(b, 1) }

func BenchmarkProcessMCPFirstPromptNoServers(b *testing.B) { benchProcessFirstPrompt(b, 0) }

func benchProcessFirstPrompt(b *testing.B, n int) {
	server := mcpTestServer(b)
	m := &fakeOpenAI{}
	servers := map[string]any{}
	for i := range n {
		servers[fmt.Sprintf("s%d", i)] = map[string]any{"command": server, "args": []string{"good"}}
	}
	def, _ := json.Marshal(map[string]any{"mcpServers": servers})
	p := startGarudaWith(b, m, map[string]string{"mcp.json": string(def)})
	ctx := p.ctx()
	if _, err := p.conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		b.Fatal(err)
	}
	broker := childBroker(b, p.cmd.Process.Pid)
	cpu := func() time.Duration { return treeCPU(b, p.cmd.Process.Pid) + treeCPU(b, broker) }
	cpu0 := cpu()
	var prompts []time.Duration
	for b.Loop() {
		b.StopTimer()
		ctx := p.ctx() // each prompt its own wait limit: a long run is no failure
		ns, err := p.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: p.root, McpServers: []acp.McpServer{}})
		if err != nil {
			b.Fatal(err)
		}
		m.mu.Lock()
		m.answers = append(m.answers, textAnswer("ok"))
		m.mu.Unlock()
		b.StartTimer()
		t0 := time.Now()
		res, err := p.conn.Prompt(ctx, acp.PromptRequest{SessionId: ns.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("hi")}})
		prompts = append(prompts, time.Since(t0))
		b.StopTimer()
		if err != nil || res.StopReason != acp.StopReasonEndTurn {
			b.Fatal(res, err)
		}
		m.mu.Lock()
		body := m.bodies[len(m.bodies)-1]
		m.mu.Unlock()
		if n > 0 && !strings.Contains(body, fmt.Sprintf("mcp__s%d__echo", n-1)) {
			b.Fatal("the servers' tools were not offered")
		}
		if _, err := p.conn.CloseSession(ctx, acp.CloseSessionRequest{SessionId: ns.SessionId}); err != nil {
			b.Fatal(err)
		}
		settle()
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(prompts)
	b.ReportMetric(float64(prompts[len(prompts)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64((cpu()-cpu0).Microseconds())/1000/float64(len(prompts)), "cpu-ms")
}

// treeCPU is the CPU time of pid and of its children it has waited for (which count theirs): utime, stime, cutime and
// cstime of /proc/PID/stat, in clock ticks of 10 ms (USER_HZ is 100 on Linux).
func treeCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	var ticks int64
	for _, v := range f[11:15] { // fields 14 to 17 of the line, counted after the command's name
		n, _ := strconv.ParseInt(v, 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// mcpJSON is an mcp.json with one stdio server, name, served by this test binary in mode (mcptest's modes).
func mcpJSON(t testing.TB, name, mode string, env map[string]string, extra ...string) string {
	t.Helper()
	needBins(t)
	def := map[string]any{"command": bins.self, "args": append([]string{mcptest.Arg, mode}, extra...)}
	if env != nil {
		def["env"] = env
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: def}})
	return string(b)
}

// settle lets the kernel finish tearing down the closed session's sandboxes (their network namespaces are freed
// by a kernel worker after the processes are gone), so that the next first prompt is not measured beside it.
func settle() { time.Sleep(150 * time.Millisecond) }

// garuda run with servers that cannot start, as a user misconfigures them: a program that is missing, a file that is
// no program, an HTTP server nothing listens for, and one that floods its standard error and exits. Each is a notice that says
// what is wrong in words (no transport's text, no "sandbox unavailable"), the turn goes on and ends 0, the flood's
// log stops at 64 MiB, and nothing of the servers is left running.
func TestRunMCPServersThatCannotStart(t *testing.T) {
	e := newRunEnv(t, fakeprovider.Turn{Text: "still here"})
	refused := testenv.RefusedAddress(t)
	marker := fmt.Sprintf("garuda-mcp-flood-%d", time.Now().UnixNano())
	plain := filepath.Join(e.root, "notes.txt")
	os.WriteFile(plain, []byte("not a program\n"), 0o644)
	def, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"missing": map[string]any{"command": filepath.Join(e.root, "no-such-server")},
		"plain":   map[string]any{"command": plain},
		"refused": map[string]any{"type": "http", "url": "http://" + refused + "/mcp"},
		// It answers nothing, writes 100 MB to its standard error (its log) and exits.
		"flood": map[string]any{"command": "/bin/bash", "args": []string{"-c", "yes flood | head -c 100000000 >&2; exit 3", marker}},
	}})
	if err := os.WriteFile(filepath.Join(e.home, "mcp.json"), def, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := e.run("--json", "hi")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var notices []string
	for _, ev := range ofType(events(t, stdout), "notice") {
		notices = append(notices, ev["text"].(string))
	}
	all := strings.Join(notices, "\n")
	for _, want := range []string{
		`"missing" (` + filepath.Join(e.home, "mcp.json") + `:1) did not start: its program could not be started: cannot run ` +
			filepath.Join(e.root, "no-such-server") + ": no such file or directory",
		`"plain" (` + filepath.Join(e.home, "mcp.json") + `:1) did not start: its program could not be started: cannot run ` +
			plain + ": permission denied",
		`"refused" (` + filepath.Join(e.home, "mcp.json") + `:1) did not start: nothing accepts connections at ` + refused,
		`"flood" (` + filepath.Join(e.home, "mcp.json") + `:1) did not start: its program ended: exit code 3; its log is `,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no notice %q in:\n%s", want, all)
		}
	}
	for _, raw := range []string{"sandbox unavailable", "doctor", "dial tcp", "rejected by transport", "calling \""} {
		if strings.Contains(all, raw) {
			t.Errorf("a notice holds %q:\n%s", raw, all)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(e.home, "sessions", "*", "mcp-flood-*.log"))
	if len(logs) != 1 {
		t.Fatalf("the flood's log: %v", logs)
	}
	if fi, err := os.Stat(logs[0]); err != nil || fi.Size() != 64<<20 {
		t.Errorf("the flood's log (100 MB written) is %d bytes (%v), not its first 64 MiB", fi.Size(), err)
	}
	if s := survivorsOf(marker); len(s) > 0 {
		t.Errorf("left running: %v", s)
	}
}
