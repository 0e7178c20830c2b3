// Run: a command from its Spec to its Result through the helper, and its end on cancel, timeout or shutdown.

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
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
	if p := helperProg(); p.err != nil {
		return nil, fmt.Errorf("run %q: %w: %w", s.Command, p.err, ErrUnavailable)
	}
	hs, notices, err := plan(s)
	if err != nil {
		return nil, err
	}
	cover, err := EnsureProtectedDirs(hs.Root, s.EnsureDirs)
	if err != nil {
		return nil, fmt.Errorf("run %q: %w", s.Command, err)
	}
	for _, c := range cover { // made read-only in place of the protected folder it could not hold
		if !slices.Contains(hs.ReadOnly, c) {
			hs.ReadOnly = append(hs.ReadOnly, c)
		}
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
		if errors.Is(err, errHelperEnded) {
			// It said why on its status pipe (a set-up error), or was killed: reported below as what it is.
			h.spec.Close()
			err = nil
		}
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
	if st.ProgramError != "" {
		return res, &ProgramError{Program: st.Program, Why: st.ProgramError, Errno: syscall.Errno(st.ProgramErrno)}
	}
	if st.SetupError != "" {
		return res, fmt.Errorf("run %q: sandbox set-up: %s; run `garuda-exec doctor`: %w",
			s.Command, strings.TrimSpace(st.SetupError), ErrUnavailable)
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

const noProxyNotice = "no network namespace here, so no proxy either: the command has no network"

const noNetNSNotice = "no network namespace here: IP sockets are refused (seccomp) and TCP is denied (Landlock); " +
	"local servers cannot listen"
