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
