package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Run runs s.Command and waits for it and every process it started to end. Cancelling ctx sends SIGTERM to every
// process of the command, then SIGKILL to the whole pid namespace after TermGrace; with context.Cause(ctx) ==
// ErrShutdown the kill is immediate. A missing protection yields ErrUnavailable unless s.AllowWeaker.
func Run(ctx context.Context, s Spec) (*Result, error) {
	start := time.Now()
	hs, notices, err := plan(s)
	if err != nil {
		return nil, err
	}
	if err := EnsureProtectedDirs(hs.Root, s.EnsureDirs); err != nil {
		return nil, fmt.Errorf("run %q: %w", s.Command, err)
	}
	sink, err := newOutputSink(s.OutputFile, s.OnOutput)
	if err != nil {
		return nil, err
	}
	if !hs.NetNS && !s.Unsandboxed {
		notices = append(notices, noNetNSNotice)
	}
	if s.Proxy != "" && !s.Unsandboxed && !hs.NetNS {
		notices = append(notices, noProxyNotice)
	}
	var h *helper
	if s.Network != nil && hs.NetNS && !s.Unsandboxed {
		hs.SharedNet = true
		if h, err = spawnHelper(hs, s.Stdin, s.Stdout, s.Network); err != nil {
			// The session's holder is gone (killed from outside): this command gets a namespace of its own.
			hs.SharedNet = false
			notices = append(notices, "the session's network namespace is gone ("+err.Error()+"): this command has its own")
		}
	}
	if h == nil {
		h, err = spawnHelper(hs, s.Stdin, s.Stdout, nil)
	}
	if err != nil && hs.NetNS && !s.Unsandboxed {
		// The kernel refused a network namespace: fall back to Landlock TCP rules and AF_UNIX-only sockets.
		hs.NetNS = false
		if h, err = spawnHelper(hs, s.Stdin, s.Stdout, nil); err == nil {
			notices = append(notices, noNetNSNotice)
		}
	}
	if err != nil {
		sink.finish("")
		return nil, fmt.Errorf("run %q: %w; run `garuda-exec doctor`: %w", s.Command, err, ErrUnavailable)
	}
	// While the helper starts, the broker lists the sockets to cover and makes the command's cgroup; the helper
	// waits for the spec, and starts the command only once it is in that cgroup.
	if !s.Unsandboxed {
		hs.Sockets = coveredSockets(hs.ProxySocket)
	}
	lim := s.Limits.withDefaults()
	cg, limNotices, err := commandLimits(s, hs, lim)
	notices = append(notices, limNotices...)
	if cg != nil && !cg.v2 {
		hs.CgroupTasks = cg.tasksFiles() // pid 1 joins them itself (cgroup v1)
	}
	if err == nil {
		err = h.handOver(hs, cg)
	}
	if err != nil {
		h.abandon()
		if cg != nil {
			cg.remove()
		}
		sink.finish("")
		return nil, err
	}
	if cg != nil {
		defer cg.remove()
	}

	outDone := make(chan struct{})
	go func() { sink.copyFrom(h.out); h.out.Close(); close(outDone) }()
	stdoutDone := make(chan struct{})
	go func() {
		if h.stdout != nil {
			_, _ = io.Copy(s.Stdout, h.stdout)
			h.stdout.Close()
		}
		close(stdoutDone)
	}()
	stDone := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(h.status); h.status.Close(); stDone <- b }()
	waitDone := make(chan error, 1)
	go func() { waitDone <- h.wait() }()
	defer h.release()

	tctx, cancel := context.WithTimeout(ctx, effectiveTimeout(s.Timeout))
	if s.UntilCancelled {
		tctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	res := &Result{Notices: notices}
	var waitErr error
	select {
	case waitErr = <-waitDone:
	case <-tctx.Done():
		res.Cancelled = ctx.Err() != nil
		res.TimedOut = !res.Cancelled
		waitErr = stop(h, waitDone, shutdownRequested(ctx))
	}
	if h.stdin != nil {
		h.stdin.Close() // ends the copy of Stdin at its next read or write
	}
	<-outDone
	<-stdoutDone
	stBytes := <-stDone
	res.Duration = time.Since(start)
	if s.OutputFile != "" {
		res.OutputPath = s.OutputFile
	}
	out, truncated, notice := sink.finish(s.OutputFile)
	res.Output, res.Truncated = out, truncated
	if notice != "" {
		res.Notices = append(res.Notices, notice)
	}
	var st helperStatus
	if len(stBytes) == 0 || json.Unmarshal(stBytes, &st) != nil {
		// The helper died before reporting (killed): the whole namespace died with it.
		res.Signaled, res.ExitCode = true, 128+int(unix.SIGKILL)
		if cg != nil {
			res.LimitsHit = cg.hit()
		}
		if ee := (*exec.ExitError)(nil); errors.As(waitErr, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				res.ExitCode = 128 + int(ws.Signal())
			}
		}
		return res, nil
	}
	if st.SetupError != "" {
		return res, fmt.Errorf("run %q: sandbox set-up: %s; run `garuda-exec doctor`: %w", s.Command, strings.TrimSpace(st.SetupError), ErrUnavailable)
	}
	res.ExitCode, res.Signaled = st.Exit, st.Signal != 0
	if cg != nil {
		res.LimitsHit = cg.hit()
	}
	if hs.DataLimit > 0 && res.ExitCode != 0 && allocationFailed(res.Output) {
		res.LimitsHit = append(res.LimitsHit, fmt.Sprintf("memory limit reached (%d MiB for each process, RLIMIT_DATA; "+
			"limits.memory_mb): the output shows a failed allocation", lim.MemoryBytes>>20))
	}
	return res, nil
}

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

