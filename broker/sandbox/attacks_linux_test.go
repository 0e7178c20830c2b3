package sandbox

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// attackCmd is the shell command that runs the test binary as an attack tool.
func attackCmd(t *testing.T, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	q := []string{shq(exe), attackArg}
	for _, a := range args {
		q = append(q, shq(a))
	}
	return strings.Join(q, " ")
}

func expectDenied(t *testing.T, what string, r *Result) {
	t.Helper()
	if r.ExitCode == 0 || strings.Contains(string(r.Output), "OK ") {
		t.Errorf("%s: the attack worked in the sandbox: exit %d output %q", what, r.ExitCode, r.Output)
	}
}

func expectWorked(t *testing.T, what string, r *Result) {
	t.Helper()
	if r.ExitCode != 0 {
		t.Errorf("%s (negative control): the attack failed without the sandbox, so the test proves nothing: exit %d output %q", what, r.ExitCode, r.Output)
	}
}

func isRoot() bool { return os.Geteuid() == 0 }

func TestAttackWriteOutsideRoot(t *testing.T) {
	f := newFixture(t)
	target := filepath.Join(f.outside, "pwned")
	cmd := "echo x > " + shq(target)
	expectDenied(t, "write outside the root", f.sandboxed(cmd))
	if _, err := os.Stat(target); err == nil {
		t.Fatal("file written outside the root")
	}
	expectWorked(t, "write outside the root", f.unsandboxed(cmd))
}

func TestAttackHardLinkEscape(t *testing.T) {
	f := newFixture(t)
	victim := filepath.Join(f.outside, "victim")
	must(t, os.WriteFile(victim, []byte("orig\n"), 0o644))
	cmd := "ln " + shq(victim) + " hl && echo pwned >> hl"
	expectDenied(t, "write through a hard link", f.sandboxed(cmd))
	if b, _ := os.ReadFile(victim); string(b) != "orig\n" {
		t.Fatalf("victim changed through a hard link: %q", b)
	}
	os.Remove(filepath.Join(f.root, "hl"))
	if isRoot() {
		expectWorked(t, "write through a hard link", f.unsandboxed(cmd))
	} else {
		t.Log("no negative control: protected_hardlinks stops an unprivileged user linking a file it cannot write")
	}
}

func TestAttackSymlinkEscape(t *testing.T) {
	f := newFixture(t)
	must(t, os.Symlink(f.outside, filepath.Join(f.root, "link")))
	cmd := "echo x > link/pwned"
	expectDenied(t, "write through a symlink", f.sandboxed(cmd))
	if _, err := os.Stat(filepath.Join(f.outside, "pwned")); err == nil {
		t.Fatal("file written through the symlink")
	}
	expectWorked(t, "write through a symlink", f.unsandboxed(cmd))
}

// gitFixture is a repository whose .git/config and .git/hooks are protected as the broker protects them.
func gitFixture(t *testing.T) (*fixture, Spec) {
	f := newFixture(t)
	git := exec.Command("git", "init", "-q", f.root)
	git.Env = []string{"HOME=" + f.home, "PATH=" + os.Getenv("PATH")}
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	must(t, os.RemoveAll(filepath.Join(f.root, ".git", "hooks")))
	s := f.spec("")
	s.ReadOnly = []string{filepath.Join(f.root, ".git", "config")}
	s.EnsureDirs = []string{filepath.Join(f.root, ".git", "hooks")}
	return f, s
}

