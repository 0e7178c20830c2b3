// A command's resource limits: the mechanism that enforces each (a cgroup, cgroup_linux.go, or a resource limit set
// by the helper), its OOM score, and how a limit reached is told.

package sandbox

import (
	"bytes"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// commandLimits makes the command's cgroup, or sets hs's resource limits where no cgroup enforces them. It fails
// closed (ErrUnavailable) unless s.AllowWeaker, which turns a missing limit into a notice.
func commandLimits(s Spec, hs *helperSpec, lim Limits) (*commandCgroup, []string, error) {
	if s.Unsandboxed {
		return nil, nil, nil
	}
	var notices []string
	var cg *commandCgroup
	var err error
	mech := chooseMechanisms(true, nil)
	if mech.memory == byCgroupV2 {
		if cg, err = newCommandCgroup(mech, lim.MemoryBytes, lim.Processes); err != nil {
			// A delegated cgroup v2 that does not work out: the next mechanism, and say why.
			notices = append(notices, "cgroup v2 limits failed, using the next mechanism: "+err.Error())
			mech = chooseMechanisms(false, err)
		}
	}
	switch {
	case cg != nil:
	case mech.pids == byRlimit && os.Geteuid() == 0:
		err = fmt.Errorf("as root RLIMIT_NPROC is not enforced and no pids cgroup: %s", mech.pidsWhy)
	default:
		cg, err = newCommandCgroup(mech, lim.MemoryBytes, lim.Processes)
	}
	if err != nil {
		if !s.AllowWeaker {
			return nil, notices, fmt.Errorf("run %q: resource limits: %w; run `garuda-exec doctor`: %w", s.Command, err, ErrUnavailable)
		}
		notices = append(notices, "weaker sandbox: no cgroup limits ("+err.Error()+")")
		mech = limitMechanisms{}
	}
	if mech.pids == byRlimit {
		hs.Nproc = uint64(lim.Processes)
	}
	if mech.memory == byRlimit {
		hs.DataLimit = uint64(lim.MemoryBytes)
	}
	return cg, notices, nil
}

// commandOOMScoreAdj is every command's oom_score_adj: the first the kernel kills when memory runs out.
const commandOOMScoreAdj = 1000

// allocationFailed reports whether a command's output says an allocation failed (what a process under
// RLIMIT_DATA prints: C's strerror, GNU tools, Go, Python, C++, Node).
func allocationFailed(out []byte) bool {
	for _, s := range []string{"Cannot allocate memory", "memory exhausted", "out of memory", "MemoryError",
		"std::bad_alloc", "heap out of memory", "cannot allocate"} {
		if bytes.Contains(out, []byte(s)) {
			return true
		}
	}
	return false
}

// totalMemory is the machine's memory in bytes (0 when unknown).
func totalMemory() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