// coveredSockets lists the host's pathname unix sockets the command must not reach: all but the proxy's, which is
// the one host socket pid 1 reaches (the command may too: it is the same proxy).
func coveredSockets(proxy string) []string {
	return slices.DeleteFunc(hostUnixSockets(), func(p string) bool { return proxy != "" && filepath.Clean(p) == proxy })
}

// testLandlockABI, when >= 0, stands in for the kernel's Landlock ABI in the broker's checks (tests of failing closed).
var testLandlockABI = -1

// testNoNetNS makes tests exercise the fallback for kernels that refuse a network namespace.
var testNoNetNS bool

const noProxyNotice = "no network namespace here, so no proxy either: the command has no network"

const noNetNSNotice = "no network namespace here: IP sockets are refused (seccomp) and TCP is denied (Landlock); local servers cannot listen"

// stop ends the command: SIGTERM to the helper, which forwards it to every process of the namespace, then SIGKILL
// of the helper after TermGrace (or at once on shutdown); killing pid 1 makes the kernel kill the whole namespace.
func stop(h *helper, waitDone <-chan error, now bool) error {
	if now {
		_ = h.signal(unix.SIGKILL)
		return <-waitDone
	}
	_ = h.signal(unix.SIGTERM)
	grace := time.NewTimer(TermGrace)
	defer grace.Stop()
	select {
	case err := <-waitDone:
		return err
	case <-grace.C:
		_ = h.signal(unix.SIGKILL)
		return <-waitDone
	}
}

