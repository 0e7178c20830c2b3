// Signals: a command reaches no process outside its pid namespace, nor its own pid 1.

package sandbox

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

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

// TestAttackSignalInit: the command cannot stop, kill or signal its pid 1 (the helper that forwards cancel).
// Found by red team.
func TestAttackSignalInit(t *testing.T) {
	f := newFixture(t)
	r := f.sandboxed("kill -STOP 1; kill -KILL 1; kill -TERM 1; sleep 0.1; " + attackCmd(t, "kill", "1") + "; echo still-here")
	if !strings.Contains(string(r.Output), "DENIED") || !strings.Contains(string(r.Output), "still-here") || r.ExitCode != 0 {
		t.Errorf("signals to pid 1: exit %d %q", r.ExitCode, r.Output)
	}
	// Negative control: outside the sandbox, the same user signals its own processes.
	sl := exec.Command("sleep", "60")
	must(t, sl.Start())
	defer func() { sl.Process.Kill(); sl.Wait() }()
	if o, err := plain(t, attackCmd(t, "kill", strconv.Itoa(sl.Process.Pid))); err != nil {
		t.Errorf("negative control: %v %q", err, o)
	}
}