func TestAttackGitHooksAndConfig(t *testing.T) {
	f, s := gitFixture(t)
	protected := append(append([]string{}, s.ReadOnly...), s.EnsureDirs...)
	must(t, EnsureProtectedDirs(f.root, s.EnsureDirs))
	before := SnapshotPaths(protected)
	attacks := map[string]string{
		"write .git/hooks/pre-commit": "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit",
		"git config core.fsmonitor":   "git config core.fsmonitor 'echo pwned'",
		"append to .git/config":       "printf '[core]\\n\\tfsmonitor = echo pwned\\n' >> .git/config",
		"replace .git/config":         "cp .git/config /tmp/c 2>/dev/null; cp .git/config \"$TMPDIR/c\" && echo '[core] fsmonitor = x' >> \"$TMPDIR/c\" && mv -f \"$TMPDIR/c\" .git/config",
		"rename .git/hooks away":      "mv .git/hooks .git/hooks.old && mkdir .git/hooks && echo x > .git/hooks/pre-commit",
		"rename .git away":            "mv .git .git.old && cp -a .git.old .git && echo x > .git/hooks/pre-commit",
		"remove .git/config":          "rm -f .git/config && echo '[core] fsmonitor = x' > .git/config",
	}
	for name, cmd := range attacks {
		s.Command = cmd
		r := f.run(s)
		if r.ExitCode == 0 {
			t.Errorf("%s: exit 0 in the sandbox, output %q", name, r.Output)
		}
	}
	if ch := Changed(before, SnapshotPaths(protected)); len(ch) > 0 {
		t.Errorf("protected paths changed by the sandboxed attacks: %v", ch)
	}
	if _, err := os.Stat(filepath.Join(f.root, ".git.old")); err == nil {
		t.Errorf(".git was renamed away")
	}
	// Negative control: without the sandbox the same hook write works and Changed reports it.
	s.Command, s.Unsandboxed = attacks["write .git/hooks/pre-commit"], true
	expectWorked(t, "write .git/hooks/pre-commit", f.run(s))
	if ch := Changed(before, SnapshotPaths(protected)); len(ch) != 1 || !strings.HasSuffix(ch[0], "hooks") {
		t.Errorf("Changed after an unsandboxed hook write = %v, want the hooks folder", ch)
	}
}

func TestEnsureDirsRefusesSymlinkedParent(t *testing.T) {
	f, s := gitFixture(t)
	must(t, os.Rename(filepath.Join(f.root, ".git"), filepath.Join(f.outside, "git")))
	must(t, os.Symlink(filepath.Join(f.outside, "git"), filepath.Join(f.root, ".git")))
	s.Command = "true"
	if _, err := Run(context.Background(), s); err == nil {
		t.Error("Run created a protected folder through a symlink")
	}
	if _, err := os.Stat(filepath.Join(f.outside, "git", "hooks")); err == nil {
		t.Error("hooks folder created outside the root")
	}
	// Negative control: a plain MkdirAll follows the planted symlink out of the root.
	must(t, os.MkdirAll(filepath.Join(f.root, ".git", "hooks"), 0o755))
	if _, err := os.Stat(filepath.Join(f.outside, "git", "hooks")); err != nil {
		t.Error("negative control: MkdirAll did not follow the symlink")
	}
}

func TestEverydayGitMv(t *testing.T) {
	f, s := gitFixture(t)
	must(t, os.WriteFile(filepath.Join(f.root, "a.txt"), []byte("a"), 0o644))
	s.Command = "git add a.txt && mkdir -p sub && git mv a.txt sub/b.txt && git status --short"
	r := f.run(s)
	if r.ExitCode != 0 || !strings.Contains(string(r.Output), "sub/b.txt") {
		t.Fatalf("git mv in the sandbox: exit %d output %q", r.ExitCode, r.Output)
	}
}

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

// plain runs a command with no sandbox and no pid namespace: the negative control for attacks a pid namespace stops.
func plain(_ *testing.T, command string) (string, error) {
	out, err := exec.Command("/bin/bash", "-c", command).CombinedOutput()
	return string(out), err
}

func TestAttackSignalOutside(t *testing.T) {
	f := newFixture(t)
	for _, target := range []string{"sleeper", "broker"} {
		pid := os.Getpid()
		if target == "sleeper" {
			sl := exec.Command("sleep", "60")
			must(t, sl.Start())
			defer sl.Process.Kill()
			pid = sl.Process.Pid
		}
		expectDenied(t, "signal the "+target, f.sandboxed(attackCmd(t, "kill", strconv.Itoa(pid))))
		if target == "sleeper" {
			// Negative control: plain `kill` from outside the pid namespace reaches it.
			if out, err := plain(t, "kill -TERM "+strconv.Itoa(pid)); err != nil {
				t.Errorf("negative control: kill %d failed: %v %s", pid, err, out)
			}
		}
	}
}

