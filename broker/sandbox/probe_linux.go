package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

// probeResult is what the probe stage of the helper found inside fresh namespaces ("" means it worked).
type probeResult struct {
	PidOne   bool
	Mount    string
	Proc     string
	Loopback string
	NNP      string
	Caps     string
	Seccomp  string
}

// runProbe tries, inside the namespaces it was cloned into, each step a sandboxed command needs, then exits.
func runProbe() {
	var r probeResult
	errStr := func(err error) string {
		if err != nil {
			return err.Error()
		}
		return ""
	}
	r.PidOne = os.Getpid() == 1
	if !r.PidOne {
		// Never touch the mounts of a namespace that was not made for the probe.
		_ = json.NewEncoder(os.Stdout).Encode(probeResult{Mount: "probe is not pid 1 of a new pid namespace"})
		os.Exit(1)
	}
	r.Mount = errStr(unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""))
	if r.Mount == "" {
		r.Proc = errStr(unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""))
	}
	if len(os.Args) > 4 && os.Args[4] == "net" {
		r.Loopback = errStr(loopbackUp())
	} else {
		r.Loopback = "not in a network namespace"
	}
	// The steps a command's process takes after fork, tried by a child that exits instead of exec'ing.
	r.NNP, r.Caps, r.Seccomp = probeConfine()
	_ = json.NewEncoder(os.Stdout).Encode(r)
	os.Exit(0)
}

// probeConfine forks a child that confines itself as a command's process does (without Landlock, which Probe
// checks apart) and says which step failed, if one did.
func probeConfine() (nnp, caps, seccomp string) {
	f, err := prepareFork(&helperSpec{Seccomp: seccompArchSupported, NetNS: true}, nil, true)
	if err != nil {
		return err.Error(), err.Error(), err.Error()
	}
	defer closeFork(f)
	pid, err := forkCommand(f)
	if pid > 0 {
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, 0, nil)
	}
	var ce *childError
	switch {
	case err == nil:
		if !seccompArchSupported {
			seccomp = "no syscall table for this architecture"
		}
		return "", "", seccomp
	case !errors.As(err, &ce):
		return err.Error(), err.Error(), err.Error()
	case ce.step == stepNoNewPrivs:
		return err.Error(), "not tried", "not tried"
	case ce.step == stepSeccomp:
		return "", "", err.Error()
	default:
		return "", err.Error(), "not tried"
	}
}

func runProbeHelper(netns bool) (*probeResult, error) {
	hs := &helperSpec{NetNS: netns}
	var args []string
	if netns {
		args = append(args, "net")
	}
	cmd, err := helperCommand("probe", args...)
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = sysProcAttr(hs)
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == refusedExit {
		return nil, errHelperRefused{strings.TrimSpace(string(ee.Stderr))}
	}
	if err != nil {
		return nil, fmt.Errorf("start probe (namespaces %s): %w", nsNames(cmd.SysProcAttr.Cloneflags), err)
	}
	var r probeResult
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("read probe result %q: %w", out, err)
	}
	return &r, nil
}

// Probe reports what the sandbox enforces on this machine (for `garuda-exec doctor` and the broker's Hello). It
// starts a short-lived helper in fresh namespaces, so the answer is what a command would really get.
func Probe() Report {
	var fs []Feature
	add := func(name string, ok bool, detail string) {
		fs = append(fs, Feature{Name: name, Enforced: ok, Detail: detail})
	}
	abi := landlockABI()
	switch {
	case abi >= minLandlockABI:
		add("landlock", true, fmt.Sprintf("ABI %d: writes only in the root, temp and cache folders; abstract sockets and signals scoped", abi))
	case abi > 0:
		add("landlock", false, fmt.Sprintf("ABI %d, need %d for scoping of abstract sockets and signals", abi, minLandlockABI))
	default:
		add("landlock", false, "not in this kernel or disabled at boot (lsm=landlock)")
	}
	root := os.Geteuid() == 0
	netns := true
	r, err := runProbeHelper(true)
	if err != nil {
		netns = false
		r, err = runProbeHelper(false)
	}
	helper := HelperReport()
	if refused := (errHelperRefused{}); errors.As(err, &refused) {
		helper.Enforced, helper.Detail = false, refused.msg
	}
	if err != nil && !helper.Enforced {
		err = errors.New("not probed: the sandbox helper may not run (see " + HelperFeature + ")")
	}
	if !root {
		add("user namespace", err == nil,
			map[bool]string{true: "the command runs as root of its own user namespace", false: fmt.Sprint(err)}[err == nil])
	}
	if err != nil {
		for _, n := range []string{"pid namespace", "mount namespace", "network namespace", "seccomp", "no_new_privs", "capabilities dropped"} {
			add(n, false, err.Error())
		}
	} else {
		add("pid namespace", r.PidOne && r.Proc == "", orDetail(r.Proc, "every process of a command ends with it"))
		add("mount namespace", r.Mount == "", orDetail(r.Mount, "protected paths read-only, secrets hidden"))
		switch {
		case netns && r.Loopback == "":
			add("network namespace", true, sessionNetworkDetail())
		case netns:
			add("network namespace", false, "loopback: "+r.Loopback)
		default:
			add("network namespace", false,
				"refused by the kernel: fallback is seccomp AF_UNIX-only sockets and Landlock TCP rules, so local servers cannot listen")
		}
		add("seccomp", r.Seccomp == "", orDetail(r.Seccomp, "io_uring, ptrace, bpf, keyctl, mount API, new user namespaces, TIOCSTI denied"))
		add("no_new_privs", r.NNP == "", orDetail(r.NNP, "set before exec"))
		add("capabilities dropped", r.Caps == "", orDetail(r.Caps, "every set and the bounding set cleared"))
	}
	limitFeatures(add, err == nil)
	return Report{Features: append(fs, helper)}
}

