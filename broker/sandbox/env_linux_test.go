// No provider key reaches a command, from the environment or from /proc.

package sandbox

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

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
