package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/internal/testenv"
	"github.com/garuda-dev/garuda/internal/testproc"
)

const python = "/usr/bin/python3"

// background runs s until ctx ends, in the background; the returned channel gives its result.
func background(ctx context.Context, t *testing.T, s Spec) <-chan *Result {
	t.Helper()
	s.UntilCancelled = true
	done := make(chan *Result, 1)
	go func() {
		r, err := Run(ctx, s)
		if err != nil {
			t.Errorf("background %q: %v", s.Command, err)
		}
		done <- r
	}()
	return done
}

// reach is a command that fetches http://127.0.0.1:port/, up to tries times (while the server starts), and prints
// the status, or "unreachable".
func reach(port, tries int) string {
	return fmt.Sprintf(`for i in $(seq %d); do %s -c 'import urllib.request,sys; print(urllib.request.urlopen("http://127.0.0.1:%d/", timeout=2).status)' 2>/dev/null && exit 0; sleep 0.1; done; echo unreachable`, tries, python, port)
}

// TestSharedNetwork: a server a background command of a session starts on the namespace's loopback is reachable
// from a later command of the same session (the control), not from a command of another session nor from one with
// a namespace of its own; closing the session's network ends the server and everything in the namespace.
func TestSharedNetwork(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		t.Skip("python3 is not installed")
	}
	f := newFixture(t)
	sess, err := NewNetwork()
	if err != nil {
		t.Fatalf("NewNetwork: %v", err)
	}
	defer sess.Close()
	other, err := NewNetwork()
	if err != nil {
		t.Fatalf("NewNetwork: %v", err)
	}
	defer other.Close()
	m := marker()
	srv := f.spec(fmt.Sprintf("sleep %s & exec %s -m http.server 8000 --bind 127.0.0.1", m, python))
	srv.Network = sess
	ended := background(context.Background(), t, srv)

	later := f.spec(reach(8000, 100))
	later.Network = sess
	if r := f.run(later); out(r) != "200" {
		t.Fatalf("a later command of the session did not reach the background server: %q %v", r.Output, r.Notices)
	}
	for name, n := range map[string]*Network{"another session's": other, "its own": nil} {
		s := f.spec(reach(8000, 1)) // the server is up: the control reached it
		s.Network = n
		if r := f.run(s); out(r) != "unreachable" {
			t.Errorf("a command in %s network namespace reached the session's server: %q", name, r.Output)
		}
	}

	sess.Close()
	select {
	case r := <-ended:
		if r == nil || !r.Signaled {
			t.Errorf("the background server did not end with the session's network: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the background server outlived the session's network")
	}
	if left := testproc.Live(m); len(left) > 0 {
		t.Errorf("processes left after the session's network closed: %v", left)
	}
	if sess.Alive() {
		t.Error("the holder is alive after Close")
	}
	// A command given a closed network runs all the same, in a namespace of its own, and says so.
	s := f.spec("echo ran")
	s.Network = sess
	if r := f.run(s); out(r) != "ran" || len(r.Notices) == 0 || !strings.Contains(r.Notices[0], "network namespace is gone") {
		t.Errorf("a command given a closed network: %q %v", r.Output, r.Notices)
	}
}

// fakeProxy answers every connection to a unix socket with an HTTP response naming it, then closes it.
func fakeProxy(t *testing.T, path, name string) {
	testenv.Serve(t, "unix", path, func(c net.Conn) {
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4096)
		_, _ = c.Read(buf)
		fmt.Fprintf(c, "HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(name), name)
	})
}

