// Starting a command's helper: its pipes, its namespaces (or the session network's holder), and the hand-over of its
// spec, OOM score and cgroup.

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

type helper struct {
	pid     int
	signal  func(unix.Signal) error
	wait    func() error // returns once the helper has ended
	exited  func() bool  // whether it has ended (not waited for: a look)
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
	cmd, err := helperCommand("init") // its environment is empty: the broker's (provider keys) never reaches it
	if err != nil {
		closeAll(parentEnds)
		closeAll(childEnds)
		return nil, err
	}
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
	h.exited = func() bool {
		var info unix.Siginfo // WNOWAIT: only a look; wait reaps it
		err := unix.Waitid(unix.P_PID, h.pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		return err != nil || info.Signo != 0
	}
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
	h.pid, h.signal, h.wait, h.exited, h.release = pid, p.signal, p.wait, p.exited, p.release
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
func (h *helper) handOver(hs *helperSpec, cg *commandCgroup) (err error) {
	defer func() {
		if err != nil && h.exited() {
			err = errHelperEnded // what failed was for want of the helper: its status says why
		}
	}()
	// The spec goes first, so that the helper sets up its namespaces while it is being moved into its cgroup (a
	// cgroup v1 move waits for an RCU grace period); the end of the pipe then lets it start the command.
	if err := json.NewEncoder(h.spec).Encode(hs); errors.Is(err, unix.EPIPE) {
		return errHelperEnded // it ended without reading the spec: a set-up error, or it refused (checkToken)
	} else if err != nil {
		return fmt.Errorf("send sandbox spec: %w", err)
	}
	if testBeforeOOMScore != nil {
		testBeforeOOMScore(h)
	}
	if err := h.setOOMScore(); err != nil {
		return err
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

// errHelperEnded is handOver's error when the helper ended before it was handed over: it reports why on its status
// pipe (a set-up error: it does not wait for the end of the spec), or was killed; Run reports that, not this.
var errHelperEnded = errors.New("the sandbox helper ended before its hand-over")

// testBeforeOOMScore, when set, runs in handOver before the OOM score is written (tests of a helper that ends first).
var testBeforeOOMScore func(*helper)

// setOOMScore gives the helper the commands' OOM score: the kernel's OOM killer takes a command's processes before
// anything else (the broker, the editor), which defends against a memory flood taking them down. Written by a root
// broker, it is also the floor the command cannot go below; its /proc is read-only besides.
func (h *helper) setOOMScore() error {
	// A helper that ends early (a set-up error) is reaped at once by a session network's holder, and its pid may
	// then name another process: /proc/<pid> is opened first, then the helper is seen still running, so the file
	// written below is the helper's. Defends against giving an unrelated process the commands' OOM score.
	dir, err := unix.Open(fmt.Sprintf("/proc/%d", h.pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		defer unix.Close(dir)
		if h.exited() {
			return errHelperEnded
		}
		var fd int
		if fd, err = unix.Openat(dir, "oom_score_adj", unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
			_, err = unix.Write(fd, []byte(strconv.Itoa(commandOOMScoreAdj)))
			unix.Close(fd)
		}
	}
	// A helper on its way out has given up its memory before its pidfd says it ended, and its /proc files are then
	// root's: an unprivileged broker's write fails with "permission denied" meanwhile. Give it a moment to end.
	if err != nil && h.exitedWithin(exitSettle) {
		return errHelperEnded
	}
	if err != nil {
		return fmt.Errorf("set oom_score_adj of the sandbox helper: %w", err)
	}
	return nil
}

// exitSettle is how long setOOMScore waits for a helper whose OOM score could not be written to be seen ended.
const exitSettle = 100 * time.Millisecond

// exitedWithin reports whether the helper has ended, or ends within d (looked at every few milliseconds).
func (h *helper) exitedWithin(d time.Duration) bool {
	for end := time.Now().Add(d); !h.exited(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			return false
		}
	}
	return true
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
