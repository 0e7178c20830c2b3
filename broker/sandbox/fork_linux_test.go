// The command forked by pid 1: its signal state, no inherited descriptor, no capability.

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

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

// TestAttackInheritedFd: a descriptor the broker leaks (opened without close-on-exec) reaches the helper, but
// never the command.
// Found by red team.
func TestAttackInheritedFd(t *testing.T) {
	f := newFixture(t)
	secret := filepath.Join(f.garuda, "credentials")
	fd, err := unix.Open(secret, unix.O_RDONLY, 0) // no O_CLOEXEC: inherited by every child of this process
	must(t, err)
	defer unix.Close(fd)
	cmd := fmt.Sprintf("ls -l /proc/self/fd/; cat /proc/self/fd/%d <&%d", fd, fd)
	if r := f.sandboxed(cmd); strings.Contains(string(r.Output), "SECRET") || strings.Contains(string(r.Output), "credentials") {
		t.Errorf("the command inherited the broker's descriptor: %q", r.Output)
	}
	// Negative control: a child started without the helper's close-range inherits it.
	if o, _ := plain(t, cmd); !strings.Contains(o, "SECRET-CREDENTIALS") {
		t.Errorf("negative control: descriptor not inherited by a plain child: %q", o)
	}
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

// TestChildStepNames: the error of a command that could not start names the step that failed in words, for every
// step the child has; a number the child never writes is still shown, as a number.
func TestChildStepNames(t *testing.T) {
	for s := stepChdir; s <= stepExec; s++ {
		if name := s.String(); name == "" || strings.HasPrefix(name, "step ") {
			t.Errorf("step %d has no name: %q", uint32(s), name)
		}
	}
	if got := childStep(0).String(); got != "step 0" {
		t.Errorf("childStep(0) = %q", got)
	}
	if got := (stepExec + 1).String(); got != fmt.Sprintf("step %d", uint32(stepExec+1)) {
		t.Errorf("a step past the last = %q", got)
	}
}