// plan checks s and what the kernel offers, and builds what the helper needs.
func plan(s Spec) (*helperSpec, []string, error) {
	hs := &helperSpec{
		Command: s.Command, Dir: s.Dir, Root: s.Root, ReadOnlyRoot: s.ReadOnlyRoot, Env: s.Env,
		Unsandboxed: s.Unsandboxed, NetNS: !s.Unsandboxed && !testNoNetNS,
	}
	if hs.Env == nil {
		hs.Env = []string{}
	}
	clean := func(what string, ps []string) ([]string, error) {
		var out []string
		for _, p := range ps {
			if !filepath.IsAbs(p) {
				return nil, fmt.Errorf("sandbox %s path %q is not absolute", what, p)
			}
			out = append(out, filepath.Clean(p))
		}
		return out, nil
	}
	var err error
	if hs.Root == "" && s.Unsandboxed {
		hs.Root = "/"
	}
	if !filepath.IsAbs(hs.Root) {
		return nil, nil, fmt.Errorf("sandbox root %q is not absolute", s.Root)
	}
	hs.Root = filepath.Clean(hs.Root)
	if hs.Dir == "" {
		hs.Dir = hs.Root
	}
	if !filepath.IsAbs(hs.Dir) {
		return nil, nil, fmt.Errorf("sandbox working folder %q is not absolute", s.Dir)
	}
	if hs.Writable, err = clean("writable", s.Writable); err != nil {
		return nil, nil, err
	}
	if hs.ReadOnly, err = clean("read-only", append(append([]string{}, s.ReadOnly...), s.EnsureDirs...)); err != nil {
		return nil, nil, err
	}
	if hs.Hidden, err = clean("hidden", s.Hidden); err != nil {
		return nil, nil, err
	}
	if !s.Unsandboxed {
		hs.Hidden = append(hs.Hidden, systemSecrets()...)
	}
	if s.Unsandboxed {
		return hs, nil, nil
	}
	var notices, missing []string
	abi := landlockABI()
	if testLandlockABI >= 0 {
		abi = testLandlockABI
	}
	switch {
	case abi >= minLandlockABI:
		hs.Landlock = true
	case abi > 0:
		hs.Landlock = true
		missing = append(missing, fmt.Sprintf("Landlock ABI %d < %d (no scoping of abstract sockets and signals)", abi, minLandlockABI))
	default:
		missing = append(missing, "Landlock (not in this kernel or disabled at boot)")
	}
	hs.Seccomp = seccompArchSupported
	if !hs.Seccomp {
		missing = append(missing, "seccomp filter (no syscall table for this architecture)")
	}
	if len(missing) > 0 {
		if !s.AllowWeaker {
			return nil, nil, fmt.Errorf("run %q: missing %s; run `garuda-exec doctor`: %w", s.Command, strings.Join(missing, ", "), ErrUnavailable)
		}
		for _, m := range missing {
			notices = append(notices, "weaker sandbox (team policy allows it): no "+m)
		}
	}
	if s.Proxy != "" {
		hs.ProxySocket = filepath.Clean(s.Proxy)
	}
	return hs, notices, nil
}

// hostUnixSockets lists the pathname unix sockets bound in every network namespace this user can see: a socket of
// another namespace is reachable by its path all the same. A name bound relative to the binder's working folder is
// looked for in the working folder of each process holding the socket. Defends against a command talking to host
// daemons through sockets the broker's own namespace does not list.
func hostUnixSockets() []string {
	seen := map[string]bool{}
	var out []string
	relative := map[string]string{} // socket inode -> relative name
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, table := range unixSocketTables() {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 8 || fields[0] == "Num" || strings.HasPrefix(fields[7], "@") {
				continue
			}
			if name := fields[7]; strings.HasPrefix(name, "/") {
				add(name)
			} else {
				relative[fields[6]] = name
			}
		}
		f.Close()
	}
	if len(relative) > 0 {
		for _, p := range relativeSocketPaths(relative) {
			add(p)
		}
	}
	return out
}

// unixSocketTables names /proc/<pid>/net/unix of one process in each network namespace visible in /proc. It runs
// for every command, over every process of the machine: one directory read and one readlinkat each, nothing more.
func unixSocketTables() []string {
	tables := []string{"/proc/self/net/unix"}
	proc, err := os.Open("/proc")
	if err != nil {
		return tables
	}
	defer proc.Close()
	names, _ := proc.Readdirnames(-1)
	var buf [64]byte
	link := func(path string) string {
		n, err := unix.Readlinkat(int(proc.Fd()), path, buf[:])
		if err != nil {
			return ""
		}
		return string(buf[:n])
	}
	seen := map[string]bool{link("self/ns/net"): true}
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		ns := link(name + "/ns/net")
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		tables = append(tables, "/proc/"+name+"/net/unix")
	}
	return tables
}

