package testproc

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"
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
