// The helper's init stage: pid 1 of a command's pid namespace, which sets up its mount and network namespaces,
// forks the command (fork_linux.go), forwards SIGTERM, reaps orphans and reports how the command ended.

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// runInit is pid 1 of the command's pid namespace: it sets up the mount and network namespaces, forks the command
// (which confines itself, fork_linux.go), forwards SIGTERM to every process of the namespace, reaps orphans, and
// exits with the command's status (the kernel then kills whatever the command left behind).
func runInit() {
	// Everything below runs on the main thread, which forks the command (and joins its cgroups first).
	runtime.LockOSThread()
	status := os.NewFile(4, "status")
	report := func(st helperStatus) {
		_ = json.NewEncoder(status).Encode(st)
		status.Close()
		os.Exit(0)
	}
	var terminating atomic.Bool
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	go func() {
		for range sigs {
			terminating.Store(true)
			// From pid 1, kill(-1) reaches every other process of this pid namespace and nothing outside it.
			_ = unix.Kill(-1, unix.SIGTERM)
		}
	}()
	if os.Getpid() != 1 {
		// Only ever touch the mounts of a namespace made for this command (defends the host's mount table
		// against the hidden entry being run by hand).
		report(helperStatus{SetupError: "sandbox helper is not pid 1 of a new pid namespace: refusing to set up mounts"})
	}
	// The broker's pipes (spec, status) are pid 1's alone: defends against a child inheriting them.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		report(helperStatus{SetupError: fmt.Sprintf("mark descriptors close-on-exec: %v", err)})
	}
	specFile := os.NewFile(3, "spec")
	hs, err := readSpec(specFile)
	if err != nil {
		report(helperStatus{SetupError: err.Error()})
	}
	for _, tasks := range hs.CgroupTasks {
		// Before lockDown makes the cgroup file systems read-only in this namespace. Defends the limits: the
		// command starts only from inside its groups.
		if err := os.WriteFile(tasks, []byte("0"), 0); err != nil {
			report(helperStatus{SetupError: fmt.Sprintf("join the command's cgroup: %v", err)})
		}
	}
	if err := setupNamespace(hs); err != nil {
		report(helperStatus{SetupError: err.Error()})
	}
	if hs.ProxySocket != "" && hs.NetNS {
		// pid 1 holds the forwarder for the command's lifetime; it dies with the namespace.
		addr, _, err := Forward(hs.ProxySocket, hs.SharedNet)
		if err != nil {
			report(helperStatus{SetupError: err.Error()})
		}
		hs.Env = ProxyEnv(hs.Env, addr)
	}
	if hs.Nproc > 0 {
		lim := unix.Rlimit{Cur: hs.Nproc, Max: hs.Nproc}
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &lim); err != nil {
			report(helperStatus{SetupError: fmt.Sprintf("set RLIMIT_NPROC %d: %v", hs.Nproc, err)})
		}
	}
	argv, err := commandArgv(hs)
	if err != nil {
		report(helperStatus{Program: hs.Argv[0], ProgramError: err.Error()})
	}
	fs, err := prepareFork(hs, argv, false)
	if err != nil {
		report(helperStatus{SetupError: err.Error()})
	}
	if err := waitGo(specFile); err != nil {
		report(helperStatus{SetupError: err.Error()})
	}
	// pid 1 keeps its capabilities; not dumpable, its memory and descriptors (/proc/1/mem, /proc/1/fd) stay out of
	// the command's reach whatever it keeps (defends against a command reading or steering pid 1).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		report(helperStatus{SetupError: fmt.Sprintf("make the sandbox's pid 1 not dumpable: %v", err)})
	}
	if terminating.Load() {
		report(helperStatus{Signal: int(unix.SIGTERM), Exit: 128 + int(unix.SIGTERM)})
	}
	// The command's stdin is the helper's: /dev/null, or the pipe of Spec.Stdin (then only the command holds it).
	pid, err := forkCommand(fs)
	closeFork(fs)
	os.Stdin.Close()
	if terminating.Load() {
		_ = unix.Kill(-1, unix.SIGTERM) // a SIGTERM that came while the command was being forked reaches it too
	}
	var failed helperStatus
	if ce := (*childError)(nil); errors.As(err, &ce) && ce.step == stepExec {
		// The program itself could not be started (missing, not executable): the command's fault, not the sandbox's.
		failed = helperStatus{Program: argv[0], ProgramError: ce.errno.Error(), ProgramErrno: int(ce.errno)}
	} else if err != nil {
		failed = helperStatus{SetupError: err.Error()}
	}
	if err != nil && pid == 0 {
		report(failed)
	}
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			report(helperStatus{SetupError: fmt.Sprintf("wait for the command: %v", err)})
		}
		if wpid != pid {
			continue // an orphan reparented to us: reaped
		}
		switch {
		case failed.SetupError != "" || failed.ProgramError != "":
			report(failed)
		case ws.Signaled():
			report(helperStatus{Signal: int(ws.Signal()), Exit: 128 + int(ws.Signal())})
		default:
			report(helperStatus{Exit: ws.ExitStatus()})
		}
	}
}

// setupNamespace prepares the mount and network namespaces the helper was cloned into.
func setupNamespace(hs *helperSpec) error {
	// Private propagation keeps every mount below inside this namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	procFlags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	if !hs.Unsandboxed {
		// One reading of the mount table serves both: lockDown's self-binds add no other name of any path.
		mounts := readMountinfo()
		if err := lockDown(hs, mounts); err != nil {
			return err
		}
		if err := protectPaths(hs, mounts); err != nil {
			return err
		}
		procFlags |= unix.MS_RDONLY // sysctls and /proc/<pid> files: Landlock refuses writes there too
	}
	// A fresh /proc shows only this pid namespace (defends against reading other processes' environ and cmdline).
	if err := unix.Mount("proc", "/proc", "proc", procFlags, ""); err != nil {
		return fmt.Errorf("mount /proc for the pid namespace: %w", err)
	}
	if hs.NetNS && !hs.SharedNet {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	return nil
}

// commandArgv is what pid 1 execs: bash -c Command (/bin/sh where there is no bash), or Argv with its program found
// as a shell finds it, on the PATH of the command's environment, in the sandbox's own view of the files.
func commandArgv(hs *helperSpec) ([]string, error) {
	if len(hs.Argv) == 0 {
		shell := "/bin/bash"
		if _, err := os.Stat(shell); err != nil {
			shell = "/bin/sh"
		}
		return []string{shell, "-c", hs.Command}, nil
	}
	prog := hs.Argv[0]
	if strings.Contains(prog, "/") {
		return append([]string{prog}, hs.Argv[1:]...), nil
	}
	path := ""
	for _, kv := range hs.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // a relative PATH entry would be looked up in the project: a planted program
		}
		p := filepath.Join(dir, prog)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return append([]string{p}, hs.Argv[1:]...), nil
		}
	}
	return nil, fmt.Errorf("not found on the command's PATH (%s)", path)
}