// relativeSocketPaths finds, for sockets bound by a relative name (keyed by socket inode), the processes holding
// them and returns each name joined to the holder's working folder where a socket is found there.
func relativeSocketPaths(names map[string]string) []string {
	var out []string
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		l, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(l, "socket:[") {
			continue
		}
		name, ok := names[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")]
		if !ok {
			continue
		}
		cwd, err := os.Readlink(filepath.Join(fd, "..", "..", "cwd"))
		if err != nil {
			continue
		}
		p := filepath.Join(cwd, name)
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			out = append(out, p)
		}
	}
	return out
}

type helper struct {
	pid     int
	signal  func(unix.Signal) error
	wait    func() error // returns once the helper has ended
	release func()       // after wait: no signal goes out after it
	out     *os.File
	status  *os.File
	spec    *os.File // the write end of the spec pipe, closed by handOver
	stdin   *os.File // the write end of the command's stdin, when Spec.Stdin is set
	stdout  *os.File // the read end of the command's own stdout, when Spec.Stdout is set
	// Spec.Stdin, copied into stdin once the helper is handed over.
	stdinSrc   io.Reader
	parentEnds []*os.File
}

// spawnHelper starts the init stage in new namespaces, or through net's holder in its network namespace; it waits
// for handOver. With stdin or stdout set, the command gets a pipe of its own for each (copied by Run); otherwise
// /dev/null and the output pipe.
func spawnHelper(hs *helperSpec, stdin io.Reader, stdout io.Writer, net *Network) (*helper, error) {
	var parentEnds, childEnds []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	pipe := func(what string) (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err != nil {
			closeAll(parentEnds)
			closeAll(childEnds)
			return nil, nil, fmt.Errorf("%s pipe: %w", what, err)
		}
		return r, w, nil
	}
	outR, outW, err := pipe("output")
	if err != nil {
		return nil, err
	}
	parentEnds, childEnds = append(parentEnds, outR), append(childEnds, outW)
	specR, specW, err := pipe("spec")
	if err != nil {
		return nil, err
	}
	parentEnds, childEnds = append(parentEnds, specW), append(childEnds, specR)
	stR, stW, err := pipe("status")
	if err != nil {
		return nil, err
	}
	parentEnds, childEnds = append(parentEnds, stR), append(childEnds, stW)
	h := &helper{out: outR, status: stR, spec: specW, stdinSrc: stdin}
	cmd := exec.Command("/proc/self/exe", HelperArg, "init")
	cmd.Args[0] = "garuda-sandbox"
	cmd.Env = helperEnv // the broker's environment (provider keys) never reaches the helper
	cmd.Stdout, cmd.Stderr = outW, outW
	if stdin != nil {
		inR, inW, err := pipe("stdin")
		if err != nil {
			return nil, err
		}
		parentEnds, childEnds = append(parentEnds, inW), append(childEnds, inR)
		cmd.Stdin, h.stdin = inR, inW
	}
	if stdout != nil {
		soR, soW, err := pipe("stdout")
		if err != nil {
			return nil, err
		}
		parentEnds, childEnds = append(parentEnds, soR), append(childEnds, soW)
		cmd.Stdout, h.stdout = soW, soR
	}
	h.parentEnds = parentEnds
	if net != nil {
		if err := h.startIn(net, cmd, childEnds, specR, stW); err != nil {
			return nil, err
		}
		return h, nil
	}
	cmd.ExtraFiles = []*os.File{specR, stW}
	cmd.SysProcAttr = sysProcAttr(hs)
	err = cmd.Start()
	closeAll(childEnds)
	if err != nil {
		closeAll(parentEnds)
		return nil, fmt.Errorf("start sandbox helper (namespaces %s): %w", nsNames(cmd.SysProcAttr.Cloneflags), err)
	}
	h.pid = cmd.Process.Pid
	h.signal = func(sig unix.Signal) error { return cmd.Process.Signal(sig) }
	h.wait = cmd.Wait
	h.release = func() {}
	return h, nil
}

