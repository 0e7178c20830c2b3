package sandbox

import (
	"os"
	"path/filepath"
	"testing"
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
