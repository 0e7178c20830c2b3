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
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/garuda-dev/garuda/internal/pathglob"
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
	case "probe":
		runProbe()
	case "holder":
		runHolder()
	}
	fmt.Fprintf(os.Stderr, "garuda sandbox: unknown helper stage %q\n", os.Args[2])
	os.Exit(126)
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
	shell := "/bin/bash"
	if _, err := os.Stat(shell); err != nil {
		shell = "/bin/sh"
	}
	fs, err := prepareFork(hs, []string{shell, "-c", hs.Command}, false)
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
	var setupErr string
	if err != nil {
		setupErr = err.Error()
		if pid == 0 {
			report(helperStatus{SetupError: setupErr})
		}
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
		case setupErr != "":
			report(helperStatus{SetupError: setupErr})
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

// safeDevices are the only device nodes a command can open; every other mount is nodev.
var safeDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

func writablePlaces(hs *helperSpec) []string {
	var w []string
	if !hs.ReadOnlyRoot {
		w = append(w, hs.Root)
	}
	w = append(w, hs.Writable...)
	// A place inside another is bound after it, on top.
	sort.SliceStable(w, func(i, j int) bool { return strings.Count(w[i], "/") < strings.Count(w[j], "/") })
	return w
}

// lockDown makes every mount read-only, nosuid and nodev, then makes the writable places (and the mounts below
// them that were writable) writable again and lets safeDevices be opened. Landlock covers neither chmod, chown,
// utimes and extended attributes nor opening device nodes for reading: defends against changing files' modes
// and times outside the writable places, and against reading raw disks, consoles, terminals or a device node
// found anywhere.
func lockDown(hs *helperSpec, mounts []mountEntry) error {
	places := writablePlaces(hs)
	var rw []string
	for _, w := range places {
		for _, m := range append([]string{w}, mountPointsBelow(w, mounts)...) {
			var st unix.Statfs_t
			if err := unix.Statfs(m, &st); err == nil && st.Flags&unix.ST_RDONLY == 0 {
				rw = append(rw, m)
			}
		}
	}
	for _, w := range places {
		if err := bindSelf(w); err != nil {
			return err
		}
	}
	var devs []string
	for _, d := range safeDevices {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&fs.ModeCharDevice != 0 {
			if err := bindSelf(d); err != nil {
				return err
			}
			devs = append(devs, d)
		}
	}
	if err := setMountAttr("/", unix.AT_RECURSIVE, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, 0); err != nil {
		return err
	}
	for _, m := range rw {
		if err := setMountAttr(m, 0, 0, unix.MOUNT_ATTR_RDONLY); err != nil {
			return err
		}
	}
	for _, d := range devs {
		if err := setMountAttr(d, 0, 0, unix.MOUNT_ATTR_NODEV); err != nil {
			return err
		}
	}
	return nil
}

func setMountAttr(p string, flags uint, set, clear uint64) error {
	attr := unix.MountAttr{Attr_set: set, Attr_clr: clear}
	if err := unix.MountSetattr(unix.AT_FDCWD, p, flags, &attr); err != nil {
		return fmt.Errorf("set mount attributes of %s (set %#x, clear %#x): %w", p, set, clear, err)
	}
	return nil
}

// mountEntry is a line of /proc/self/mountinfo: the device, the folder of its file system that is mounted, and where.
type mountEntry struct{ dev, root, point string }

func readMountinfo() []mountEntry {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []mountEntry
	for _, line := range strings.Split(string(b), "\n") {
		if fields := strings.Fields(line); len(fields) >= 5 {
			out = append(out, mountEntry{dev: fields[2], root: unescapeMountinfo(fields[3]), point: unescapeMountinfo(fields[4])})
		}
	}
	return out
}

// mountPointsBelow lists the mount points of mounts strictly below dir.
func mountPointsBelow(dir string, mounts []mountEntry) []string {
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	var out []string
	for _, m := range mounts {
		if rel, in := pathglob.Within(dir, m.point); in && rel != "" {
			out = append(out, m.point)
		}
	}
	return out
}

// withOtherNames adds to paths the other names, through other mounts of the same file system, of each of them
// (only names that reach the same file).
func withOtherNames(paths []string, mounts []mountEntry) []string {
	out := slices.Clone(paths)
	for _, p := range paths {
		resolved, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(resolved, &st) != nil {
			continue
		}
		// The mount p is on: the deepest mount point above it, the last one mounted there.
		at := -1
		for i, m := range mounts {
			if _, in := pathglob.Within(m.point, resolved); in && (at < 0 || len(m.point) >= len(mounts[at].point)) {
				at = i
			}
		}
		if at < 0 {
			continue
		}
		rel, _ := pathglob.Within(mounts[at].point, resolved)
		inFS := filepath.Join(mounts[at].root, rel)
		for _, m := range mounts {
			rest, in := pathglob.Within(m.root, inFS)
			if m.dev != mounts[at].dev || !in {
				continue
			}
			other := filepath.Join(m.point, rest)
			var ost unix.Stat_t
			if other != resolved && !slices.Contains(out, other) && unix.Stat(other, &ost) == nil && ost.Dev == st.Dev && ost.Ino == st.Ino {
				out = append(out, other)
			}
		}
	}
	return out
}

// unescapeMountinfo undoes the octal escapes (\040 for a space…) of a path in /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// protectPaths makes protected paths read-only and hides secrets and outside unix sockets.
func protectPaths(hs *helperSpec, mounts []mountEntry) error {
	writable := writablePlaces(hs)
	// The same file system mounted a second time (WSL's /mnt/wslg/distro, ostree's /sysroot, a bind mount) shows
	// each path under another name too: defends against reading a secret, or reaching a socket, by that name.
	hs.ReadOnly = withOtherNames(hs.ReadOnly, mounts)
	hs.Hidden = withOtherNames(hs.Hidden, mounts)
	hs.Sockets = withOtherNames(hs.Sockets, mounts)
	// A read-only or hiding mount inside a writable tree can be dodged by renaming its parent away (and putting a
	// copy in its place, or letting the next command's rules miss it at its new path); every folder between a
	// writable place and a protected, hidden or covered path becomes a mount point, which cannot be renamed or
	// removed (EBUSY).
	anc := map[string]bool{}
	for _, p := range slices.Concat(hs.ReadOnly, hs.Hidden, hs.Sockets) {
		for _, w := range writable {
			if rel, in := pathglob.Within(w, p); !in || rel == "" {
				continue
			}
			for a := filepath.Dir(p); ; a = filepath.Dir(a) {
				if rel, in := pathglob.Within(w, a); !in || rel == "" {
					break
				}
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
	hs.PrivatePts = privatePts()
	// Pathname unix sockets of the host (the broker's socket, docker.sock, dbus…) are not covered by Landlock before
	// ABI 9 nor by the network namespace: cover each with /dev/null. Defends against talking to host daemons.
	for _, s := range hs.Sockets {
		fi, err := os.Lstat(s)
		if err != nil || fi.Mode()&fs.ModeSocket == 0 {
			continue // gone, unreachable, or not a socket any more
		}
		if err := hideFile(s); err != nil {
			// Removed since the Lstat (another command's proxy socket, a program's temp socket): the mount fails
			// with ENOENT, or the kernel detaches the cover when the host unlinks it. Nothing is left to reach.
			if _, lerr := os.Lstat(s); errors.Is(err, unix.ENOENT) || errors.Is(lerr, fs.ErrNotExist) {
				continue
			}
			return err
		}
	}
	return nil
}

const shmDir = "/dev/shm"

// privatePts mounts a devpts instance of the sandbox's own on /dev/pts and its ptmx on /dev/ptmx, so that programs
// that need a terminal (script, expect, a test runner's pty) work; it shows only the terminals made inside, never
// the host's (defends against reading or writing other sessions' terminals). Where the kernel refuses it, the
// command has no terminal at all: the host's stay unreachable (nodev) either way.
func privatePts() bool {
	if fi, err := os.Stat(ptsDir); err != nil || !fi.IsDir() {
		return false
	}
	fi, err := os.Lstat(ptmxPath)
	if err != nil {
		return false
	}
	// /dev/ptmx is a device node, or a link to pts/ptmx that reaches the new instance by itself.
	link := fi.Mode()&fs.ModeSymlink != 0
	if target, _ := os.Readlink(ptmxPath); link && target != "pts/ptmx" && target != "/dev/pts/ptmx" {
		return false
	}
	if !link && fi.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	if unix.Mount("devpts", ptsDir, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") != nil {
		return false
	}
	if !link && unix.Mount(filepath.Join(ptsDir, "ptmx"), ptmxPath, "", unix.MS_BIND, "") != nil {
		_ = unix.Unmount(ptsDir, unix.MNT_DETACH)
		return false
	}
	return true
}

const (
	ptsDir   = "/dev/pts"
	ptmxPath = "/dev/ptmx"
)

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