// sessionNetworkDetail says how network namespaces are shared here: one per session where its holder starts
// (NewNetwork), else one per command.
func sessionNetworkDetail() string {
	n, err := NewNetwork()
	if err != nil {
		return "one per command, only its own loopback (no namespace shared by a session: " + err.Error() + ")"
	}
	n.Close()
	return "one per session, only its loopback: a session's commands and background processes share it (each with its own " +
		"pid and mount namespaces and its own proxy), never another session's"
}

func orDetail(errText, ok string) string {
	if errText != "" {
		return errText
	}
	return ok
}

// limitFeatures reports how memory and processes are limited here. A cgroup v1 group is made and removed to
// prove it works; a delegated cgroup v2 is only checked (using it moves the broker into a leaf of its cgroup).
func limitFeatures(add func(name string, ok bool, detail string), userNS bool) {
	m := chooseMechanisms(true, nil)
	lim := Limits{}.withDefaults()
	var cgErr error
	if m.memory == byCgroupV1 || m.pids == byCgroupV1 {
		cg, err := newCommandCgroup(m, lim.MemoryBytes, lim.Processes)
		if cg != nil {
			cg.remove()
		}
		cgErr = err
	}
	mib := lim.MemoryBytes >> 20
	together := fmt.Sprintf("each command, and all of this user's commands together, at most %d MiB by default "+
		"(limits.memory_mb); commands' oom_score_adj %d", mib, commandOOMScoreAdj)
	switch {
	case cgErr != nil && m.memory == byCgroupV1:
		add("memory limit", false, "cgroup v1 memory: "+cgErr.Error())
	case m.memory == byCgroupV2:
		add("memory limit", true, "cgroup v2 memory controller (delegated, "+m.v2Dir+"): "+together)
	case m.memory == byCgroupV1:
		add("memory limit", true, "cgroup v1 memory (as root): "+together)
	default:
		add("memory limit", true, fmt.Sprintf("RLIMIT_DATA %d MiB for each process by default (limits.memory_mb), "+
			"not all commands together; no memory cgroup: %s. This fallback breaks sanitizer builds that reserve "+
			"large mappings (gcc/clang -fsanitize=address or thread, ASan, TSan; Go's -race works): delegate a "+
			"cgroup v2 memory controller to the broker, or run it as root with cgroup v1", mib, m.memWhy))
	}
	switch {
	case cgErr != nil && m.pids == byCgroupV1:
		add("process limit", false, "cgroup v1 pids: "+cgErr.Error())
	case m.pids == byCgroupV2:
		add("process limit", true, fmt.Sprintf("cgroup v2 pids.max %d by default (limits.processes)", lim.Processes))
	case m.pids == byCgroupV1:
		add("process limit", true, fmt.Sprintf("cgroup v1 pids.max %d by default (limits.processes)", lim.Processes))
	case os.Geteuid() == 0:
		add("process limit", false, "as root RLIMIT_NPROC is not enforced and no pids cgroup: "+m.pidsWhy)
	default:
		add("process limit", userNS,
			fmt.Sprintf("RLIMIT_NPROC %d by default (limits.processes) in the command's user namespace", lim.Processes))
	}
}
