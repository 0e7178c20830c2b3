// A command's own network namespace: nothing of the host's network, its own loopback, and the fallback where the
// kernel refuses a namespace.

package sandbox

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestAttackTCPOut(t *testing.T) {
	f := newFixture(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	go acceptAndClose(l)
	cmd := attackCmd(t, "tcp", l.Addr().String())
	expectDenied(t, "TCP to the host", f.sandboxed(cmd))
	expectWorked(t, "TCP to the host", f.unsandboxed(cmd))
}

// acceptAndClose accepts every connection on l and closes it at once, until l is closed.
func acceptAndClose(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// udpListener counts datagrams that reach a host-side UDP socket.
func udpListener(t *testing.T) (addr string, got func() int) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { pc.Close() })
	n := make(chan int, 1)
	n <- 0
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			n <- (<-n) + 1
		}
	}()
	return pc.LocalAddr().String(), func() int { v := <-n; n <- v; return v }
}

func TestAttackUDPAndDNSOut(t *testing.T) {
	f := newFixture(t)
	for _, kind := range []string{"udp", "dns"} {
		addr, got := udpListener(t)
		f.sandboxed(attackCmd(t, kind, addr))
		// Sandboxed datagrams would have arrived before the unsandboxed ones on the same socket.
		f.unsandboxed(attackCmd(t, kind, addr))
		deadline := time.Now().Add(5 * time.Second)
		for got() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got() == 0 {
			t.Errorf("%s negative control: nothing reached the host without the sandbox", kind)
		}
		// Run the sandboxed attack again on a fresh listener and make sure nothing arrives.
		addr2, got2 := udpListener(t)
		f.sandboxed(attackCmd(t, kind, addr2))
		f.unsandboxed(attackCmd(t, kind, addr)) // a marker datagram on the first socket, sent after
		time.Sleep(50 * time.Millisecond)
		if n := got2(); n != 0 {
			t.Errorf("%s: %d datagrams reached the host from the sandbox", kind, n)
		}
	}
}

// TestAttackIPv6Loopback: the host's IPv6 loopback is not the command's.
// Found by red team.
func TestAttackIPv6Loopback(t *testing.T) {
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer l.Close()
	go acceptAndClose(l)
	f := newFixture(t)
	expectDenied(t, "TCP to the host's ::1", f.sandboxed(attackCmd(t, "tcp", l.Addr().String())))
	expectWorked(t, "TCP to the host's ::1", f.unsandboxed(attackCmd(t, "tcp", l.Addr().String())))
}

func TestLocalServerInside(t *testing.T) {
	f := newFixture(t)
	r := f.sandboxed(attackCmd(t, "serve"))
	if r.ExitCode != 0 || !strings.Contains(string(r.Output), `"pong"`) {
		t.Fatalf("local server in the sandbox: exit %d %q", r.ExitCode, r.Output)
	}
	r = f.sandboxed("python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 & " +
		"for i in $(seq 100); do curl -sf http://127.0.0.1:8765/ >/dev/null && echo served && exit 0; sleep 0.05; done; exit 1")
	if !strings.Contains(string(r.Output), "served") {
		t.Errorf("python http.server + curl on loopback: exit %d %q", r.ExitCode, r.Output)
	}
}

// TestEverydayGoTest: `go test` of a small module whose test serves on 127.0.0.1 works in the sandbox, with the
// build cache in a writable cache folder handed over through GOCACHE.
func TestEverydayGoTest(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the net package from an empty cache")
	}
	goroot := "/usr/local/go"
	if _, err := os.Stat(filepath.Join(goroot, "bin", "go")); err != nil {
		t.Skip("no Go toolchain at /usr/local/go")
	}
	f := newFixture(t)
	cache := filepath.Join(f.base, "cache")
	must(t, os.MkdirAll(filepath.Join(cache, "go-build"), 0o755))
	must(t, os.WriteFile(filepath.Join(f.root, "go.mod"), []byte("module example.com/srv\n\ngo 1.26\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(f.root, "srv_test.go"), []byte(`package srv

import (
	"io"
	"net"
	"testing"
)

func TestServe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, _ := l.Accept()
		c.Write([]byte("hi"))
		c.Close()
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	if string(b) != "hi" {
		t.Fatalf("got %q", b)
	}
}
`), 0o644))
	s := f.spec("go test ./... && go get example.com/nothing@v1.0.0")
	s.Writable = append(s.Writable, cache)
	s.Timeout = MaxTimeout // compiling net from an empty cache under -race beside the other packages can take minutes
	s.Env = BaseEnv(f.home, f.tmp, map[string]string{"GOCACHE": filepath.Join(cache, "go-build"), "GOTOOLCHAIN": "local",
		"GOMODCACHE": filepath.Join(cache, "mod"), "GOPROXY": "https://proxy.golang.org"})
	s.Env = append(s.Env, "PATH="+filepath.Join(goroot, "bin")+":/usr/bin:/bin")
	r := f.run(s)
	o := string(r.Output)
	if !strings.Contains(o, "ok  \texample.com/srv") {
		t.Fatalf("go test in the sandbox: exit %d %q", r.ExitCode, o)
	}
	// What needs the network fails, with an error that says so.
	if r.ExitCode == 0 || !(strings.Contains(o, "dial tcp") || strings.Contains(o, "lookup proxy.golang.org")) {
		t.Errorf("module download: exit %d %q", r.ExitCode, o)
	}
	t.Logf("%s", o)
}

// TestNoNetNSFallback runs the network attacks under the fallback used where the kernel refuses a network
// namespace: seccomp allows only AF_UNIX sockets and Landlock denies TCP; pathname sockets stay hidden and
// abstract ones scoped.
func TestNoNetNSFallback(t *testing.T) {
	testNoNetNS = true
	defer func() { testNoNetNS = false }()
	f := newFixture(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	path := filepath.Join(f.outside, "broker.sock")
	lu, err := net.Listen("unix", path)
	must(t, err)
	defer lu.Close()
	abstract := "garuda-fallback-" + strconv.Itoa(os.Getpid())
	la, err := net.Listen("unix", "@"+abstract)
	must(t, err)
	defer la.Close()
	for _, ln := range []net.Listener{l, lu, la} {
		go acceptAndClose(ln)
	}
	udpAddr, udpGot := udpListener(t)
	attacks := [][]string{{"tcp", l.Addr().String()}, {"unix", path}, {"abstract", abstract}, {"udp", udpAddr}, {"dns", udpAddr}}
	// A session's network given to the command changes nothing: where namespaces are refused, none is used.
	sessNet, err := NewNetwork()
	must(t, err)
	defer sessNet.Close()
	for i, a := range attacks {
		s := f.spec(attackCmd(t, a...))
		if i%2 == 0 {
			s.Network = sessNet
		}
		r := f.run(s)
		expectDenied(t, "fallback: "+a[0], r)
		if len(r.Notices) == 0 || !strings.Contains(r.Notices[0], "no network namespace") {
			t.Errorf("fallback without a notice: %v", r.Notices)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := udpGot(); n != 0 {
		t.Errorf("fallback: %d datagrams reached the host", n)
	}
	// Negative control: the same attacks work without the sandbox.
	for _, a := range attacks[:3] {
		expectWorked(t, "fallback: "+a[0], f.unsandboxed(attackCmd(t, a...)))
	}
	// Unix sockets of the command's own still work.
	r := f.sandboxed("python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"ok\"); print(b.recv(2).decode())'")
	if out(r) != "ok" {
		t.Errorf("fallback: socketpair in the sandbox: %q", r.Output)
	}
}
