package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCgroupFolder: a cgroup path is found in a mount of the whole hierarchy and in a mount of part of it.
func TestCgroupFolder(t *testing.T) {
	cases := []struct {
		m    cgroupMount
		path string
		want string
	}{
		{cgroupMount{point: "/sys/fs/cgroup/memory", root: "/"}, "/a/b", "/sys/fs/cgroup/memory/a/b"},
		{cgroupMount{point: "/sys/fs/cgroup", root: "/", v2: true}, "/", "/sys/fs/cgroup"},
		{cgroupMount{point: "/sys/fs/cgroup", root: "/user.slice"}, "/user.slice/u.service", "/sys/fs/cgroup/u.service"},
		{cgroupMount{point: "/sys/fs/cgroup", root: "/user.slice"}, "/system.slice/x", ""},
	}
	for _, c := range cases {
		got, ok := c.m.folder(c.path)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%+v folder(%q) = %q, %v; want %q", c.m, c.path, got, ok, c.want)
		}
	}
}

// TestCgroupCounters: the counters that say a limit was hit are read from the kernel's flat-keyed files.
func TestCgroupCounters(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "pids.events"), []byte("max 0\n"), 0o644))
	cg := &commandCgroup{mem: dir, pids: dir, memLimit: 1 << 30, pidsLimit: 64}
	hit := cg.hit()
	if len(hit) != 1 || hit[0] != "memory limit reached (1024 MiB for each command and for all of this user's commands together; "+
		"limits.memory_mb): the kernel killed 2 processes of the command" {
		t.Errorf("hit %q", hit)
	}
	must(t, os.WriteFile(filepath.Join(dir, "pids.events"), []byte("max 1\n"), 0o644))
	if hit := cg.hit(); len(hit) != 2 || hit[1] != "process limit reached (64 processes and threads; limits.processes): 1 fork refused" {
		t.Errorf("hit %q", hit)
	}
}

// TestCgroupV2Layout: in a delegated cgroup v2 folder (here a plain folder standing in for one: this machine's
// memory controller is on cgroup v1), the user's parent bounds memory and each command's group has its limits.
func TestCgroupV2Layout(t *testing.T) {
	own := t.TempDir()
	cg, err := newCommandCgroup(limitMechanisms{memory: byCgroupV2, pids: byCgroupV2, v2Dir: own}, 1<<30, 64)
	must(t, err)
	parent := filepath.Join(own, "garuda-u"+strconv.Itoa(os.Geteuid()))
	want := map[string]string{
		filepath.Join(own, "cgroup.subtree_control"):    "+memory +pids",
		filepath.Join(parent, "cgroup.subtree_control"): "+memory +pids",
		filepath.Join(parent, "memory.max"):             "1073741824",
		filepath.Join(cg.mem, "memory.max"):             "1073741824",
		filepath.Join(cg.mem, "memory.swap.max"):        "0",
		filepath.Join(cg.pids, "pids.max"):              "64",
	}
	for p, v := range want {
		if b, err := os.ReadFile(p); err != nil || string(b) != v {
			t.Errorf("%s = %q (%v), want %q", p, b, err, v)
		}
	}
	if filepath.Dir(cg.mem) != parent || cg.mem != cg.pids || len(cg.dirs) != 1 {
		t.Errorf("groups %+v", cg)
	}
}

// The sweep of a dead broker's empty groups spares a fresh one: another broker's group between its mkdir and its
// helper joining it looks like a dead broker's from another pid namespace. An old one is swept (the control).
func TestSweepSparesFreshGroups(t *testing.T) {
	parent := t.TempDir() // plain folders stand in for the groups: the sweep only reads names and times
	dead := 1 << 22       // above pid_max's default: no such process
	fresh := filepath.Join(parent, fmt.Sprintf("%d-1", dead))
	old := filepath.Join(parent, fmt.Sprintf("%d-2", dead))
	for _, d := range []string{fresh, old} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * staleCgroupAge)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	sweepStaleCgroups(parent)
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh group was swept: %v", err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("an old empty group of a dead broker was kept: %v", err)
	}
}

// TestCgroupV1ConcurrentCommands: commands of one user starting and ending at once never fail their set-up,
// though each end removes the shared per-user parent when it looks empty (the soak saw "set memory.limit_in_bytes
// in …/garuda/u0: no such device" when a parent was removed between its mkdir and the write of its limit).
func TestCgroupV1ConcurrentCommands(t *testing.T) {
	m := chooseMechanisms(false, nil)
	if m.memory != byCgroupV1 {
		t.Skipf("the memory limit is not a cgroup v1 group here (%s): the race is v1's only", m.memWhy)
	}
	const workers, rounds = 4, 150
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			for i := 0; i < rounds; i++ {
				cg, err := newCommandCgroup(m, 1<<30, 64)
				if err != nil {
					errs <- err
					return
				}
				cg.remove()
			}
			errs <- nil
		}()
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Fatalf("a command's cgroup set-up failed while others ended: %v", err)
		}
	}
}

// TestAttackCgroupEscape: a root command cannot move itself out of its pids cgroup or raise its pids.max.
// Found by red team.
func TestAttackCgroupEscape(t *testing.T) {
	if !isRoot() {
		t.Skip("the pids cgroup is used only by a root broker")
	}
	f := newFixture(t)
	cmd := `g=$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup); echo 100000 > /sys/fs/cgroup/pids$g/pids.max; echo $$ > /sys/fs/cgroup/pids/cgroup.procs; sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup`
	r := f.sandboxed(cmd)
	if !strings.Contains(out(r), "/garuda/") || strings.Count(out(r), "Read-only file system")+strings.Count(out(r), "Permission denied") < 2 {
		t.Errorf("cgroup escape from the sandbox: %q", r.Output)
	}
	// Negative control: without the sandbox, uid 0 moves a process of its own to the root pids cgroup.
	if r := f.unsandboxed(`echo $$ > /sys/fs/cgroup/pids/cgroup.procs && sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup`); out(r) != "/" {
		t.Errorf("negative control: %q", r.Output)
	}
}
