// The host's unix sockets, pathname and abstract, out of a command's reach.

package sandbox

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestAttackUnixSockets(t *testing.T) {
	f := newFixture(t)
	path := filepath.Join(f.outside, "broker.sock")
	l, err := net.Listen("unix", path)
	must(t, err)
	defer l.Close()
	abstract := "garuda-test-" + strconv.Itoa(os.Getpid())
	la, err := net.Listen("unix", "@"+abstract)
	must(t, err)
	defer la.Close()
	for _, ln := range []net.Listener{l, la} {
		go acceptAndClose(ln)
	}
	expectDenied(t, "connect to the broker's socket", f.sandboxed(attackCmd(t, "unix", path)))
	expectWorked(t, "connect to the broker's socket", f.unsandboxed(attackCmd(t, "unix", path)))
	expectDenied(t, "connect to an abstract socket", f.sandboxed(attackCmd(t, "abstract", abstract)))
	expectWorked(t, "connect to an abstract socket", f.unsandboxed(attackCmd(t, "abstract", abstract)))
}

// unixListener starts the attack tool listening on the unix socket path (from dir when relative) through wrap.
func unixListener(t *testing.T, dir, path string, wrap func(argv ...string) *exec.Cmd) {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	c := wrap(exe, attackArg, "unix-listen", path)
	c.Dir = dir
	stdout, err := c.StdoutPipe()
	must(t, err)
	must(t, c.Start())
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if !strings.Contains(line, "listening") {
		t.Fatalf("listener on %s did not start: %q", path, line)
	}
	go io.Copy(io.Discard, stdout)
}

// TestAttackUnixSocketsElsewhere: pathname sockets bound in another network namespace, or by a relative name,
// are reachable by their path like any other; they are covered too.
// Found by red team.
func TestAttackUnixSocketsElsewhere(t *testing.T) {
	f := newFixture(t)
	dir, err := os.MkdirTemp("/tmp", "gs") // short: a socket's path has at most 107 bytes
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	other := filepath.Join(dir, "other-netns.sock")
	unixListener(t, dir, other, inNewNetNS)
	unixListener(t, dir, "relative.sock", func(argv ...string) *exec.Cmd { return exec.Command(argv[0], argv[1:]...) })
	for _, p := range []string{other, filepath.Join(dir, "relative.sock")} {
		expectDenied(t, "connect to "+filepath.Base(p), f.sandboxed(attackCmd(t, "unix", p)))
		expectWorked(t, "connect to "+filepath.Base(p), f.unsandboxed(attackCmd(t, "unix", p)))
	}
}
