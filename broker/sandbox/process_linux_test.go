package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/internal/testproc"
)

var markerSeq atomic.Int64

// marker is a sleep duration unique to this test run: processes carrying it in argv are the test's.
func marker() string {
	return fmt.Sprintf("%d.%d%d", 900+markerSeq.Add(1), os.Getpid()%1000, markerSeq.Load())
}

// startedRun runs s in the background and returns once the command has printed "started".
func startedRun(t *testing.T, ctx context.Context, s Spec) <-chan *Result {
	t.Helper()
	started := make(chan struct{})
	var once atomic.Bool
	var seen bytes.Buffer
	s.OnOutput = func(b []byte) {
		seen.Write(b)
		if strings.Contains(seen.String(), "started") && once.CompareAndSwap(false, true) {
			close(started)
		}
	}
	done := make(chan *Result, 1)
	go func() {
		r, err := Run(ctx, s)
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- r
	}()
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("command ended before starting: %+v %q", r, r.Output)
	}
	return done
}

// setsidEscape is a command whose children try to outlive the command: setsid, double fork, nohup, ignored
// SIGTERM, background.
func setsidEscape(m string) string {
	return fmt.Sprintf(`setsid bash -c '(setsid sleep %[1]s &) ; sleep %[1]s' & (setsid nohup sleep %[1]s >/dev/null 2>&1 &); `+
		`bash -c 'trap "" TERM; exec sleep %[1]s' & sleep 0.1; echo started; sleep %[1]s`, m)
}

func TestCancelKillsEverything(t *testing.T) {
	f := newFixture(t)
	m := marker()
	ctx, cancel := context.WithCancel(context.Background())
	done := startedRun(t, ctx, f.spec(setsidEscape(m)))
	if n := len(testproc.Live(m)); n < 4 {
		t.Fatalf("only %d marked processes running before cancel", n)
	}
	cancel()
	r := <-done
	if !r.Cancelled || !r.Signaled {
		t.Errorf("result after cancel: %+v", r)
	}
	if s := testproc.Live(m); len(s) > 0 {
		t.Fatalf("processes survived cancel: %v", s)
	}
}

// The negative control: a process-group kill, what most agents do, leaves the setsid ones alive.
func TestProcessGroupKillLeavesSurvivors(t *testing.T) {
	m := marker()
	c := exec.Command("/bin/bash", "-c", setsidEscape(m))
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, _ := c.StdoutPipe()
	must(t, c.Start())
	bufio.NewReader(stdout).ReadString('\n')
	syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	c.Wait()
	time.Sleep(50 * time.Millisecond)
	s := testproc.Live(m)
	for _, p := range s {
		syscall.Kill(p.PID, syscall.SIGKILL) // clean up the processes this test started, by pid
	}
	if len(s) == 0 {
		t.Fatal("negative control: the process-group kill left no survivor, so TestCancelKillsEverything proves nothing")
	}
}

func TestCommandEndKillsBackground(t *testing.T) {
	f := newFixture(t)
	m := marker()
	r := f.sandboxed(fmt.Sprintf("(setsid sleep %[1]s &); nohup sleep %[1]s >/dev/null 2>&1 & echo done", m))
	if r.ExitCode != 0 || out(r) != "done" {
		t.Fatalf("exit %d %q", r.ExitCode, r.Output)
	}
	if s := testproc.Live(m); len(s) > 0 {
		t.Fatalf("background processes outlived the command: %v", s)
	}
}

func TestCancelGraceThenKill(t *testing.T) {
	f := newFixture(t)
	m := marker()
	ctx, cancel := context.WithCancel(context.Background())
	done := startedRun(t, ctx, f.spec("trap '' TERM; echo started; sleep "+m+"; sleep "+m))
	cancel()
	r := <-done
	if !r.Cancelled || !r.Signaled || r.ExitCode != 128+9 {
		t.Errorf("a SIGTERM-ignoring command after cancel: %+v", r)
	}
	if s := testproc.Live(m); len(s) > 0 {
		t.Fatalf("survivors: %v", s)
	}
}

