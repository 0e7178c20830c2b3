// The command's own terminals and shared memory, never the host's.

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/garuda-dev/garuda/internal/testenv"
)

// TestAttackHostTerminals: a command gets terminals of its own (a devpts instance of the sandbox: script and
// expect work) but never the host's: a pty opened outside is not there to read or write, by its name or through the
// host's /dev/ptmx.
// Found by red team.
func TestAttackHostTerminals(t *testing.T) {
	testenv.NeedCommand(t, "script", "bsdutils")
	f := newFixture(t)
	if r := f.sandboxed("script -qc tty /dev/null"); !strings.HasPrefix(out(r), "/dev/pts/") {
		t.Fatalf("a terminal of the sandbox's own: exit %d %q", r.ExitCode, r.Output)
	}
	master, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pty on the host: %v", err)
	}
	defer unix.Close(master)
	must(t, unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(master, unix.TIOCGPTN)
	must(t, err)
	host := fmt.Sprintf("/dev/pts/%d", n)
	expectDenied(t, "open the host's "+host, f.sandboxed(attackCmd(t, "open-read", host)))
	// Negative control: outside the sandbox this user opens it.
	expectWorked(t, "open the host's "+host, f.unsandboxed(attackCmd(t, "open-read", host)))
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
