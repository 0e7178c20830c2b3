package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The command's process is forked by the sandbox's pid 1 and confines itself between fork and exec, so that a
// command costs one start of the Go runtime (pid 1) instead of two. The child is a copy of a multithreaded Go
// process with a single thread: it may only make raw system calls on values pid 1 prepared (no allocation, no
// stack growth, no scheduler, no signal handler of the runtime), which is what forkSpec holds and what the
// //go:nosplit functions below keep to. The steps and their order are those of a confined exec: working folder,
// RLIMIT_DATA, no_new_privs, Landlock, capabilities, seccomp, descriptors, execve.

// childStep names the step of the child that failed; the child writes it and the errno to the error pipe.
type childStep uint32

const (
	stepChdir childStep = iota + 1
	stepRlimitData
	stepNoNewPrivs
	stepLandlock
	stepCapBound
	stepSecurebits
	stepAmbient
	stepCapset
	stepCapsLeft
	stepSeccomp
	stepCloseFDs
	stepSignals
	stepExec
)

// stepNames says what each step does, for the error that names the one that failed.
var stepNames = [...]string{
	stepChdir:      "enter the working folder",
	stepRlimitData: "set RLIMIT_DATA",
	stepNoNewPrivs: "set no_new_privs",
	stepLandlock:   "landlock: restrict self",
	stepCapBound:   "drop the bounding set of capabilities",
	stepSecurebits: "lock securebits",
	stepAmbient:    "clear ambient capabilities",
	stepCapset:     "clear capability sets",
	stepCapsLeft:   "capabilities still held after dropping",
	stepSeccomp:    "seccomp: install filter",
	stepCloseFDs:   "mark descriptors close-on-exec",
	stepSignals:    "reset signal handlers",
	stepExec:       "exec",
}

func (s childStep) String() string {
	if int(s) < len(stepNames) && stepNames[s] != "" {
		return stepNames[s]
	}
	return fmt.Sprintf("step %d", uint32(s))
}

// nsig is the number of signals of the rt_sigaction calls (1 to 64).
const nsig = 64

// forkSpec is everything the child needs, prepared before the fork. The child writes only into its own copy of it
// (capGot, oldMask's use), never a pointer.
type forkSpec struct {
	path, dir  *byte
	argv, envv []*byte // nil-terminated, from syscall.SlicePtrFromStrings
	argvp      **byte  // &argv[0], &envv[0]: taken before the fork, so that the child indexes nothing
	envvp      **byte
	errFD      uintptr // write end of the error pipe (close-on-exec: EOF tells pid 1 the exec worked)
	dataLimit  unix.Rlimit
	setData    bool
	confine    bool
	rulesetFD  int // Landlock ruleset; -1: none
	lastCap    uintptr
	filter     *unix.SockFprog // nil: no seccomp filter
	noExec     bool            // the probe: exit 0 after confining instead of exec
	ignored    [nsig + 1]bool  // signals pid 1 ignores: they stay ignored (as exec keeps them)
	allSigs    uint64
	oldMask    uint64
	dfl        [4]uintptr // a zero struct sigaction: SIG_DFL, no flags, empty mask
	capHdr     unix.CapUserHeader
	capZero    [2]unix.CapUserData
	capGot     [2]unix.CapUserData
	rec        [2]uint32
}

// Securebits (linux/securebits.h); x/sys does not export them.
const (
	secbitNoroot                 = 1 << 0
	secbitNorootLocked           = 1 << 1
	secbitNoSetuidFixup          = 1 << 2
	secbitNoSetuidFixupLocked    = 1 << 3
	secbitKeepCapsLocked         = 1 << 5
	secbitNoCapAmbientRaise      = 1 << 6
	secbitNoCapAmbientRaiseLocke = 1 << 7
	// lockedSecurebits make uid 0 gain nothing at execve, for good.
	lockedSecurebits = secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocke
)

