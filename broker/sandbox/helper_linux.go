// The sandbox helper: garuda-sandbox (or the broker re-executed) with HelperArg, its stages (init: a command's
// pid 1; probe; holder), and the spec and status that pass between the broker and it.

package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/garuda-dev/garuda/internal/version"
)

// helperSpec is what the broker sends the helper on fd 3 (never argv or env, which the command could read).
type helperSpec struct {
	Command      string
	Argv         []string // Spec.Argv: run without a shell
	Dir          string
	Root         string
	ReadOnlyRoot bool
	Writable     []string
	ReadOnly     []string
	Hidden       []string
	Reveal       []string // folders inside Hidden ones bound back read-only (Spec.Reveal)
	Sockets      []string // pathname unix sockets bound in the broker's network namespace, hidden from the command
	Env          []string
	Unsandboxed  bool
	NetNS        bool // a new network namespace exists (else the Landlock TCP + seccomp AF_UNIX fallback)
	SharedNet    bool // the namespace is the session's (Spec.Network): its loopback is up already
	Landlock     bool
	Seccomp      bool
	Nproc        uint64 // >0: set RLIMIT_NPROC (counted per user namespace, so only the command's processes)
	DataLimit    uint64 // >0: set RLIMIT_DATA before execve (no memory cgroup here)
	PrivateShm   bool   // set by the init stage: /dev/shm is a private tmpfs the command may write
	PrivatePts   bool   // set by the init stage: /dev/pts is a devpts instance of the sandbox's own
	ProxySocket  string // the broker's proxy: pid 1 forwards the namespace's 127.0.0.1:<port> to it (Spec.Proxy)
	// CgroupTasks are the tasks files of the command's cgroup v1 groups: pid 1's main thread, which forks the
	// command, joins them itself (writing 0 moves the writing thread alone, with no wait for an RCU grace period;
	// moving a process takes one, 3-12 ms here), so that the command is born in its groups.
	CgroupTasks []string
}

// helperStatus is what the init stage reports to the broker on fd 4 when the command has ended.
type helperStatus struct {
	Exit       int
	Signal     int
	SetupError string
	// ProgramError says why the command's program (Program) could not be started (ProgramErrno: the kernel's answer
	// to execve, 0 when it was not found on PATH).
	Program      string
	ProgramError string
	ProgramErrno int
}

// MaybeRunHelper runs the sandbox helper and exits when the process was started as one (os.Args[1] == HelperArg);
// otherwise it returns at once. Call it first thing in main() of garuda-exec (the helper where garuda-sandbox is
// absent) and in TestMain.
func MaybeRunHelper() {
	if len(os.Args) < 3 || os.Args[1] != HelperArg {
		return
	}
	stage, token := os.Args[2], ""
	if len(os.Args) > 3 {
		token = os.Args[3]
	}
	checkToken(stage, token)
	// Started through /proc/self/fd/N, its name would be "N" in ps and top.
	_ = os.WriteFile("/proc/self/comm", []byte(HelperName), 0)
	switch stage {
	case "init":
		runInit()
	case "probe":
		runProbe()
	case "holder":
		runHolder()
	}
	fmt.Fprintf(os.Stderr, "garuda sandbox: unknown helper stage %q\n", stage)
	os.Exit(126)
}

// HelperMain is the whole of garuda-sandbox: a helper stage when the broker starts it as one (it does not return
// then), else its version, or what it is, with exit status 2.
func HelperMain(args []string, stdout, stderr io.Writer) int {
	MaybeRunHelper()
	if len(args) == 1 && (args[0] == "version" || args[0] == "--version") {
		p, _, _ := strings.Cut(helperToken(), "/")
		fmt.Fprintf(stdout, "%s %s (sandbox protocol %s)\n", HelperName, version.Version, p)
		return 0
	}
	fmt.Fprintf(stderr, "%s is the sandbox helper of garuda-exec, which runs it for every sandboxed command; it is not "+
		"run by hand. It must stay beside garuda-exec, from the same build.\n", HelperName)
	return 2
}

// readSpec reads the spec the broker sends first on fd 3; the pipe stays open (waitGo reads its end).
func readSpec(f *os.File) (*helperSpec, error) {
	var hs helperSpec
	if err := json.NewDecoder(f).Decode(&hs); err != nil {
		return nil, fmt.Errorf("read sandbox spec: %w", err)
	}
	return &hs, nil
}

// waitGo waits for the broker to close the spec pipe: it does so once the helper is in the command's cgroup and has
// its OOM score, so that the command starts under its limits (defends against a command escaping them by starting
// before its helper was moved). Whatever else comes before the end is ignored.
func waitGo(f *os.File) error {
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil {
		return fmt.Errorf("wait for the broker: %w", err)
	}
	return nil
}
