package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/garuda-dev/garuda/internal/testproc"
	"github.com/garuda-dev/garuda/test/editor"
)

// An editor starts garuda acp, initializes and closes stdin: exit 0, nothing left running.
func TestAcpInitializeAndCloseStdin(t *testing.T) {
	home := t.TempDir()
	e := startEditor(t, home)
	r := e.initialize()
	if r.ProtocolVersion != 1 {
		t.Fatalf("initialize answered %+v", r)
	}
	if r.AgentInfo == nil || r.AgentInfo.Name != "garuda" {
		t.Errorf("agentInfo = %+v", r.AgentInfo)
	}
	code, _ := e.closeAndWait()
	if code != 0 {
		t.Fatalf("exit code %d after stdin closed, want 0\nstderr:\n%s", code, e.stderr)
	}
	waitBrokerGone(t, 5*time.Second)
}

// garuda acp answers an initialize that is in its input as it starts from its package initialisation (package
// acpinit), and only when it is sure to serve: what the editor wrote after it in the same write is answered next,
// by the SDK; with arguments garuda acp refuses, the editor gets no answer, only the usage error and exit 1.
func TestAcpEarlyInitialize(t *testing.T) {
	needBins(t)
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n"
	const authenticate = `{"jsonrpc":"2.0","id":2,"method":"authenticate","params":{"methodId":"garuda-setup"}}` + "\n"
	home := t.TempDir()
	cmd := exec.Command(bins.garuda, "acp", "--model", "none/such")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + home, "HOME=" + home, "TMPDIR=" + home}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdin.Write([]byte(initialize + authenticate))
	br := bufio.NewReader(stdout)
	first, err1 := br.ReadString('\n')
	second, err2 := br.ReadString('\n')
	stdin.Close()
	if err := cmd.Wait(); err1 != nil || err2 != nil || err != nil {
		t.Fatalf("garuda acp: %v %v %v", err1, err2, err)
	}
	if !strings.HasPrefix(first, `{"jsonrpc":"2.0","id":1,"result":{"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":false,`) {
		t.Errorf("first line %s, want initialize's answer with the spec's capabilities", first)
	}
	if second != `{"jsonrpc":"2.0","id":2,"result":{}}`+"\n" {
		t.Errorf("second line %s, want authenticate's answer", second)
	}

	for _, args := range [][]string{{"--no-such-flag"}, {"--model"}, {"unexpected"}} {
		cmd := exec.Command(bins.garuda, append([]string{"acp"}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + home, "HOME=" + home, "TMPDIR=" + home}
		cmd.Stdin = strings.NewReader(initialize)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != 2 || out.Len() > 0 || !strings.Contains(errOut.String(), "garuda acp --help") {
			t.Errorf("garuda acp %v: exit %d, stdout %q, stderr %q; want 2, nothing, the usage error", args, code, out.String(), errOut.String())
		}
	}
}