func TestAttackReadSecrets(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{filepath.Join(f.garuda, "credentials"), filepath.Join(f.home, ".ssh", "id_ed25519"), filepath.Join(f.home, ".netrc")} {
		cmd := "cat " + shq(p)
		if r := f.sandboxed(cmd); strings.Contains(string(r.Output), "SECRET") {
			t.Errorf("read %s in the sandbox: %q", p, r.Output)
		}
		if r := f.unsandboxed(cmd); !strings.Contains(string(r.Output), "SECRET") {
			t.Errorf("negative control: could not read %s without the sandbox: %q", p, r.Output)
		}
	}
	if isRoot() {
		// Root-owned system secrets: the command keeps uid 0, so only hiding them keeps them unread.
		if _, err := os.Stat("/etc/shadow"); err == nil {
			if r := f.sandboxed("cat /etc/shadow"); strings.Contains(string(r.Output), "root:") {
				t.Errorf("read /etc/shadow in the sandbox")
			}
			if r := f.unsandboxed("cat /etc/shadow"); !strings.Contains(string(r.Output), "root:") {
				t.Errorf("negative control: /etc/shadow unreadable without the sandbox: %q", r.Output)
			}
		}
	}
	// The folder itself looks empty and cannot be written into.
	r := f.sandboxed("ls -A " + shq(f.garuda) + "; echo x > " + shq(filepath.Join(f.garuda, "new")))
	if r.ExitCode == 0 || strings.Contains(string(r.Output), "credentials") {
		t.Errorf("GARUDA_HOME visible or writable: exit %d %q", r.ExitCode, r.Output)
	}
}