// TestSharedNetworkProxyIsTheCommands: in a session's shared network namespace each command's forwarder to the
// broker's proxy relays only that command's connections: another command of the session that connects to it gets
// nothing through, so its hosts can never be asked about on the first command's call. Controls: each command
// reaches its own proxy through its own forwarder.
func TestSharedNetworkProxyIsTheCommands(t *testing.T) {
	f := newFixture(t)
	sess, err := NewNetwork()
	if err != nil {
		t.Fatalf("NewNetwork: %v", err)
	}
	defer sess.Close()
	pa, pb := filepath.Join(f.base, "a.sock"), filepath.Join(f.base, "b.sock")
	fakeProxy(t, pa, "proxy-A")
	fakeProxy(t, pb, "proxy-B")
	// get prints what a plain HTTP request through the forwarder at host:port answers, or "nothing".
	const get = `get() { [ -n "$1" ] || { echo "no address"; return; }; exec 3<>/dev/tcp/${1%:*}/${1##*:} || { echo refused; return; }; printf 'GET http://example.com/ HTTP/1.0\r\n\r\n' >&3; r=$(timeout 5 cat <&3); exec 3<&-; echo "${r:-nothing}" | tail -1; }; `
	portFile := filepath.Join(f.tmp, "a-proxy")
	a := f.spec(get + `echo ${HTTP_PROXY#http://} > ` + portFile + `.new; mv ` + portFile + `.new ` + portFile + `; get ${HTTP_PROXY#http://}; sleep 60`)
	a.Network, a.Proxy = sess, pa
	var aOut strings.Builder
	got := make(chan struct{}, 1)
	a.OnOutput = func(p []byte) {
		aOut.Write(p)
		select {
		case got <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := background(ctx, t, a)
	defer func() { cancel(); <-ended }()

	b := f.spec(get + `for i in $(seq 600); do [ -s ` + portFile + ` ] && break; sleep 0.05; done; echo "other: $(get $(cat ` + portFile + `))"; echo "own: $(get ${HTTP_PROXY#http://})"`)
	b.Network, b.Proxy = sess, pb
	r := f.run(b)
	if !strings.Contains(out(r), "own: proxy-B") {
		t.Fatalf("control: a command did not reach its own proxy: %q", r.Output)
	}
	// The other forwarder closes the connection: "nothing" comes back, or (when the close comes before the request
	// is written) the subshell dies of SIGPIPE and prints nothing; never the other proxy's answer.
	other, _, _ := strings.Cut(out(r)[strings.Index(out(r), "other:")+len("other:"):], "\n")
	if strings.Contains(other, "proxy") || !strings.Contains(out(r), "other:") {
		t.Errorf("a command got through another command's forwarder: %q", r.Output)
	}
	select {
	case <-got:
	case <-time.After(5 * time.Second):
	}
	if !strings.Contains(aOut.String(), "proxy-A") {
		t.Errorf("control: the first command did not reach its own proxy: %q", aOut.String())
	}
}

// TestSharedNetworkProcessLimitPerCommand: the process limit stays each command's in a shared network namespace:
// a background command holding 40 processes takes nothing from a later command's limit. As nobody the limit is
// RLIMIT_NPROC, counted per user namespace: each command's pid 1 gets a user namespace of its own inside the
// holder's, without which the later command would count the background's processes too. Control: the later
// command over its limit is refused.
func TestSharedNetworkProcessLimitPerCommand(t *testing.T) {
	f := newFixture(t)
	sess, err := NewNetwork()
	if err != nil {
		t.Fatalf("NewNetwork: %v", err)
	}
	defer sess.Close()
	m := marker()
	ready := filepath.Join(f.tmp, "held")
	bg := f.spec(fmt.Sprintf("for i in $(seq 40); do sleep %s & done; touch %s; wait", m, ready))
	bg.Network = sess
	ctx, cancel := context.WithCancel(context.Background())
	ended := background(ctx, t, bg)
	defer func() { cancel(); <-ended }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background command did not start its processes")
		}
	}
	s := f.spec(attackCmd(t, "procs", "30"))
	s.Network, s.Limits = sess, Limits{Processes: 60}
	if r := f.run(s); r.ExitCode != 0 {
		t.Errorf("30 processes under a limit of 60 beside a background command holding 40: exit %d %q", r.ExitCode, r.Output)
	}
	s.Limits = Limits{Processes: 20}
	if r := f.run(s); r.ExitCode == 0 {
		t.Errorf("control: 30 processes under a limit of 20 started: %q", r.Output)
	}
}
