package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// helperSpec is what the broker sends the helper on fd 3 (never argv or env, which the command could read).
type helperSpec struct {
	Command      string
	Dir          string
	Root         string
	ReadOnlyRoot bool
	Writable     []string
	ReadOnly     []string
	Hidden       []string
	Sockets      []string // pathname unix sockets bound in the broker's network namespace, hidden from the command
	Env          []string
	Unsandboxed  bool
	NetNS        bool // a new network namespace exists (else the Landlock TCP + seccomp AF_UNIX fallback)
	Landlock     bool
	Seccomp      bool
	Nproc        uint64 // >0: set RLIMIT_NPROC (counted per user namespace, so only the command's processes)
	PrivateShm   bool   // set by the init stage: /dev/shm is a private tmpfs the command may write
}

// helperStatus is what the init stage reports to the broker on fd 4 when the command has ended.
type helperStatus struct {
	Exit       int
	Signal     int
	SetupError string
}

// MaybeRunHelper runs the sandbox helper and exits when the process was started as one (os.Args[1] == HelperArg);
// otherwise it returns at once. Call it first thing in main() of garuda-exec and in TestMain.
func MaybeRunHelper() {
	if len(os.Args) < 3 || os.Args[1] != HelperArg {
		return
	}
	switch os.Args[2] {
	case "init":
		runInit()
	case "exec":
		runExec()
	case "probe":
		runProbe()
	}
	fmt.Fprintf(os.Stderr, "garuda sandbox: unknown helper stage %q\n", os.Args[2])
	os.Exit(126)
}

func readSpec() (*helperSpec, error) {
	f := os.NewFile(3, "spec")
	defer f.Close()
	var hs helperSpec
	if err := json.NewDecoder(f).Decode(&hs); err != nil {
		return nil, fmt.Errorf("read sandbox spec: %w", err)
	}
	return &hs, nil
}

// runInit is pid 1 of the command's pid namespace: it sets up the mount and network namespaces, starts the exec
// stage, forwards SIGTERM to every process of the namespace, reaps orphans, and exits with the command's status
// (the kernel then kills whatever the command left behind).
func runInit() {
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
	hs, err := readSpec()
	if err != nil {
		report(helperStatus{SetupError: err.Error()})
	}
	if err := setupNamespace(hs); err != nil {
		report(helperStatus{SetupError: err.Error()})
	}
	if hs.Nproc > 0 {
		lim := unix.Rlimit{Cur: hs.Nproc, Max: hs.Nproc}
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &lim); err != nil {
			report(helperStatus{SetupError: fmt.Sprintf("set RLIMIT_NPROC %d: %v", hs.Nproc, err)})
		}
	}
	if terminating.Load() {
		report(helperStatus{Signal: int(unix.SIGTERM), Exit: 128 + int(unix.SIGTERM)})
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		report(helperStatus{SetupError: fmt.Sprintf("spec pipe: %v", err)})
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		report(helperStatus{SetupError: fmt.Sprintf("error pipe: %v", err)})
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		report(helperStatus{SetupError: fmt.Sprintf("open %s: %v", os.DevNull, err)})
	}
	proc, err := os.StartProcess("/proc/self/exe", []string{"garuda-sandbox", HelperArg, "exec"}, &os.ProcAttr{
		Env:   []string{},
		Files: []*os.File{devNull, os.Stdout, os.Stderr, specR, errW},
		Sys:   &syscall.SysProcAttr{Pdeathsig: unix.SIGKILL},
	})
	if err != nil {
		report(helperStatus{SetupError: fmt.Sprintf("start exec stage: %v", err)})
	}
	specR.Close()
	errW.Close()
	devNull.Close()
	_ = json.NewEncoder(specW).Encode(hs)
	specW.Close()
	// EOF here means the exec stage reached execve (the pipe is close-on-exec); bytes mean it failed.
	msg, _ := io.ReadAll(errR)
	errR.Close()
	var setupErr string
	if len(msg) > 0 {
		setupErr = string(msg)
	}
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			report(helperStatus{SetupError: fmt.Sprintf("wait for the command: %v", err)})
		}
		if pid != proc.Pid {
			continue // an orphan reparented to us: reaped
		}
		switch {
		case setupErr != "":
			report(helperStatus{SetupError: setupErr})
		case ws.Signaled():
			report(helperStatus{Signal: int(ws.Signal()), Exit: 128 + int(ws.Signal())})
		default:
			report(helperStatus{Exit: ws.ExitStatus()})
		}
	}
}

