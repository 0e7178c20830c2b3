package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/internal/testproc"
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

// TestDataLimitOnlyOnTheCommand: where RLIMIT_DATA is the memory limit (no memory cgroup: as nobody), it binds the
// command's processes and never the sandbox's pid 1, whose Go runtime must keep working (the forwarder, the reaper).
// Control: pid 1's own limit is read the same way and is unlimited.
func TestDataLimitOnlyOnTheCommand(t *testing.T) {
	if chooseMechanisms(true, nil).memory != byRlimit {
		t.Skip("memory is limited by a cgroup here (TestAsNobody reruns this under RLIMIT_DATA)")
	}
	f := newFixture(t)
	s := f.spec("grep 'Max data size' /proc/self/limits /proc/1/limits")
	s.Limits = Limits{MemoryBytes: 1 << 30}
	r := f.run(s)
	self, init := "", ""
	for _, l := range strings.Split(out(r), "\n") {
		switch {
		case strings.HasPrefix(l, "/proc/self/limits:"):
			self = strings.Fields(strings.TrimPrefix(l, "/proc/self/limits:Max data size"))[0]
		case strings.HasPrefix(l, "/proc/1/limits:"):
			init = strings.Fields(strings.TrimPrefix(l, "/proc/1/limits:Max data size"))[0]
		}
	}
	if self != strconv.Itoa(1<<30) || init != "unlimited" {
		t.Errorf("RLIMIT_DATA of the command %q and of pid 1 %q, want %d and unlimited: %q", self, init, 1<<30, out(r))
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

// TestMemoryCgroupEscape: a command run by a root broker cannot raise its own memory limit or its parent's, nor
// leave its memory cgroup. Negative control: without the sandbox, uid 0 writes the limit of a memory cgroup.
func TestMemoryCgroupEscape(t *testing.T) {
	if !isRoot() || chooseMechanisms(true, nil).memory != byCgroupV1 {
		t.Skip("the cgroup v1 memory controller is used only by a root broker")
	}
	f := newFixture(t)
	s := f.spec(`g=/sys/fs/cgroup/memory$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
echo -1 > $g/memory.limit_in_bytes; echo -1 > $g/../memory.limit_in_bytes; echo $$ > $g/../cgroup.procs
echo "limit $(cat $g/memory.limit_in_bytes) in $(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)"`)
	s.Limits = Limits{MemoryBytes: 512 << 20}
	r := f.run(s)
	if !strings.Contains(out(r), "limit 536870912 in /") || !strings.Contains(out(r), "/garuda/u0/") ||
		strings.Count(out(r), "Read-only file system") < 3 {
		t.Errorf("memory cgroup escape from the sandbox: %q", r.Output)
	}
	groups, err := ownCgroups()
	must(t, err)
	base, err := v1Dir(groups, "memory")
	must(t, err)
	scratch := filepath.Join(base, "garuda-test-"+strconv.Itoa(os.Getpid()))
	must(t, os.Mkdir(scratch, 0o755))
	defer os.Remove(scratch)
	limit := scratch + "/memory.limit_in_bytes"
	if r := f.unsandboxed("echo 536870912 > " + limit + " && cat " + limit); out(r) != "536870912" {
		t.Errorf("negative control: %q", r.Output)
	}
}

// TestMemoryLimitSharedByCommands: all of a user's commands together stay under the memory limit: of two commands
// holding 700 MiB each under 1024 MiB, one is killed with the limit named. Negative control: under 2048 MiB both
// hold their memory.
func TestMemoryLimitSharedByCommands(t *testing.T) {
	if m := chooseMechanisms(true, nil).memory; m == byRlimit {
		t.Skip("RLIMIT_DATA bounds each process, not commands together")
	}
	for _, c := range []struct {
		limit  int64
		killed bool
	}{{1 << 30, true}, {2 << 30, false}} {
		f := newFixture(t)
		release := filepath.Join(f.tmp, "release")
		held := make(chan struct{}, 2)
		results := make(chan *Result, 2)
		runOne := func() {
			s := f.spec(attackCmd(t, "alloc", "700", release))
			s.Limits = Limits{MemoryBytes: c.limit}
			var once sync.Once
			s.OnOutput = func(b []byte) {
				if strings.Contains(string(b), "allocated") {
					once.Do(func() { held <- struct{}{} })
				}
			}
			r, err := Run(context.Background(), s)
			if err != nil {
				t.Error(err)
			}
			once.Do(func() { held <- struct{}{} }) // killed before it held its memory
			results <- r
		}
		go runOne()
		<-held // the first holds its memory before the second starts
		go runOne()
		<-held
		must(t, os.WriteFile(release, nil, 0o644))
		var hits []string
		for range 2 {
			if r := <-results; r != nil {
				hits = append(hits, r.LimitsHit...)
			}
		}
		t.Logf("%d MiB: %q", c.limit>>20, hits)
		if killed := len(hits) > 0 && strings.Contains(hits[0], "memory limit reached"); killed != c.killed {
			t.Errorf("two commands of 700 MiB under %d MiB: limits hit %q", c.limit>>20, hits)
		}
	}
}

func TestProcessLimit(t *testing.T) {
	f := newFixture(t)
	r := f.sandboxed(attackCmd(t, "procs", strconv.Itoa(ProcessLimit+100)))
	if r.ExitCode == 0 {
		t.Errorf("started %d processes past the limit: %q", ProcessLimit+100, r.Output)
	}
	t.Logf("sandboxed: %s", out(r))
	if r := f.unsandboxed(attackCmd(t, "procs", strconv.Itoa(ProcessLimit+100))); r.ExitCode != 0 {
		t.Errorf("negative control: could not start %d processes without the sandbox: %q", ProcessLimit+100, r.Output)
	}
}

func TestForkBomb(t *testing.T) {
	f := newFixture(t)
	m := marker()
	s := f.spec(": " + m + "; b(){ b | b & }; b; sleep 60")
	// The bomb is stopped once a fork has failed (the limit held), not after a fixed time: on a loaded machine
	// the shell can take seconds to reach the limit.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen bytes.Buffer
	var mu sync.Mutex
	s.OnOutput = func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		seen.Write(b)
		if bytes.Contains(seen.Bytes(), []byte("fork")) {
			cancel()
		}
	}
	s.Timeout = 45 * time.Second
	r, err := Run(ctx, s) // returning at all shows the broker stayed responsive
	if err != nil {
		t.Fatal(err)
	}
	if !r.Cancelled || !bytes.Contains(r.Output, []byte("fork")) {
		t.Errorf("fork bomb: cancelled %v (timed out %v), exit %d, output %q", r.Cancelled, r.TimedOut, r.ExitCode,
			r.Output[:min(200, len(r.Output))])
	}
	if sv := testproc.Live(m); len(sv) > 0 { // Run returns once the whole tree is gone
		t.Fatalf("%d fork bomb processes survived", len(sv))
	}
	// No negative control: an unbounded fork bomb would take down this shared machine; TestProcessLimit shows
	// the limit is what stops it.
}

// TestMemoryLimitUnderAnotherBrokersHigherOne: while a command of the user holds 700 MiB under a 2 GiB limit (one
// broker), another broker's command with a 512 MiB limit still starts, under a group of its own capped at 512 MiB
// (cgroup v1 refuses to lower the user's shared limit below what it holds: EBUSY). Found when two test packages ran
// memory tests at once.
func TestMemoryLimitUnderAnotherBrokersHigherOne(t *testing.T) {
	m := chooseMechanisms(true, nil)
	if m.memory != byCgroupV1 {
		t.Skipf("the memory limit is not a cgroup v1 group here (%s)", m.memWhy)
	}
	f := newFixture(t)
	release := filepath.Join(f.tmp, "release")
	held := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := f.spec(attackCmd(t, "alloc", "700", release))
		s.Limits = Limits{MemoryBytes: 2 << 30}
		var once sync.Once
		s.OnOutput = func(b []byte) {
			if strings.Contains(string(b), "allocated") {
				once.Do(func() { close(held) })
			}
		}
		if _, err := Run(context.Background(), s); err != nil {
			t.Error(err)
		}
		once.Do(func() { close(held) })
	}()
	<-held
	defer func() { must(t, os.WriteFile(release, nil, 0o644)); <-done }()
	cg, err := newCommandCgroup(m, 512<<20, 64)
	if err != nil {
		t.Fatalf("a command under a lower limit could not start beside the user's 700 MiB: %v", err)
	}
	defer cg.remove()
	b, err := os.ReadFile(filepath.Join(cg.mem, "memory.limit_in_bytes"))
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(512<<20) {
		t.Errorf("its own group's limit: %q %v, want %d", b, err, 512<<20)
	}
}