func TestAttackProviderKeyInEnv(t *testing.T) {
	f := newFixture(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-SECRETKEY")
	t.Setenv("MY_SERVICE_TOKEN", "tok-SECRETKEY")
	r := f.sandboxed("env; cat /proc/1/environ; for p in /proc/[0-9]*; do cat $p/environ; done 2>/dev/null")
	if strings.Contains(string(r.Output), "SECRETKEY") || strings.Contains(string(r.Output), "GARUDA_HOME") {
		t.Errorf("a secret reached the command: %q", r.Output)
	}
	// From /proc/<front end pid>/environ: a process started with the key plays the front end.
	fe := exec.Command("sleep", "60")
	fe.Env = append(os.Environ(), "ANTHROPIC_API_KEY=sk-ant-SECRETKEY")
	must(t, fe.Start())
	defer func() { fe.Process.Kill(); fe.Wait() }()
	pid := strconv.Itoa(fe.Process.Pid)
	expectDenied(t, "read /proc/<front end>/environ", f.sandboxed(attackCmd(t, "environ", pid, "SECRETKEY")))
	// Negative controls: a command given the broker's environment sees the key; a process outside the pid
	// namespace reads it from /proc.
	if out, _ := plain(t, "echo $ANTHROPIC_API_KEY"); !strings.Contains(out, "SECRETKEY") {
		t.Errorf("negative control: inherited env lacks the key: %q", out)
	}
	if out, err := plain(t, attackCmd(t, "environ", pid, "SECRETKEY")); err != nil {
		t.Errorf("negative control: /proc/%s/environ not readable outside: %v %q", pid, err, out)
	}
}

func TestAttackMknod(t *testing.T) {
	f := newFixture(t)
	for _, dir := range []string{f.root, f.tmp} {
		cmd := attackCmd(t, "mknod", filepath.Join(dir, "null"))
		expectDenied(t, "mknod in "+dir, f.sandboxed(cmd))
	}
	if isRoot() {
		expectWorked(t, "mknod", f.unsandboxed(attackCmd(t, "mknod", filepath.Join(f.root, "null"))))
	} else {
		t.Log("no negative control: an unprivileged user cannot mknod even without the sandbox")
	}
}

func TestAttackTIOCSTI(t *testing.T) {
	f := newFixture(t)
	// stdin is /dev/null: without the filter TIOCSTI fails with ENOTTY, with it EPERM before the kernel looks.
	for _, high := range []string{"0", "1"} {
		r := f.sandboxed(attackCmd(t, "tiocsti", high))
		if !strings.Contains(string(r.Output), "ERRNO operation not permitted") {
			t.Errorf("TIOCSTI (high bits %s) not refused by seccomp: %q", high, r.Output)
		}
		r = f.unsandboxed(attackCmd(t, "tiocsti", high))
		if !strings.Contains(string(r.Output), "ERRNO inappropriate ioctl for device") {
			t.Errorf("negative control: TIOCSTI (high bits %s) without the filter: %q", high, r.Output)
		}
	}
}

func TestAttackKernelSurface(t *testing.T) {
	f := newFixture(t)
	expectDenied(t, "io_uring", f.sandboxed(attackCmd(t, "iouring")))
	if r := f.unsandboxed(attackCmd(t, "iouring")); r.ExitCode != 0 {
		t.Logf("no negative control for io_uring: it fails here without the sandbox too: %q", r.Output)
	}
	cmd := "unshare --user --map-root-user true"
	expectDenied(t, "new user namespace", f.sandboxed(cmd))
	expectWorked(t, "new user namespace", f.unsandboxed(cmd))
}

func TestAttackHostnameAndClock(t *testing.T) {
	f := newFixture(t)
	r := f.sandboxed("hostname garuda-pwned")
	if r.ExitCode == 0 {
		t.Errorf("hostname changed from the sandbox: %q", r.Output)
	}
	r = f.sandboxed("date -s '2001-01-01 00:00:00'")
	if r.ExitCode == 0 {
		t.Errorf("clock set from the sandbox: %q", r.Output)
	}
	if h, _ := os.Hostname(); h == "garuda-pwned" {
		t.Fatal("the machine's hostname changed")
	}
	// Negative control for hostname, kept off the real machine by a UTS namespace of its own. None for the
	// clock: setting it for real would disturb every process on this machine.
	if isRoot() {
		expectWorked(t, "hostname", f.unsandboxed("unshare --uts hostname garuda-pwned"))
	}
}

func TestLocalServerInside(t *testing.T) {
	f := newFixture(t)
	r := f.sandboxed(attackCmd(t, "serve"))
	if r.ExitCode != 0 || !strings.Contains(string(r.Output), `"pong"`) {
		t.Fatalf("local server in the sandbox: exit %d %q", r.ExitCode, r.Output)
	}
	r = f.sandboxed("python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 & for i in $(seq 100); do curl -sf http://127.0.0.1:8765/ >/dev/null && echo served && exit 0; sleep 0.05; done; exit 1")
	if !strings.Contains(string(r.Output), "served") {
		t.Errorf("python http.server + curl on loopback: exit %d %q", r.ExitCode, r.Output)
	}
}

func TestPlanModeRootReadOnly(t *testing.T) {
	f := newFixture(t)
	s := f.spec("echo x > inroot; echo y > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"")
	s.ReadOnlyRoot = true
	r := f.run(s)
	if _, err := os.Stat(filepath.Join(f.root, "inroot")); err == nil {
		t.Error("plan mode: wrote in the root")
	}
	if !strings.Contains(string(r.Output), "y") {
		t.Errorf("plan mode: TMPDIR not writable: %q", r.Output)
	}
	r = f.sandboxed("echo x > inroot")
	if _, err := os.Stat(filepath.Join(f.root, "inroot")); err != nil {
		t.Errorf("build mode: could not write in the root: %q", r.Output)
	}
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

func TestPrivateDevShm(t *testing.T) {
	f := newFixture(t)
	host := filepath.Join("/dev/shm", "garuda-test-"+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(host, []byte("host"), 0o600); err != nil {
		t.Skipf("no writable /dev/shm here: %v", err)
	}
	defer os.Remove(host)
	r := f.sandboxed("ls /dev/shm; python3 -c 'import multiprocessing as m; l = m.Lock(); l.acquire(); l.release(); print(\"lock ok\")'")
	if strings.Contains(string(r.Output), filepath.Base(host)) {
		t.Errorf("host /dev/shm visible in the sandbox: %q", r.Output)
	}
	if !strings.Contains(string(r.Output), "lock ok") {
		t.Errorf("multiprocessing lock in the sandbox: %q", r.Output)
	}
	if r := f.unsandboxed("ls /dev/shm"); !strings.Contains(string(r.Output), filepath.Base(host)) {
		t.Errorf("negative control: host /dev/shm not visible without the sandbox: %q", r.Output)
	}
}