// runExec confines its own thread and execs the command; it runs as the only child of the init stage.
func runExec() {
	runtime.LockOSThread() // every per-thread restriction below must be on the thread that calls execve
	errW := os.NewFile(4, "error")
	fail := func(err error) {
		fmt.Fprintf(errW, "%v", err)
		os.Exit(126)
	}
	hs, err := readSpec()
	if err != nil {
		fail(err)
	}
	if err := unix.Chdir(hs.Dir); err != nil {
		fail(fmt.Errorf("enter working folder %s: %w", hs.Dir, err))
	}
	if !hs.Unsandboxed {
		if err := confine(hs); err != nil {
			fail(err)
		}
	}
	// No descriptor but 0, 1, 2 reaches the command (defends against leaking the broker's files or sockets).
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fail(fmt.Errorf("mark descriptors close-on-exec: %w", err))
	}
	shell := "/bin/bash"
	if _, err := os.Stat(shell); err != nil {
		shell = "/bin/sh"
	}
	err = unix.Exec(shell, []string{filepath.Base(shell), "-c", hs.Command}, hs.Env)
	fail(fmt.Errorf("exec %s: %w", shell, err))
}

// setupNamespace prepares the mount and network namespaces the helper was cloned into.
func setupNamespace(hs *helperSpec) error {
	// Private propagation keeps every mount below inside this namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if !hs.Unsandboxed {
		if err := protectPaths(hs); err != nil {
			return err
		}
	}
	// A fresh /proc shows only this pid namespace (defends against reading other processes' environ and cmdline).
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc for the pid namespace: %w", err)
	}
	if hs.NetNS {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	return nil
}

func bindSelf(p string) error {
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", p, err)
	}
	return nil
}

func makeReadOnly(p string) error {
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, p, unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("make %s read-only: %w", p, err)
	}
	return nil
}

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// protectPaths makes protected paths read-only and hides secrets and outside unix sockets.
func protectPaths(hs *helperSpec) error {
	var writable []string
	if !hs.ReadOnlyRoot {
		writable = append(writable, hs.Root)
	}
	writable = append(writable, hs.Writable...)
	// A read-only mount inside a writable tree can be dodged by renaming its parent away and putting a copy in its
	// place; every folder between a writable place and a protected path becomes a mount point, which cannot be
	// renamed or removed (EBUSY).
	anc := map[string]bool{}
	for _, p := range hs.ReadOnly {
		for _, w := range writable {
			if !within(p, w) || p == w {
				continue
			}
			for a := filepath.Dir(p); a != w && within(a, w); a = filepath.Dir(a) {
				if fi, err := os.Lstat(a); err == nil && fi.IsDir() {
					anc[a] = true
				}
			}
		}
	}
	ancs := make([]string, 0, len(anc))
	for a := range anc {
		ancs = append(ancs, a)
	}
	sort.Slice(ancs, func(i, j int) bool { return strings.Count(ancs[i], "/") < strings.Count(ancs[j], "/") })
	for _, a := range ancs {
		if err := bindSelf(a); err != nil {
			return err
		}
	}
	// Protected paths (.git/hooks, .git/config, .garuda/, …) become read-only mounts: defends against a command
	// planting hooks or config that run code later outside the sandbox.
	for _, p := range hs.ReadOnly {
		// Missing, or below a file (.git/config where .git is a worktree's gitdir file): nothing to cover.
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err := bindSelf(p); err != nil {
			return err
		}
		if err := makeReadOnly(p); err != nil {
			return err
		}
	}
	// Secrets disappear behind an empty read-only tmpfs or /dev/null: defends against reading credentials.
	for _, h := range hs.Hidden {
		fi, err := os.Stat(h)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			continue
		}
		if err != nil {
			return fmt.Errorf("hide %s: %w", h, err)
		}
		if fi.IsDir() {
			if err := unix.Mount("tmpfs", h, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555"); err != nil {
				return fmt.Errorf("hide folder %s: %w", h, err)
			}
			continue
		}
		if err := hideFile(h); err != nil {
			return err
		}
	}
	// A private /dev/shm (POSIX semaphores and shared memory: Python multiprocessing, browsers) that the command
	// may write; the host's shared memory objects stay out of view.
	if fi, err := os.Stat(shmDir); err == nil && fi.IsDir() {
		if err := unix.Mount("tmpfs", shmDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=256m,mode=1777"); err != nil {
			return fmt.Errorf("mount a private %s: %w", shmDir, err)
		}
		hs.PrivateShm = true
	}
	// Pathname unix sockets of the host (the broker's socket, docker.sock, dbus…) are not covered by Landlock before
	// ABI 9 nor by the network namespace: cover each with /dev/null. Defends against talking to host daemons.
	for _, s := range hs.Sockets {
		fi, err := os.Lstat(s)
		if err != nil || fi.Mode()&fs.ModeSocket == 0 {
			continue // gone, unreachable, or not a socket any more
		}
		if err := hideFile(s); err != nil {
			return err
		}
	}
	return nil
}

const shmDir = "/dev/shm"

func hideFile(p string) error {
	if err := unix.Mount(os.DevNull, p, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("hide file %s: %w", p, err)
	}
	if err := makeReadOnly(p); err != nil {
		return err
	}
	return nil
}

// loopbackUp brings up lo in the new network namespace so local servers work; nothing else is reachable.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring up loopback: socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring up loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up loopback: read flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up loopback: set flags: %w", err)
	}
	return nil
}