func TestShutdownKillsAtOnce(t *testing.T) {
	f := newFixture(t)
	m := marker()
	ctx, cancel := context.WithCancelCause(context.Background())
	done := startedRun(t, ctx, f.spec("trap '' TERM; echo started; sleep "+m))
	cancel(ErrShutdown)
	r := <-done
	// Killed by SIGKILL without the grace: a SIGTERM would have been ignored and ended in the same state only
	// after TermGrace, so the duration is what tells them apart; it is reported, not asserted.
	if !r.Cancelled || r.ExitCode != 128+9 {
		t.Errorf("shutdown result: %+v", r)
	}
	t.Logf("shutdown kill took %v (grace is %v)", r.Duration, TermGrace)
	if s := testproc.Live(m); len(s) > 0 {
		t.Fatalf("survivors: %v", s)
	}
}

func TestTimeout(t *testing.T) {
	f := newFixture(t)
	m := marker()
	s := f.spec("sleep " + m)
	s.Timeout = 300 * time.Millisecond
	r := f.run(s)
	if !r.TimedOut || r.Cancelled || !r.Signaled {
		t.Errorf("timeout result: %+v", r)
	}
	if sv := testproc.Live(m); len(sv) > 0 {
		t.Fatalf("survivors: %v", sv)
	}
}

// TestBrokerKilled: when the broker process is SIGKILLed (the front end gone), its commands die with it.
func TestBrokerKilled(t *testing.T) {
	exe, err := os.Executable()
	must(t, err)
	for _, withNet := range []bool{false, true} {
		m := marker()
		f := newFixture(t)
		args := []string{attackArg, "broker", f.root, f.tmp, "echo started; sleep " + m}
		if withNet {
			args = append(args, "net") // the command in a session's network namespace: its holder must end too
		}
		c := exec.Command(exe, args...)
		stdout, _ := c.StdoutPipe()
		must(t, c.Start())
		rd := bufio.NewReader(stdout)
		holder := 0
		if withNet {
			hl, _ := rd.ReadString('\n')
			holder, _ = strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(hl), "holder "))
		}
		line, _ := rd.ReadString('\n')
		if !strings.Contains(line, "started") || len(testproc.Live(m)) == 0 || withNet && !alive(holder) {
			t.Fatalf("broker child did not start the command (holder %d): %q", holder, line)
		}
		c.Process.Kill()
		c.Wait()
		deadline := time.Now().Add(5 * time.Second)
		for (len(testproc.Live(m)) > 0 || withNet && alive(holder)) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if s := testproc.Live(m); len(s) > 0 {
			t.Fatalf("command survived its broker (session network %v): %v", withNet, s)
		}
		if withNet && alive(holder) {
			t.Fatalf("the session network's holder %d survived its broker", holder)
		}
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return pid > 0 && err == nil && !strings.Contains(string(st), ") Z ")
}

func TestProcessLimit(t *testing.T) {
	f := newFixture(t)
	r := f.sandboxed(attackCmd(t, "procs", strconv.Itoa(ProcessLimit+100)))
	if r.ExitCode == 0 {
		t.Errorf("started %d processes past the limit: %q", ProcessLimit+100, r.Output)
	}
	t.Logf("sandboxed: %s", out(r))
	if r := f.unsandboxed(attackCmd(t, "procs", strconv.Itoa(ProcessLimit+100))); r.ExitCode != 0 {
		t.Errorf("negative control: could not start %d processes without the sandbox: %q", ProcessLimit+100, r.Output)
	}
}

func TestForkBomb(t *testing.T) {
	f := newFixture(t)
	m := marker()
	s := f.spec(": " + m + "; b(){ b | b & }; b; sleep 60")
	// The bomb is stopped once a fork has failed (the limit held), not after a fixed time: on a loaded machine
	// the shell can take seconds to reach the limit.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen bytes.Buffer
	var mu sync.Mutex
	s.OnOutput = func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		seen.Write(b)
		if bytes.Contains(seen.Bytes(), []byte("fork")) {
			cancel()
		}
	}
	s.Timeout = 45 * time.Second
	r, err := Run(ctx, s) // returning at all shows the broker stayed responsive
	if err != nil {
		t.Fatal(err)
	}
	if !r.Cancelled || !bytes.Contains(r.Output, []byte("fork")) {
		t.Errorf("fork bomb: cancelled %v (timed out %v), exit %d, output %q", r.Cancelled, r.TimedOut, r.ExitCode,
			r.Output[:min(200, len(r.Output))])
	}
	if sv := testproc.Live(m); len(sv) > 0 { // Run returns once the whole tree is gone
		t.Fatalf("%d fork bomb processes survived", len(sv))
	}
	// No negative control: an unbounded fork bomb would take down this shared machine; TestProcessLimit shows
	// the limit is what stops it.
}

