// TestMain: the test binary is also the sandbox's helper and the attack tool (tool_linux_test.go); the tests
// run in a memory cgroup of their own.

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	MaybeRunHelper()
	if len(os.Args) > 2 && os.Args[1] == attackArg {
		os.Exit(runAttack(os.Args[2:])) // the one helper process of this package's tests
	}
	restore := isolateMemoryCgroup()
	code := m.Run()
	restore()
	os.Exit(code)
}

// isolateMemoryCgroup moves this test binary (as root, with cgroup v1 memory) into a memory cgroup of its own, so
// that the per-user parent group its commands share (garuda/u0, below the broker's own cgroup) is this binary's:
// other test binaries running at the same time (go test ./... runs packages in parallel) set the bound of their
// own parent, not of this one. It returns the function that moves the binary back and removes the group.
func isolateMemoryCgroup() func() {
	if os.Geteuid() != 0 {
		return func() {}
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return func() {}
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[1] != "memory" {
			continue
		}
		own := filepath.Join("/sys/fs/cgroup/memory", parts[2])
		dir := filepath.Join(own, fmt.Sprintf("garuda-tests-%d", os.Getpid()))
		if os.Mkdir(dir, 0o755) != nil {
			return func() {}
		}
		pid := []byte(strconv.Itoa(os.Getpid()))
		if os.WriteFile(filepath.Join(dir, "cgroup.procs"), pid, 0o644) != nil {
			os.Remove(dir)
			return func() {}
		}
		return func() {
			os.WriteFile(filepath.Join(own, "cgroup.procs"), pid, 0o644)
			os.Remove(filepath.Join(dir, "garuda"))
			os.Remove(dir)
		}
	}
	return func() {}
}
