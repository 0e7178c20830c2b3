// Run: a command's result, and its whole process tree ended by cancel, timeout, shutdown or the broker's death.

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/internal/testproc"
)

func TestRunEcho(t *testing.T) {
	f := newFixture(t)
	r := f.sandboxed("echo hello; echo err >&2; exit 3")
	if r.ExitCode != 3 || out(r) != "hello\nerr" {
		t.Fatalf("got exit %d output %q notices %v", r.ExitCode, r.Output, r.Notices)
	}
}

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

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return pid > 0 && err == nil && !strings.Contains(string(st), ") Z ")
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

// Argv runs a program without a shell: found on the command's PATH, its arguments passed as they are (a quote, a
// space, a $ and a glob reach it unchanged), confined as a shell command is (the control: the hidden credentials
// stay hidden from it). A program that is not on PATH, or only on a relative PATH entry, is a set-up error.
func TestRunArgv(t *testing.T) {
	f := newFixture(t)
	s := f.spec("printf argv")
	s.Argv = []string{"printf", "[%s]\n", "it's", "a b", "$HOME", "*", filepath.Join(f.garuda, "credentials")}
	r := f.run(s)
	if got := out(r); got != "[it's]\n[a b]\n[$HOME]\n[*]\n["+filepath.Join(f.garuda, "credentials")+"]" || r.ExitCode != 0 {
		t.Errorf("printf through Argv: exit %d, %q", r.ExitCode, got)
	}
	s.Argv = []string{"cat", filepath.Join(f.garuda, "credentials")}
	if r := f.run(s); strings.Contains(out(r), "SECRET") || r.ExitCode == 0 {
		t.Errorf("a program run through Argv read a hidden secret: %q", out(r))
	}
	for _, argv := range [][]string{{"garuda-no-such-program"}, {"planted"}} {
		s := f.spec("argv")
		s.Argv = argv
		s.Env = append(s.Env, "PATH=.:bin")
		must(t, os.WriteFile(filepath.Join(f.root, "planted"), []byte("#!/bin/sh\necho ran\n"), 0o755))
		if _, err := Run(context.Background(), s); err == nil || !strings.Contains(err.Error(), "not found on the command's PATH") {
			t.Errorf("%v: err %v", argv, err)
		}
	}
}

// A program that cannot be started (missing, not executable, not on PATH) is the command's fault, said as such: a
// ProgramError naming the program, not "sandbox unavailable" with the advice to run `garuda-exec doctor`.
func TestProgramThatCannotRun(t *testing.T) {
	f := newFixture(t)
	plain := filepath.Join(f.root, "notes.txt")
	if err := os.WriteFile(plain, []byte("not a program\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for argv0, want := range map[string]string{
		filepath.Join(f.root, "missing"): "no such file or directory",
		plain:                            "permission denied",
		"no-such-program-here":           "not found on the command's PATH",
	} {
		s := f.spec(argv0)
		s.Argv = []string{argv0, "arg"}
		_, err := Run(context.Background(), s)
		var pe *ProgramError
		if !errors.As(err, &pe) || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "cannot run "+argv0) ||
			!strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "doctor") {
			t.Errorf("%s: %v, want a ProgramError saying %q", argv0, err, want)
		}
	}
	// The control: the same spec with a program that exists runs.
	s := f.spec("true")
	s.Argv = []string{"/bin/true"}
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}