// startIn has net's holder start the helper, with the descriptors cmd would have given it.
func (h *helper) startIn(net *Network, cmd *exec.Cmd, childEnds []*os.File, specR, stW *os.File) error {
	defer func() {
		for _, f := range childEnds {
			f.Close()
		}
	}()
	in, _ := cmd.Stdin.(*os.File)
	if in == nil {
		var err error
		if in, err = os.Open(os.DevNull); err != nil {
			return h.fail(fmt.Errorf("open %s: %w", os.DevNull, err))
		}
		defer in.Close()
	}
	pid, pidfd, err := net.spawn("init", []*os.File{in, cmd.Stdout.(*os.File), cmd.Stderr.(*os.File), specR, stW})
	if err != nil {
		return h.fail(err)
	}
	p := &pidfdProc{fd: pidfd}
	h.pid, h.signal, h.wait, h.release = pid, p.signal, p.wait, p.release
	return nil
}

// fail closes the broker's ends of a helper that could not start.
func (h *helper) fail(err error) error {
	for _, f := range h.parentEnds {
		f.Close()
	}
	return err
}

// handOver sends the helper its spec, gives it the commands' OOM score, puts it in cg (cgroup v2; in cgroup v1 it
// joins its groups itself: CgroupTasks), and lets it start the command.
func (h *helper) handOver(hs *helperSpec, cg *commandCgroup) error {
	// The spec goes first, so that the helper sets up its namespaces while it is being moved into its cgroup (a
	// cgroup v1 move waits for an RCU grace period); the end of the pipe then lets it start the command.
	if err := json.NewEncoder(h.spec).Encode(hs); err != nil {
		return fmt.Errorf("send sandbox spec: %w", err)
	}
	// The kernel's OOM killer takes a command's processes before anything else (the broker, the editor): defends
	// against a memory flood taking them down. Written by a root broker, it is also the floor the command cannot
	// go below; its /proc is read-only besides.
	adj := fmt.Sprintf("/proc/%d/oom_score_adj", h.pid)
	if err := os.WriteFile(adj, []byte(strconv.Itoa(commandOOMScoreAdj)), 0o644); err != nil {
		return fmt.Errorf("set oom_score_adj of the sandbox helper: %w", err)
	}
	if cg != nil && cg.v2 {
		if err := cg.add(h.pid); err != nil {
			return err
		}
	}
	h.spec.Close()
	if h.stdinSrc != nil {
		go func() { _, _ = io.Copy(h.stdin, h.stdinSrc); h.stdin.Close() }() // ends at stdin's EOF or when Run closes h.stdin
	}
	return nil
}

// abandon kills a helper that was never handed over, and closes its pipes.
func (h *helper) abandon() {
	_ = h.signal(unix.SIGKILL)
	_ = h.wait()
	h.release()
	for _, f := range h.parentEnds {
		f.Close()
	}
}

// sysProcAttr gives the helper its namespaces. As root the helper stays in the host user namespace (so it can use
// the pids cgroup and mount freely) and the command drops every capability; otherwise a user namespace maps the
// caller to root inside, which gives the helper the rights to mount and makes RLIMIT_NPROC count only the command.
func sysProcAttr(hs *helperSpec) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{
		Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWNS,
		Pdeathsig:  unix.SIGKILL, // the command dies with the broker
		Setsid:     true,         // no controlling terminal
	}
	if hs.NetNS {
		a.Cloneflags |= unix.CLONE_NEWNET
	}
	if os.Geteuid() != 0 {
		a.Cloneflags |= unix.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	return a
}

func nsNames(flags uintptr) string {
	var n []string
	for _, f := range []struct {
		bit  uintptr
		name string
	}{{unix.CLONE_NEWUSER, "user"}, {unix.CLONE_NEWPID, "pid"}, {unix.CLONE_NEWNS, "mount"}, {unix.CLONE_NEWNET, "network"}} {
		if flags&f.bit != 0 {
			n = append(n, f.name)
		}
	}
	return strings.Join(n, "+")
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