func TestHugeOutputBoundedMemory(t *testing.T) {
	f := newFixture(t)
	var peak atomic.Uint64
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	stop := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
		}
	}()
	r := f.sandboxed("head -c 1000000000 /dev/zero | tr '\\0' 'a'; echo; echo THE-END")
	close(stop)
	if !r.Truncated || len(r.Output) > KeepOutput+200 || !bytes.HasSuffix(bytes.TrimSpace(r.Output), []byte("THE-END")) {
		t.Errorf("1 GB output: truncated %v, kept %d bytes, tail %q", r.Truncated, len(r.Output), r.Output[max(0, len(r.Output)-40):])
	}
	if !bytes.Contains(r.Output, []byte("bytes cut")) {
		t.Errorf("no cut note in %q", r.Output[KeepOutput/2-10:KeepOutput/2+80])
	}
	if grew := int64(peak.Load()) - int64(base); grew > 16<<20 {
		t.Errorf("heap grew by %d MB while reading 1 GB", grew>>20)
	}
	t.Logf("heap peak growth %d KB", (int64(peak.Load())-int64(base))>>10)
}

func TestOutputFileAndStreaming(t *testing.T) {
	f := newFixture(t)
	s := f.spec("seq 1 20000")
	s.OutputFile = filepath.Join(t.TempDir(), "out.txt")
	var streamed bytes.Buffer
	s.OnOutput = func(b []byte) { streamed.Write(b) }
	r := f.run(s)
	full, err := os.ReadFile(s.OutputFile)
	must(t, err)
	want, _ := exec.Command("seq", "1", "20000").Output()
	if !bytes.Equal(full, want) || !bytes.Equal(streamed.Bytes(), want) {
		t.Errorf("saved %d bytes, streamed %d, want %d", len(full), streamed.Len(), len(want))
	}
	if !r.Truncated || r.OutputPath != s.OutputFile || !bytes.Contains(r.Output, []byte("full output in "+s.OutputFile)) {
		t.Errorf("result: truncated %v path %q", r.Truncated, r.OutputPath)
	}
	if !bytes.HasPrefix(r.Output, []byte("1\n2\n")) || !bytes.HasSuffix(r.Output, []byte("19999\n20000\n")) {
		t.Errorf("head/tail wrong")
	}
	if fi, _ := os.Stat(s.OutputFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("output file mode %v", fi.Mode())
	}
}

// TestSignalState: the command starts with no signal blocked, although pid 1 forks it with every signal blocked
// (fork_linux.go), and ignores no signal that a plain child of the broker would not ignore (pid 1 handles SIGHUP,
// SIGINT and SIGTERM itself, so those are not ignored even when the broker was started ignoring them). Control: the
// same command started plainly by this process.
func TestSignalState(t *testing.T) {
	f := newFixture(t)
	const cmd = "grep -E '^Sig(Blk|Ign)' /proc/self/status"
	sigs := func(out string) (blk, ign uint64) {
		for _, l := range strings.Split(out, "\n") {
			k, v, _ := strings.Cut(l, ":")
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			switch k {
			case "SigBlk":
				blk = n
			case "SigIgn":
				ign = n
			}
		}
		return blk, ign
	}
	want, err := plain(t, cmd)
	if err != nil || !strings.Contains(want, "SigBlk:\t0000000000000000") {
		t.Fatalf("control: %v %q", err, want)
	}
	_, plainIgn := sigs(want)
	r := f.sandboxed(cmd)
	if blk, ign := sigs(out(r)); blk != 0 || ign&^plainIgn != 0 || !strings.Contains(out(r), "SigIgn:") {
		t.Errorf("the command's signal state %q, want nothing blocked and nothing ignored beyond a plain child's %q", out(r), want)
	}
}