// Found by probing garuda acp from outside: it failed before its fix. Whether the early answer (package acpinit) or
// the SDK reads it, what is not a JSON-RPC request is answered as JSON-RPC asks and not run: a first line that is an
// initialize with an object for its id, and a line of garbage, each get an error with id null; the editor's next
// initialize is answered as usual.
func TestAcpAnswersWhatIsNotJSONRPC(t *testing.T) {
	needBins(t)
	home := t.TempDir()
	cmd := exec.Command(bins.garuda, "acp")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + home, "HOME=" + home, "TMPDIR=" + home}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdin.Write([]byte(`{"jsonrpc":"2.0","id":{"k":1},"method":"initialize","params":{"protocolVersion":1}}` + "\n" +
		"not json at all\n" + `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1}}` + "\n"))
	lines := make(chan string)
	go func() {
		br := bufio.NewReader(stdout)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- l
		}
	}()
	var got []string
	for len(got) < 3 {
		var l string
		select {
		case l = <-lines:
		case <-time.After(waitLimit):
			cmd.Process.Kill()
			t.Fatalf("answers so far %q; no more within %v", got, waitLimit)
		}
		var m struct {
			ID    json.RawMessage    `json:"id"`
			Error struct{ Code int } `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		got = append(got, fmt.Sprintf("%s:%d", m.ID, m.Error.Code))
	}
	stdin.Close()
	cmd.Wait()
	if want := []string{"null:-32600", "null:-32700", "3:0"}; !slices.Equal(got, want) {
		t.Errorf("answers (id:error code) %v, want %v", got, want)
	}
}

// garuda run and garuda acp start their broker from package spawn's initialisation, which Go runs right after os's:
// before crypto, protobuf, grpc and the model SDKs (most of the front end's start), so that the broker starts beside
// them. An import that sorts late (strings, path/filepath) would put spawn behind every package that sorts before
// it; with strings it came after os/signal, unicode, reflect, protobuf's and the crypto packages, 0.3–1.5 ms later.
// (GODEBUG=inittrace=1 lists, in order, the packages whose initialisation does work; os's and spawn's do.)
func TestBrokerStartsFromEarlyInit(t *testing.T) {
	needBins(t)
	home := t.TempDir()
	for _, args := range [][]string{{"run", "hi"}, {"acp"}} { // acp: its stdin is empty, it ends at EOF
		cmd := exec.Command(bins.garuda, args...)
		cmd.Dir = home
		cmd.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + home, "HOME=" + home, "TMPDIR=" + home, "GODEBUG=inittrace=1"}
		out, _ := cmd.CombinedOutput()
		var before []string
		found, broker := false, false
		for _, line := range strings.Split(string(out), "\n") {
			// spawn's line is written once its initialisation (which starts the broker) is over: the broker's own
			// trace, on the same stderr, may run into it and before it. The broker's starts with a package garuda's
			// trace named already (its runtime's): what follows that is the broker's.
			if strings.Contains(line, " github.com/garuda-dev/garuda/frontend/brokerconn/spawn @") {
				found = true
				break
			}
			if f := strings.Fields(line); len(f) > 1 && f[0] == "init" && !broker {
				if broker = slices.Contains(before, f[1]); !broker {
					before = append(before, f[1])
				}
			}
		}
		if !found {
			t.Fatalf("garuda %s: package spawn's initialisation is not in the trace:\n%s", args[0], out)
		}
		if before[len(before)-1] != "os" {
			t.Errorf("garuda %s: package spawn initialises after %v, want right after os", args[0], before)
		}
	}
}

// SIGTERM is a clean shutdown too.
func TestAcpSigterm(t *testing.T) {
	e := startEditor(t, t.TempDir())
	e.initialize()
	e.cmd.Process.Signal(syscall.SIGTERM)
	if code := e.wait(); code != 0 {
		t.Fatalf("exit after SIGTERM: code %d\nstderr:\n%s", code, e.stderr)
	}
	waitBrokerGone(t, 5*time.Second)
}

// The front end killed with SIGKILL: the broker notices (EOF on its socket) and exits.
func TestBrokerDiesWithFrontEnd(t *testing.T) {
	e := startEditor(t, t.TempDir())
	e.initialize()
	if len(testproc.OfExe(bins.exec)) == 0 {
		t.Fatal("no broker runs beside garuda acp")
	}
	e.cmd.Process.Kill()
	e.wait()
	waitBrokerGone(t, 5*time.Second)
}

// The broker killed: the front end exits non-zero with a one-line reason on stderr.
func TestFrontEndReportsBrokerDeath(t *testing.T) {
	e := startEditor(t, t.TempDir())
	e.initialize()
	for _, pid := range testproc.OfExe(bins.exec) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	select {
	case err := <-e.waited:
		e.waited <- err
	case <-time.After(10 * time.Second):
		t.Fatal("garuda acp kept running after its broker died")
	}
	if code := e.cmd.ProcessState.ExitCode(); code == 0 {
		t.Fatalf("exit code 0 after the broker died")
	}
	if !strings.Contains(e.stderr.String(), "broker") {
		t.Errorf("stderr does not say the broker is gone:\n%s", e.stderr)
	}
}

func TestMissingBroker(t *testing.T) {
	needBins(t)
	dir := t.TempDir()
	lone := filepath.Join(dir, "garuda")
	data, _ := os.ReadFile(bins.garuda)
	os.WriteFile(lone, data, 0o755)
	cmd := exec.Command(lone, "acp")
	cmd.Env = []string{"PATH=" + dir, "GARUDA_HOME=" + dir}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "garuda-exec was not found") {
		t.Fatalf("garuda acp without garuda-exec: %v\n%s", err, out)
	}
	if n := strings.Count(strings.TrimSpace(string(out)), "\n"); n != 0 {
		t.Errorf("want one line, got:\n%s", out)
	}
}

func TestUnreachableBroker(t *testing.T) {
	needBins(t)
	cmd := exec.Command(bins.garuda, "doctor", "--broker", "unix://"+filepath.Join(t.TempDir(), "none.sock"))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "cannot reach the broker") {
		t.Fatalf("doctor with an unreachable broker: %v\n%s", err, out)
	}
}

// serve as root for uid nobody with a socket group: nobody is served; another uid of the same group passes the file
// mode but is refused by the SO_PEERCRED check, and the refusal is logged.
func TestServePeerCredentials(t *testing.T) {
	needBins(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run clients as other uids")
	}
	dir := openDir(t)
	sock := filepath.Join(dir, "run", "garuda.sock")
	home := filepath.Join(dir, "home")
	srv := exec.Command(bins.exec, "serve", "--listen", sock, "--allow-uid", "65534", "--socket-group", "65534")
	srv.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + home}
	log, done := startLogged(t, srv)
	defer func() { srv.Process.Signal(syscall.SIGTERM); <-done }()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	client := func(uid string) (string, error) {
		cmd := exec.Command("setpriv", "--reuid="+uid, "--regid=65534", "--clear-groups", bins.garuda, "doctor", "--broker", "unix://"+sock)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + filepath.Join(dir, "client")}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := client("65534")
	if err != nil || !strings.Contains(out, "broker answers  yes") {
		t.Fatalf("nobody (allowed) was not served: %v\n%s\nbroker log:\n%s", err, out, log.String())
	}
	// Negative control: the file mode lets uid 65533 (group 65534) connect at the socket level...
	raw := exec.Command("setpriv", "--reuid=65533", "--regid=65534", "--clear-groups", bins.self)
	raw.Env = []string{"GARUDA_TEST_CONNECT=" + sock}
	if out, err := raw.CombinedOutput(); err != nil {
		t.Fatalf("control: uid 65533 could not even connect, so the test would not show the SO_PEERCRED check: %v\n%s", err, out)
	}
	// ...but the broker refuses it by its uid.
	out, err = client("65533")
	if err == nil || strings.Contains(out, "broker answers  yes") {
		t.Fatalf("uid 65533 was served:\n%s", out)
	}
	if !log.WaitFor("refused a connection", 5*time.Second) || !strings.Contains(log.String(), "uid=65533") {
		t.Errorf("the refusal is not logged:\n%s", log.String())
	}
}

// A running garuda acp has confined itself: no_new_privs is set (read from outside, in /proc), and Landlock
// forbids it to write or execute; the confinement itself is tested in frontend/confine.
func TestAcpRunsConfined(t *testing.T) {
	e := startEditor(t, t.TempDir())
	e.initialize()
	status := filepath.Join("/proc", strconv.Itoa(e.cmd.Process.Pid), "status")
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile(status)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "NoNewPrivs:\t1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("garuda acp did not set no_new_privs:\n%s", data)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Negative control: the test process itself, unconfined, has it unset.
	own, _ := os.ReadFile("/proc/self/status")
	if !strings.Contains(string(own), "NoNewPrivs:\t0") {
		t.Skip("the test runs with no_new_privs already set; the check shows nothing here")
	}
	e.closeAndWait()
}

// The built binaries, as an editor runs them, through a turn with a command that writes to stdout and stderr:
// stdout carries only JSON-RPC, and at stdin's close garuda exits 0 with no broker left.
func TestProcessStdoutOnlyProtocolAndCleanExit(t *testing.T) {
	m := &fakeOpenAI{answers: [][]string{bashAnswer("call_1", "echo hello; echo to-stdout; echo to-stderr >&2"), textAnswer("done")}}
	p := startGaruda(t, m)
	p.initialize()
	sid := p.newSession("")
	p.promptEndsTurn(sid, "say hello")
	ups, _ := p.ed.Snapshot()
	if _, st, texts := editor.ToolCall(ups, "call_1"); st != acp.ToolCallStatusCompleted ||
		!strings.Contains(strings.Join(texts, ""), "hello") {
		t.Errorf("bash call %q %q", st, texts)
	}
	if len(testproc.OfExe(bins.exec)) == 0 {
		t.Fatal("negative control: no garuda-exec process found while garuda runs")
	}
	if code, _ := p.closeAndWait(); code != 0 {
		t.Errorf("garuda acp exited with %d after stdin closed, want 0", code)
	}
	lines := p.lines()
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
	waitBrokerGone(t, waitLimit)
}

// BenchmarkProcessSpawnInitialize measures spawning `garuda acp` (which starts garuda-exec) until its initialize
// answer is read (target: under 10 ms median); the exit after stdin closes is not counted.
func BenchmarkProcessSpawnInitialize(b *testing.B) {
	needBins(b)
	home := b.TempDir()
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
	for b.Loop() {
		cmd := exec.Command(bins.garuda, "acp")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GARUDA_HOME=" + home, "TMPDIR=" + home}
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := testproc.StartBelow(cmd); err != nil {
			b.Fatal(err)
		}
		in.Write(line)
		if _, err := bufio.NewReader(out).ReadBytes('\n'); err != nil {
			b.Fatal(err)
		}
		b.StopTimer() // the exit is not part of the figure
		in.Close()
		cmd.Wait()
		b.StartTimer()
	}
}

// Found by driving garuda acp as editors do: it failed before its fix.
// The broker's start waited for the editor's first answer (an initialize, at once); an editor whose first message
// needs the broker (session/new or session/list before initialize) then waited for ever, and so did the agent.
// Such a message is answered (an error or a session), and the agent goes on.
func TestAcpFirstMessageThatNeedsTheBrokerIsAnswered(t *testing.T) {
	for _, first := range []string{
		`{"jsonrpc":"2.0","id":"first","method":"session/list","params":{}}`,
		`{"jsonrpc":"2.0","id":"first","method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`,
	} {
		home := t.TempDir()
		e := startEditor(t, home)
		if strings.Contains(first, "%q") {
			first = fmt.Sprintf(first, home)
		}
		if _, err := e.stdin.Write([]byte(first + "\n")); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(waitLimit)
		answered := false
		for !answered && time.Now().Before(deadline) {
			for _, l := range e.lines() {
				answered = answered || strings.Contains(l, `"id":"first"`)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !answered {
			t.Fatalf("no answer to %s as the first message within %v", first, waitLimit)
		}
		if r := e.initialize(); r.ProtocolVersion != 1 { // the agent goes on
			t.Errorf("initialize after it answered %+v", r)
		}
	}
}
