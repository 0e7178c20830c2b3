package sandbox

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/internal/testenv"
)

// TestAsNobody reruns the attack and process tests as the unprivileged user nobody (uid 65534), where the sandbox
// uses a user namespace and RLIMIT_NPROC instead of staying in the host's and using a pids cgroup.
func TestAsNobody(t *testing.T) {
	if !isRoot() {
		t.Skip("already unprivileged")
	}
	testenv.NeedCommand(t, "setpriv", "util-linux")
	dir, err := os.MkdirTemp("", "garuda-sandbox-nobody-")
	must(t, err)
	defer os.RemoveAll(dir)
	must(t, os.Chmod(dir, 0o755))
	tmp := filepath.Join(dir, "tmp")
	must(t, os.Mkdir(tmp, 0o777))
	must(t, os.Chmod(tmp, 0o1777))
	exe, err := os.Executable()
	must(t, err)
	bin := filepath.Join(dir, "sandbox.test")
	src, err := os.Open(exe)
	must(t, err)
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	must(t, err)
	_, err = io.Copy(dst, src)
	must(t, err)
	src.Close()
	must(t, dst.Close())
	run := "^Test(Attack|Everyday|LocalServer|PlanMode|Cancel|CommandEnd|Shutdown|Timeout|BrokerKilled|ProcessLimit|ForkBomb|RunEcho|" +
		"Probe|HugeOutput|MemoryLimit|OOMScoreAdj|DataLimit|SignalState|SharedNetwork|Reveal)"
	cmd := exec.CommandContext(context.Background(), "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		bin, "-test.run", run, "-test.count=1", "-test.v", "-test.short="+strconv.FormatBool(testing.Short()))
	cmd.Env = []string{"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + tmp, "LANG=C.UTF-8"}
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var summary []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "    ") {
			summary = append(summary, l)
		}
	}
	t.Logf("as nobody:\n%s", strings.Join(summary, "\n"))
	if err != nil {
		t.Fatalf("tests as nobody failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestAttackWriteOutsideRoot") {
		t.Fatalf("the tests did not run as nobody:\n%s", out)
	}
}
