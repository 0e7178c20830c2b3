//go:build linux

package spawn

import (
	"os"
	"syscall"
)

// init starts the broker of `garuda acp` (not `acp setup`) and `garuda run` before the front end's other packages
// initialise, when brokerconn would start this one: no --broker or GARUDA_BROKER, no --help, an absolute GARUDA_HOME
// or none and an absolute $HOME, garuda-exec beside the executable. Anything else is left to brokerconn, which says
// what is wrong. A broker the front end turns out not to need (a usage error) ends with it: EOF on its socket, and the
// parent-death signal.
func init() {
	if len(os.Args) < 2 || os.Args[1] != "run" && os.Args[1] != "acp" || os.Getenv("GARUDA_BROKER") != "" {
		return
	}
	if os.Args[1] == "acp" && len(os.Args) > 2 && os.Args[2] == "setup" {
		return
	}
	for _, a := range os.Args[2:] {
		if a == "--" {
			break
		}
		name := a
		for hasPrefix(name, "-") {
			name = name[1:]
		}
		if name = before(name, '='); hasPrefix(a, "-") && (name == "broker" || name == "help" || name == "h") {
			return
		}
	}
	if h := os.Getenv("GARUDA_HOME"); h != "" && !hasPrefix(h, "/") || h == "" && !hasPrefix(os.Getenv("HOME"), "/") {
		return
	}
	path, ok := Beside()
	if !ok {
		return
	}
	mine, theirs, err := Socketpair()
	if err != nil {
		return
	}
	pid, err := Start(path, theirs, os.Args[1] == "run")
	theirs.Close()
	if err != nil {
		mine.Close()
		return
	}
	early = &Early{Path: path, Pid: pid, Conn: mine, OwnGroup: os.Args[1] == "run"}
}

// Socketpair returns the two ends of a new unix socketpair, both close-on-exec.
func Socketpair() (mine, theirs *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "broker"), os.NewFile(uintptr(fds[1]), "frontend"), nil
}

// Start runs path as the broker (`garuda-exec child`) with sock as its fd 3, /dev/null as its standard input and
// the front end's standard error as its standard output and error (never the protocol stream), in the front end's
// environment less the provider keys; ownGroup puts it in a process group of its own (garuda run: a terminal's
// Ctrl-C then reaches only the front end, which cancels the turn). It returns the broker's pid, for Process: it
// starts it as syscall does, not os, whose first start of a process checks that pidfds work by forking and waiting
// for a child of its own first (about 0.1 ms more before the broker's start, on the way to garuda run's first answer).
func Start(path string, sock *os.File, ownGroup bool) (pid int, err error) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer devnull.Close()
	pid, err = syscall.ForkExec(path, []string{path, "child"}, &syscall.ProcAttr{
		Env:   BrokerEnv(os.Environ()),
		Files: []uintptr{devnull.Fd(), os.Stderr.Fd(), os.Stderr.Fd(), sock.Fd()},
		// The broker also learns of the front end's death by EOF on its socket; this is a second signal.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: ownGroup},
	})
	if err != nil {
		return 0, &os.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	return pid, nil
}

// Process is the broker Start started, as an os.Process (with its pidfd where the kernel has them). Its pid cannot
// have gone to another process: the broker is this process's child, and stays a zombie until it is waited for.
func Process(pid int) *os.Process {
	p, _ := os.FindProcess(pid) // on Unix it never fails
	return p
}