// prepareFork builds the child's forkSpec for hs: argv, environment, the Landlock ruleset and the seccomp filter.
// The caller closes the ruleset (closeFork) once the child is forked.
func prepareFork(hs *helperSpec, argv []string, noExec bool) (*forkSpec, error) {
	f := &forkSpec{rulesetFD: -1, noExec: noExec, confine: !hs.Unsandboxed, allSigs: ^uint64(0)}
	f.capHdr.Version = unix.LINUX_CAPABILITY_VERSION_3
	var err error
	if !noExec {
		if f.path, err = syscall.BytePtrFromString(argv[0]); err != nil {
			return nil, fmt.Errorf("exec %s: %w", argv[0], err)
		}
		if f.argv, err = syscall.SlicePtrFromStrings(append([]string{shellName(argv[0])}, argv[1:]...)); err != nil {
			return nil, fmt.Errorf("command: %w", err)
		}
		if f.envv, err = syscall.SlicePtrFromStrings(hs.Env); err != nil {
			return nil, fmt.Errorf("environment: %w", err)
		}
		if f.dir, err = syscall.BytePtrFromString(hs.Dir); err != nil {
			return nil, fmt.Errorf("enter working folder %s: %w", hs.Dir, err)
		}
		f.argvp, f.envvp = &f.argv[0], &f.envv[0]
	}
	if hs.DataLimit > 0 {
		// Set in the child only: the command is bound, never pid 1's own Go runtime.
		f.setData, f.dataLimit = true, unix.Rlimit{Cur: hs.DataLimit, Max: hs.DataLimit}
	}
	for sig := 1; sig <= nsig; sig++ {
		var old [4]uintptr
		_, _, e := syscall.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0)
		f.ignored[sig] = e == 0 && old[0] == 1 // SIG_IGN
	}
	if !f.confine {
		return f, nil
	}
	f.lastCap = uintptr(lastCap())
	if hs.Landlock {
		if f.rulesetFD, err = landlockRuleset(hs); err != nil {
			return nil, err
		}
	}
	if hs.Seccomp {
		filter, err := buildSeccomp(!hs.NetNS)
		if err != nil {
			closeFork(f)
			return nil, err
		}
		f.filter = &unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	}
	return f, nil
}

// closeFork releases what prepareFork opened.
func closeFork(f *forkSpec) {
	if f.rulesetFD >= 0 {
		unix.Close(f.rulesetFD)
		f.rulesetFD = -1
	}
}

func shellName(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return path
}

// childError is a step of the child that failed, with the kernel's answer.
type childError struct {
	step  childStep
	errno syscall.Errno
}

func (e *childError) Error() string {
	if e.step == stepCapsLeft {
		return e.step.String()
	}
	return e.step.String() + ": " + e.errno.Error()
}

func (e *childError) Unwrap() error { return e.errno }

// forkCommand forks the child of f and returns its pid once it has exec'd (or, with f.noExec, once it has
// confined itself and is exiting). A step that failed in the child is returned as a *childError.
func forkCommand(f *forkSpec) (int, error) {
	errR, errW, err := os.Pipe() // close-on-exec, like every descriptor Go opens
	if err != nil {
		return 0, fmt.Errorf("error pipe: %w", err)
	}
	defer errR.Close()
	f.errFD = errW.Fd()
	runtime.LockOSThread()
	pid, errno := forkChild(f)
	runtime.UnlockOSThread()
	runtime.KeepAlive(f)
	errW.Close()
	if errno != 0 {
		return 0, fmt.Errorf("fork the command: %w", errno)
	}
	var rec [8]byte
	if n, _ := readFull(errR, rec[:]); n == len(rec) {
		step := childStep(binary.NativeEndian.Uint32(rec[:4]))
		return int(pid), &childError{step: step, errno: syscall.Errno(binary.NativeEndian.Uint32(rec[4:]))}
	}
	return int(pid), nil
}

func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := f.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// forkChild forks the calling thread with every signal blocked (a handler of the Go runtime must never run in the
// child); the parent gets the child's pid back with its signal mask restored, the child never returns.
//
//go:norace
//go:nosplit
func forkChild(f *forkSpec) (uintptr, syscall.Errno) {
	syscall.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&f.allSigs)),
		uintptr(unsafe.Pointer(&f.oldMask)), 8, 0, 0)
	pid, _, errno := syscall.RawSyscall6(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 || pid != 0 {
		syscall.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&f.oldMask)), 0, 8, 0, 0)
		return pid, errno
	}
	childRun(f)
	return 0, 0 // not reached: childRun exits
}

