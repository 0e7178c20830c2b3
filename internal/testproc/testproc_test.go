package testproc

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// A sleep started here is found by its marker and by its binary while it runs, and no longer once it ended.
func TestFindsASleep(t *testing.T) {
	cmd := exec.Command("sleep", "31.4159")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Start returns once the exec began; its new command line may show a moment later on a loaded machine.
	ps := Live("sleep 31.4159")
	for deadline := time.Now().Add(5 * time.Second); len(ps) == 0 && time.Now().Before(deadline); ps = Live("sleep 31.4159") {
		time.Sleep(10 * time.Millisecond)
	}
	if len(ps) != 1 || ps[0].PID != cmd.Process.Pid || ps[0].Cmdline != "sleep 31.4159" {
		t.Fatalf("Live: %v", ps)
	}
	sleep, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe")
	if err != nil || !slices.Contains(OfExe(sleep), cmd.Process.Pid) {
		t.Errorf("OfExe(%s) misses %d (%v)", sleep, cmd.Process.Pid, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if ps := Holding("sleep 31.4159"); len(ps) != 0 {
		t.Errorf("after the end: %v", ps)
	}
}

// A process's stderr in an Output is readable while the process writes it: WaitFor sees a line that comes late, and
// answers false, after its time, for one that never comes.
func TestOutputWhileTheProcessWrites(t *testing.T) {
	var out Output
	cmd := exec.Command("sh", "-c", "echo early >&2; sleep 0.2; echo late >&2; exec sleep 5")
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if !out.WaitFor("late", 5*time.Second) {
		t.Fatalf("late never seen: %q", out.String())
	}
	if got := out.String(); got != "early\nlate\n" {
		t.Errorf("String: %q", got)
	}
	if out.WaitFor("never", 50*time.Millisecond) {
		t.Errorf("WaitFor found what was never written: %q", out.String())
	}
}

// Under `chrt -r 2` a process started by StartBelow runs at real-time priority 1, and the caller's thread is back at
// 2; without a real-time policy it starts as cmd.Start would.
func TestStartBelow(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("setting a real-time priority needs root")
	}
	if _, err := exec.LookPath("chrt"); err != nil {
		t.Fatal("chrt is missing (Debian package util-linux)")
	}
	child := func() string {
		cmd := exec.Command("chrt", "-p", "0") // chrt's own policy
		var out strings.Builder
		cmd.Stdout = &out
		if err := StartBelow(cmd); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		return out.String()
	}
	if os.Getenv("TESTPROC_BELOW") == "" {
		if got := child(); !strings.Contains(got, "SCHED_OTHER") {
			t.Errorf("without a real-time policy the child runs at\n%s", got)
		}
		cmd := exec.Command("chrt", "-r", "2", os.Args[0], "-test.run", "^TestStartBelow$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTPROC_BELOW=1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("under chrt -r 2: %v\n%s", err, out)
		}
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if got := child(); !strings.Contains(got, "SCHED_RR") || !strings.Contains(got, "priority: 1") {
		t.Errorf("the child runs at\n%s\nwant SCHED_RR priority 1", got)
	}
	var p struct{ prio int32 }
	syscall.RawSyscall(syscall.SYS_SCHED_GETPARAM, 0, uintptr(unsafe.Pointer(&p)), 0)
	if p.prio != 2 {
		t.Errorf("the caller's thread is at priority %d afterwards, want 2", p.prio)
	}
}
