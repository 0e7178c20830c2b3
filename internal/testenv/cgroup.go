package testenv

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// IsolateMemoryCgroup moves this test binary (as root, with cgroup v1 memory) into a memory cgroup of its own, so
// that the per-user parent group the commands of its brokers share (garuda/u0, below the broker's own cgroup) is
// this binary's: other test binaries running at the same time (go test runs packages in parallel) set the bound of
// their own parent, and their memory floods are not counted in this one's. Call it from TestMain, before m.Run; it
// returns the function that moves the binary back and removes the group. Elsewhere it does nothing.
func IsolateMemoryCgroup() (restore func()) {
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
			// The groups below it (garuda/u0 and any command's left by a test that failed), deepest first.
			var dirs []string
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			for _, d := range slices.Backward(dirs) {
				os.Remove(d)
			}
		}
	}
	return func() {}
}
