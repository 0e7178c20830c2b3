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
	p, err := Start(path, theirs, os.Args[1] == "run")
	theirs.Close()
	if err != nil {
		mine.Close()
		return
	}
	early = &Early{Path: path, Proc: p, Conn: mine, OwnGroup: os.Args[1] == "run"}
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
// Ctrl-C then reaches only the front end, which cancels the turn).
func Start(path string, sock *os.File, ownGroup bool) (*os.Process, error) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	return os.StartProcess(path, []string{path, "child"}, &os.ProcAttr{
		Env:   BrokerEnv(os.Environ()),
		Files: []*os.File{devnull, os.Stderr, os.Stderr, sock},
		// The broker also learns of the front end's death by EOF on its socket; this is a second signal.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: ownGroup},
	})
}