// childRun is the child between fork and exec. Each step says what it defends against.
//
//go:norace
//go:nosplit
func childRun(f *forkSpec) {
	if f.dir != nil {
		if e := raw(unix.SYS_CHDIR, uintptr(unsafe.Pointer(f.dir)), 0, 0); e != 0 {
			childFail(f, stepChdir, e)
		}
	}
	if f.setData {
		// The memory limit where no memory cgroup exists: defends the machine against one process's memory flood.
		if e := raw(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_DATA, uintptr(unsafe.Pointer(&f.dataLimit))); e != 0 {
			childFail(f, stepRlimitData, e)
		}
	}
	if f.confine {
		// no_new_privs defends against regaining privileges through setuid binaries or file capabilities.
		if e := raw(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); e != 0 {
			childFail(f, stepNoNewPrivs, e)
		}
		// Landlock defends against writes outside the writable places and IPC with processes outside.
		if f.rulesetFD >= 0 {
			if e := raw(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(f.rulesetFD), 0, 0); e != 0 {
				childFail(f, stepLandlock, e)
			}
		}
		childDropCaps(f)
		// The seccomp filter defends against the known bypasses of the rest (io_uring, ptrace, new user namespaces…).
		if f.filter != nil {
			if e := raw(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(f.filter))); e != 0 {
				childFail(f, stepSeccomp, e)
			}
		}
	}
	if f.noExec {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	// No descriptor but 0, 1, 2 reaches the command: defends against leaking pid 1's pipes, sockets and the
	// Landlock ruleset.
	if e := raw(unix.SYS_CLOSE_RANGE, 3, ^uintptr(0), unix.CLOSE_RANGE_CLOEXEC); e != 0 {
		childFail(f, stepCloseFDs, e)
	}
	// Handlers of the runtime are reset before the signals are unblocked; ignored signals stay ignored, as exec
	// would keep them.
	for sig := uintptr(1); sig <= nsig; sig++ {
		if sig == uintptr(unix.SIGKILL) || sig == uintptr(unix.SIGSTOP) || f.ignored[sig] {
			continue
		}
		if e := raw4(unix.SYS_RT_SIGACTION, sig, uintptr(unsafe.Pointer(&f.dfl)), 0, 8); e != 0 && e != unix.EINVAL {
			childFail(f, stepSignals, e)
		}
	}
	raw4(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&f.oldMask)), 0, 8)
	e := raw(unix.SYS_EXECVE, uintptr(unsafe.Pointer(f.path)), uintptr(unsafe.Pointer(f.argvp)), uintptr(unsafe.Pointer(f.envvp)))
	childFail(f, stepExec, e)
}

// childDropCaps clears the bounding, ambient, inheritable, permitted and effective sets and locks the securebits
// so that uid 0 gains nothing at execve, then checks that nothing is left. This defends the host against a root
// command changing the clock or hostname, loading modules, mounting, or bypassing file permissions.
//
//go:norace
//go:nosplit
func childDropCaps(f *forkSpec) {
	for c := uintptr(0); c <= f.lastCap; c++ {
		if e := raw(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0); e != 0 && e != unix.EINVAL {
			childFail(f, stepCapBound, e)
		}
	}
	if e := raw(unix.SYS_PRCTL, unix.PR_SET_SECUREBITS, lockedSecurebits, 0); e != 0 {
		childFail(f, stepSecurebits, e)
	}
	if e := raw4(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0); e != 0 && e != unix.EINVAL {
		childFail(f, stepAmbient, e)
	}
	if e := raw(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&f.capHdr)), uintptr(unsafe.Pointer(&f.capZero[0])), 0); e != 0 {
		childFail(f, stepCapset, e)
	}
	if e := raw(unix.SYS_CAPGET, uintptr(unsafe.Pointer(&f.capHdr)), uintptr(unsafe.Pointer(&f.capGot[0])), 0); e != 0 {
		childFail(f, stepCapsLeft, e)
	}
	for i := 0; i < 2; i++ {
		if f.capGot[i].Effective|f.capGot[i].Permitted|f.capGot[i].Inheritable != 0 {
			childFail(f, stepCapsLeft, unix.EPERM)
		}
	}
	for c := uintptr(0); c <= f.lastCap; c++ {
		if r, _, e := syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAPBSET_READ, c, 0, 0, 0, 0); e == 0 && r != 0 {
			childFail(f, stepCapsLeft, unix.EPERM)
		}
	}
}

// childFail reports the failed step to pid 1 and exits.
//
//go:norace
//go:nosplit
func childFail(f *forkSpec, step childStep, e syscall.Errno) {
	f.rec[0], f.rec[1] = uint32(step), uint32(e)
	raw(unix.SYS_WRITE, f.errFD, uintptr(unsafe.Pointer(&f.rec[0])), 8)
	for {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, 126, 0, 0)
	}
}

//go:norace
//go:nosplit
func raw(trap, a1, a2, a3 uintptr) syscall.Errno {
	_, _, e := syscall.RawSyscall6(trap, a1, a2, a3, 0, 0, 0)
	return e
}

//go:norace
//go:nosplit
func raw4(trap, a1, a2, a3, a4 uintptr) syscall.Errno {
	_, _, e := syscall.RawSyscall6(trap, a1, a2, a3, a4, 0, 0)
	return e
}
