package sandbox

import (
	"os"
	"strings"
	"testing"
)

// TestMemoryLimit: a command over its memory limit fails with the limit named; the same command under a higher
// limit succeeds (the negative control). As root this is the cgroup v1 memory controller; as nobody (TestAsNobody)
// RLIMIT_DATA.
func TestMemoryLimit(t *testing.T) {
	f := newFixture(t)
	s := f.spec(attackCmd(t, "alloc", "2048")) // 2 GiB
	s.Limits = Limits{MemoryBytes: 1 << 30}
	r := f.run(s)
	t.Logf("1024 MiB: exit %d, limits hit %q, output %.200q", r.ExitCode, r.LimitsHit, out(r))
	if r.ExitCode == 0 || len(r.LimitsHit) != 1 || !strings.Contains(r.LimitsHit[0], "memory limit reached (1024 MiB") {
		t.Errorf("2 GiB under a 1024 MiB limit: exit %d, limits hit %q, output %.300q", r.ExitCode, r.LimitsHit, r.Output)
	}
	s.Limits = Limits{MemoryBytes: 4 << 30}
	if r := f.run(s); r.ExitCode != 0 || len(r.LimitsHit) != 0 {
		t.Errorf("negative control: 2 GiB under a 4096 MiB limit: exit %d, limits hit %q, output %q", r.ExitCode, r.LimitsHit, r.Output)
	}
}

// TestProcessLimitNamed: a command that reaches a lower process limit is told which limit it hit.
func TestProcessLimitNamed(t *testing.T) {
	f := newFixture(t)
	s := f.spec(attackCmd(t, "procs", "80"))
	s.Limits = Limits{Processes: 40}
	r := f.run(s)
	if r.ExitCode == 0 {
		t.Errorf("started 80 processes under a limit of 40: %q", r.Output)
	}
	if isRoot() && (len(r.LimitsHit) != 1 || !strings.Contains(r.LimitsHit[0], "process limit reached (40")) {
		t.Errorf("the process limit is not named: %q", r.LimitsHit) // RLIMIT_NPROC (as nobody) counts no failures
	}
	s.Limits = Limits{}
	if r := f.run(s); r.ExitCode != 0 || len(r.LimitsHit) != 0 {
		t.Errorf("negative control: 80 processes under the default limit: exit %d, %q %q", r.ExitCode, r.LimitsHit, r.Output)
	}
}

// TestOOMScoreAdj: commands are the kernel's first choice when memory runs out; the broker keeps its own score.
func TestOOMScoreAdj(t *testing.T) {
	f := newFixture(t)
	mine, err := os.ReadFile("/proc/self/oom_score_adj")
	must(t, err)
	if r := f.sandboxed("cat /proc/self/oom_score_adj; echo 0 >/proc/self/oom_score_adj"); !strings.HasPrefix(out(r), "1000\n") ||
		r.ExitCode == 0 {
		t.Errorf("a command's oom_score_adj: %q (exit %d), want 1000 and no way to lower it", out(r), r.ExitCode)
	}
	after, err := os.ReadFile("/proc/self/oom_score_adj")
	must(t, err)
	if string(after) != string(mine) || strings.TrimSpace(string(mine)) == "1000" {
		t.Errorf("the broker's oom_score_adj changed: %q -> %q", mine, after)
	}
}
