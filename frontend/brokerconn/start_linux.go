package brokerconn

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// start runs garuda-exec with one end of a socketpair as its fd 3.
func (b *Broker) start(o Options) (net.Conn, error) {
	path := o.Exec
	if path == "" {
		p, err := Find()
		if err != nil {
			return nil, err
		}
		path = p
	} else if !isExecutable(path) {
		return nil, fmt.Errorf("%s is missing or not executable; reinstall garuda (make install)", path)
	}
	b.Path = path
	// The broker refuses a relative GARUDA_HOME and exits; said here, the user reads why instead of a reset socket.
	if h := os.Getenv("GARUDA_HOME"); h != "" && !filepath.IsAbs(h) {
		return nil, fmt.Errorf("GARUDA_HOME=%s must be an absolute path (it is where Garuda keeps its settings and keys)", h)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	mine := os.NewFile(uintptr(fds[0]), "broker")
	theirs := os.NewFile(uintptr(fds[1]), "frontend")
	defer theirs.Close()
	cmd := exec.Command(path, "child")
	cmd.Env = brokerEnv(os.Environ())
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stdin = nil
	cmd.Stdout = o.Stderr // never the protocol stream
	cmd.Stderr = o.Stderr
	// The broker also learns of the front end's death by EOF on its socket; this is a second signal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: o.OwnGroup}
	if err := cmd.Start(); err != nil {
		mine.Close()
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	b.cmd = cmd
	go func() {
		err := cmd.Wait()
		if err == nil {
			err = errors.New("it exited")
		}
		b.gone(fmt.Errorf("the broker (%s) exited unexpectedly: %v", filepath.Base(path), err))
		close(b.waited)
	}()
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		cmd.Process.Kill()
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	return c, nil
}
