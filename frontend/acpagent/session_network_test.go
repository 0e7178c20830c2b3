package acpagent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

const python3 = "/usr/bin/python3"

// fetchCmd fetches http://127.0.0.1:port/ with python, up to tries times, and prints the status or "unreachable".
func fetchCmd(port, tries int) string {
	return "for i in $(seq " + strconv.Itoa(
		tries) + "); do " + python3 + ` -c 'import urllib.request; print("status", urllib.request.urlopen("http://127.0.0.1:` +
		strconv.Itoa(port) + `/", timeout=2).status)' 2>/dev/null && exit 0; sleep 0.1; done; echo unreachable`
}

// withArgs reports whether a process runs with these arguments in a row.
func withArgs(args ...string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), strings.Join(args, "\x00")) {
			return true
		}
	}
	return false
}

// holdersOfThisProcess lists the session network holders this test process (the in-process broker) started.
func holdersOfThisProcess() []string {
	var out []string
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(st), "cmdline"))
		if err != nil || !strings.Contains(string(cmd), "__garuda-sandbox-helper\x00holder") {
			continue
		}
		// Fields after the command's name: state, ppid.
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 1 &&
			f[1] == strconv.Itoa(os.Getpid()) && f[0] != "Z" {
			out = append(out, filepath.Base(filepath.Dir(st)))
		}
	}
	return out
}

// A server a session's background process starts on the loopback (python3 -m http.server) is reachable from a
// later bash command of the same session (the control) and not from a command of another session; it ends at
// session/close, and the session's network namespace with it. When the editor closes stdin, no holder is left.
func TestSessionNetworkSharedByItsCommands(t *testing.T) {
	if _, err := os.Stat(python3); err != nil {
		t.Fatalf("%s is not there: install the Debian package python3-minimal (.ci/run does)", python3)
	}
	e := newEnv(t)
	a, b := e.newSession(), e.newSession()
	e.startProcess(a, "toolu_srv", "exec "+python3+" -m http.server 8137 --bind 127.0.0.1")
	if st, heard := e.useTool(a, "toolu_a", "bash", map[string]any{"command": fetchCmd(8137, 100)}); st != acp.ToolCallStatusCompleted ||
		!strings.Contains(heard, "status 200") {
		t.Fatalf("a later command of the session did not reach its background server: %s %q", st, heard)
	}
	if _, heard := e.useTool(b, "toolu_b", "bash", map[string]any{"command": fetchCmd(8137, 1)}); !strings.Contains(heard, "unreachable") ||
		strings.Contains(heard, "status 200") {
		t.Errorf("a command of another session reached the server: %q", heard)
	}
	if len(holdersOfThisProcess()) != 2 {
		t.Errorf("holders %v, want one for each session", holdersOfThisProcess())
	}
	if _, err := e.conn.CloseSession(e.ctx(), acp.CloseSessionRequest{SessionId: acp.SessionId(a)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLimit)
	for withArgs("http.server", "8137") || len(holdersOfThisProcess()) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("after session/close: server running %v, holders %v", withArgs("http.server", "8137"), holdersOfThisProcess())
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.stop() // the editor closes stdin
	for len(holdersOfThisProcess()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("holders left after stdin closed: %v", holdersOfThisProcess())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
